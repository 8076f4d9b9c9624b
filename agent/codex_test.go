package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestCodexArgv(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		prompt  string
		session string
		want    []string
	}{
		{"defaults", Config{Kind: Codex}, "fix it", "",
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "fix it"}},
		{"fork a session", Config{Kind: Codex, Model: "gpt-5"}, "fix it", "th-1",
			[]string{"codex", "exec", "--json", "--model", "gpt-5", "--sandbox", "workspace-write", "--skip-git-repo-check",
				"fork", "th-1", "fix it"}},
		{"args choose the sandbox", Config{Kind: Codex, Args: []string{"--sandbox", "read-only", "--skip-git-repo-check"}}, "fix it", "",
			[]string{"codex", "exec", "--json", "--sandbox", "read-only", "--skip-git-repo-check", "fix it"}},
		{"bypass", Config{Kind: Codex, Args: []string{"--dangerously-bypass-approvals-and-sandbox"}}, "fix it", "th-1",
			[]string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
				"fork", "th-1", "fix it"}},
		{"-s", Config{Kind: Codex, Args: []string{"-s", "danger-full-access"}}, "p", "",
			[]string{"codex", "exec", "--json", "--skip-git-repo-check", "-s", "danger-full-access", "p"}},
		{"-c sandbox_mode", Config{Kind: Codex, Args: []string{"-c", `sandbox_mode="read-only"`}}, "p", "",
			[]string{"codex", "exec", "--json", "--skip-git-repo-check", "-c", `sandbox_mode="read-only"`, "p"}},
		{"--config=sandbox_mode", Config{Kind: Codex, Args: []string{"--config=sandbox_mode=read-only"}}, "p", "",
			[]string{"codex", "exec", "--json", "--skip-git-repo-check", "--config=sandbox_mode=read-only", "p"}},
		{"other -c", Config{Kind: Codex, Args: []string{"-c", "model_reasoning_effort=low"}}, "p", "",
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "-c", "model_reasoning_effort=low", "p"}},
		{"dash prompt", Config{Kind: Codex}, "-x", "th-1",
			[]string{"codex", "exec", "--json", "--sandbox", "workspace-write", "--skip-git-repo-check", "fork", "th-1", "--", "-x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Command(tt.cfg, tt.prompt, "", tt.session)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("Command = %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}
}

// TestCodexArgv_NeverResumes: a conversation is continued with exec fork,
// which leaves the session alone, never with exec resume, which appends
// every fork's turn to it (and fails when two forks resume it at once).
func TestCodexArgv_NeverResumes(t *testing.T) {
	got, _ := Command(Config{Kind: Codex}, "p", "a", "th-1")
	if slices.Contains(got, "resume") || !slices.Contains(got, "fork") {
		t.Errorf("argv %q", got)
	}
}

// codexRollout is the shape of a rollout codex 0.171 writes (trimmed):
// its token_count events carry the thread's running total.
const codexRollout = `{"timestamp":"2026-12-01T12:14:31.000Z","type":"session_meta","payload":{"id":"01a23187-292a-7ab2-b22d-c5ed67d80e8b","cwd":"/w","originator":"codex_exec"}}
{"timestamp":"2026-12-01T12:14:31.100Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"second"}]}}
{"timestamp":"2026-12-01T12:14:31.200Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":50,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":5,"reasoning_output_tokens":0,"total_tokens":55},"last_token_usage":{"input_tokens":50,"cached_input_tokens":0,"output_tokens":5,"total_tokens":55}}}}
{"timestamp":"2026-12-01T12:14:31.300Z","type":"event_msg","payload":{"type":"token_count","info":null}}
{"timestamp":"2026-12-01T12:14:31.400Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":150,"cached_input_tokens":40,"cache_write_input_tokens":0,"output_tokens":15,"reasoning_output_tokens":0,"total_tokens":165},"last_token_usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":10,"total_tokens":110}}}}
{"timestamp":"2026-12-01T12:14:31.500Z","type":"event_msg","payload":{"type":"task_complete"}}
`

func writeRollout(t *testing.T, home, id, body string) string {
	t.Helper()
	dir := filepath.Join(home, "sessions", "2026", "12", "01")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rollout-2026-12-01T12-14-31-"+id+".jsonl")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCodexSessionUsage(t *testing.T) {
	home := t.TempDir()
	id := "01a23187-292a-7ab2-b22d-c5ed67d80e8b"
	p := writeRollout(t, home, id, codexRollout)
	if got, err := CodexRollout(home, id); err != nil || got != p {
		t.Errorf("CodexRollout = %q, %v; want %q", got, err, p)
	}
	u, err := CodexSessionUsage(home, id)
	if want := (Usage{InputTokens: 110, CacheReadTokens: 40, OutputTokens: 15}); err != nil || u != want {
		t.Errorf("CodexSessionUsage = %+v, %v; want %+v", u, err, want)
	}
	writeRollout(t, home, "empty", `{"type":"session_meta","payload":{}}`+"\n")
	if u, err := CodexSessionUsage(home, "empty"); err != nil || u != (Usage{}) {
		t.Errorf("a session without usage: %+v, %v", u, err)
	}
	for _, id := range []string{"nosuch", "", "../x", "*"} {
		if _, err := CodexSessionUsage(home, id); !errors.Is(err, ErrNoSession) {
			t.Errorf("session %q: %v, want ErrNoSession", id, err)
		}
	}
}

// TestCodexForkParser: codex's turn.completed of a forked session is the
// thread's running total; the fork is charged only what exceeds the
// session's own total.
func TestCodexForkParser(t *testing.T) {
	stream := `{"type":"thread.started","thread_id":"fork-1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"wrote it"}}
{"type":"turn.completed","usage":{"input_tokens":300,"cached_input_tokens":80,"cache_write_input_tokens":0,"output_tokens":30,"reasoning_output_tokens":0}}
`
	base := Usage{InputTokens: 110, CacheReadTokens: 40, OutputTokens: 15}
	for _, tt := range []struct {
		name string
		p    Parser
		want Usage
	}{
		{"fork", NewCodexForkParser(base, WithModel("gpt-5")), Usage{InputTokens: 110, CacheReadTokens: 40, OutputTokens: 15}},
		{"fresh", mustParser(t, Codex, WithModel("gpt-5")), Usage{InputTokens: 220, CacheReadTokens: 80, OutputTokens: 30}},
	} {
		ev := NewEvidence(0, 0)
		if err := Consume(strings.NewReader(stream), tt.p, ev); err != nil {
			t.Fatal(err)
		}
		s := ev.Snapshot()
		want, _ := OpenAIPrices().Lookup("gpt-5")
		if s.Tokens != tt.want || s.CostUSD != want.Cost(tt.want) || s.SessionID != "fork-1" {
			t.Errorf("%s: tokens %+v cost %v session %q; want %+v %v", tt.name, s.Tokens, s.CostUSD, s.SessionID, tt.want, want.Cost(tt.want))
		}
	}
}

func mustParser(t *testing.T, k Kind, opts ...Option) Parser {
	t.Helper()
	p, err := NewParser(k, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCodexHome: the agent's environment decides (in a run, HOME is the
// owner's), this process's home only without a HOME in it.
func TestCodexHome(t *testing.T) {
	t.Setenv("CODEX_HOME", "/env/home")
	t.Setenv("HOME", "/h")
	if got := CodexHome([]string{"A=1", "CODEX_HOME=/a", "HOME=/o", "CODEX_HOME=/b"}); got != "/b" {
		t.Errorf("from the agent's env: %q", got)
	}
	if got := CodexHome([]string{"HOME=/o", "CODEX_HOME="}); got != "/o/.codex" {
		t.Errorf("the agent's HOME: %q", got)
	}
	if got := CodexHome(nil); got != "/h/.codex" {
		t.Errorf("default: %q", got)
	}
}

// TestCodexLiveEstimate: before turn.completed the cost grows with the
// streamed items — the model's messages and commands as output, each
// request after a tool result reading it as input and the turn so far as
// cached input — and turn.completed's usage replaces it.
func TestCodexLiveEstimate(t *testing.T) {
	table := PriceTable{"m": {InputPerMTok: 1, OutputPerMTok: 10, CacheReadPerMTok: 0.1}}
	p, _ := NewParser(Codex, WithPrices(table), WithModel("m"))
	ev := NewEvidence(0, 0)
	msg := strings.Repeat("x", 4000) // 1000 tokens of output
	out := strings.Repeat("o", 8000) // 2000 tokens the next request reads
	cmd := strings.Repeat("c", 400)  // 100 tokens of output
	feed := func(line string) float64 {
		t.Helper()
		evs, err := p.Feed([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			ev.Add(e)
		}
		c, _ := ev.Cost()
		return c
	}
	feed(`{"type":"thread.started","thread_id":"t"}`)
	feed(`{"type":"turn.started"}`)
	if c := feed(`{"type":"item.completed","item":{"id":"i0","type":"agent_message","text":"` + msg + `"}}`); !closeTo(c, 1000*10/1e6) {
		t.Errorf("after a message: $%v, want its output", c)
	}
	started := `{"type":"item.started","item":{"id":"i1","type":"command_execution","command":"` + cmd + `","aggregated_output":"","status":"in_progress"}}`
	if c := feed(started); !closeTo(c, 1100*10/1e6) {
		t.Errorf("after a command: $%v", c)
	}
	feed(`{"type":"item.completed","item":{"id":"i1","type":"command_execution","command":"` + cmd + `","aggregated_output":"` + out + `","exit_code":0,"status":"completed"}}`)
	// The next request reads the output (2000) and the turn before it
	// (1100 cached), and makes the message (1000).
	want := (1100+1000)*10/1e6 + 2000*1/1e6 + 1100*0.1/1e6
	if c := feed(`{"type":"item.completed","item":{"id":"i2","type":"agent_message","text":"` + msg + `"}}`); !closeTo(c, want) {
		t.Errorf("after the second request: $%v, want $%v", c, want)
	}
	if c := feed(`{"type":"turn.completed","usage":{"input_tokens":500,"cached_input_tokens":0,"output_tokens":50}}`); !closeTo(c, (500*1+50*10)/1e6) {
		t.Errorf("after turn.completed: $%v, want the real usage's", c)
	}
	if s := ev.Snapshot(); !s.CostFinal || s.Tokens != (Usage{InputTokens: 500, OutputTokens: 50}) {
		t.Errorf("final %v tokens %+v", s.CostFinal, s.Tokens)
	}
}

// A person's codex in a confined fork runs without its own sandbox, unless
// its arguments choose one (then it is said its commands will fail, but
// for danger-full-access); other programs are left alone.
func TestCodexInConfinedFork(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
		note string // a word of the note, "" for none
	}{
		{[]string{"codex"}, `codex -c sandbox_mode="danger-full-access"`, "held by"},
		{[]string{"/usr/bin/codex", "exec", "fix it"}, `/usr/bin/codex -c sandbox_mode="danger-full-access" exec fix it`, "held by"},
		{[]string{"codex", "exec", "-s", "read-only", "x"}, "codex exec -s read-only x", "will fail"},
		{[]string{"codex", "-c", "sandbox_mode=workspace-write"}, "codex -c sandbox_mode=workspace-write", "will fail"},
		{[]string{"codex", "exec", "--sandbox", "danger-full-access", "x"}, "codex exec --sandbox danger-full-access x", ""},
		{[]string{"codex", "--yolo"}, "codex --yolo", ""},
		{[]string{"claude", "-p", "x"}, "claude -p x", ""},
		{[]string{"sh", "-c", "codex exec x"}, "sh -c codex exec x", ""},
		{nil, "", ""},
	} {
		got, note := CodexInConfinedFork(c.argv)
		if strings.Join(got, " ") != c.want || (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("CodexInConfinedFork(%q) = %q, %q; want %q, a note with %q", c.argv, got, note, c.want, c.note)
		}
	}
}
