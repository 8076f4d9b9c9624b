package agent

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestClaudeProjectName checks the names Claude Code 2.1.332 gave the
// project directories of sessions started in these directories (read off
// its store after running it there).
func TestClaudeProjectName(t *testing.T) {
	a, b, c := strings.Repeat("a", 150), strings.Repeat("b", 100), strings.Repeat("c", 200)
	for _, tc := range []struct{ dir, want string }{
		{"/tmp/clws/sub", "-tmp-clws-sub"},
		{"/var/tmp/unrel", "-var-tmp-unrel"},
		{"/tmp/clws/😀é", "-tmp-clws----"}, // a surrogate pair is two units
		{"/tmp/clws/" + a + "/" + b, ("-tmp-clws-" + a + "-" + b)[:200] + "-6097ro"},
		{"/tmp/clws/" + c + "/😀x", ("-tmp-clws-" + c)[:200] + "-3mljmf"},
	} {
		if got := ClaudeProjectName(tc.dir); got != tc.want {
			t.Errorf("ClaudeProjectName(%q) = %q, want %q", tc.dir, got, tc.want)
		}
	}
}

// writeTranscript writes a transcript of session id started in cwd, with
// a cost-state total when cost > 0, modified at mod.
func writeTranscript(t *testing.T, config, cwd, id string, cost float64, mod time.Time) string {
	t.Helper()
	dir := filepath.Join(config, "projects", ClaudeProjectName(cwd))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	lines := `{"type":"queue-operation","operation":"enqueue","sessionId":"` + id + `","content":"hi"}` + "\n" +
		`{"parentUuid":null,"type":"user","message":{"role":"user","content":"hi"},"cwd":"` + cwd + `","sessionId":"` + id + `"}` + "\n"
	if cost > 0 {
		lines += `{"type":"cost-state","sessionId":"` + id + `","totalCostUSD":0.5}` + "\n" +
			`{"type":"cost-state","sessionId":"` + id + `","totalCostUSD":` + strconv.FormatFloat(cost, 'g', -1, 64) + `}` + "\n"
	}
	path := filepath.Join(dir, id+".jsonl")
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLatestClaudeSession: the newest session of the workspace or a
// directory below it wins; a sibling whose name shares the prefix, a
// skipped session and a transcript without a conversation do not count.
func TestLatestClaudeSession(t *testing.T) {
	config := t.TempDir()
	ws := "/srv/app"
	t0 := time.Now().Add(-time.Hour)
	writeTranscript(t, config, ws, "old", 0, t0)
	writeTranscript(t, config, ws+"/sub/deep", "sub", 0.75, t0.Add(time.Minute))
	writeTranscript(t, config, "/srv/app-other", "sibling", 0, t0.Add(2*time.Minute))
	writeTranscript(t, config, "/srv/app.x", "dotted", 0, t0.Add(3*time.Minute))
	writeTranscript(t, config, ws, "fork", 0, t0.Add(4*time.Minute))
	empty := filepath.Join(config, "projects", ClaudeProjectName(ws), "empty.jsonl")
	os.WriteFile(empty, []byte(`{"type":"queue-operation","operation":"enqueue"}`+"\n"), 0o600)

	skip := func(id string) bool { return id == "fork" }
	s, err := LatestClaudeSession(config, ws, skip)
	if err != nil || s.ID != "sub" || s.Cwd != ws+"/sub/deep" || s.CostUSD != 0.75 {
		t.Fatalf("LatestClaudeSession = %+v, %v; want sub", s, err)
	}
	if s, err := LatestClaudeSession(config, ws, nil); err != nil || s.ID != "fork" {
		t.Errorf("without skip: %+v, %v; want fork", s, err)
	}
	if s, err := LatestClaudeSession(config, ws+"/sub", skip); err != nil || s.ID != "sub" {
		t.Errorf("from the subdirectory: %+v, %v", s, err)
	}
	if _, err := LatestClaudeSession(config, "/srv/none", nil); !errors.Is(err, ErrNoClaudeSession) {
		t.Errorf("no session: %v, want ErrNoClaudeSession", err)
	}
	if _, err := LatestClaudeSession(t.TempDir(), ws, nil); !errors.Is(err, ErrNoClaudeSession) {
		t.Errorf("empty store: %v", err)
	}
}

// TestFindClaudeSession: a session is found by id in any project, with
// the running total of its last cost-state line; an unknown id, one that
// names another file and a transcript without conversation are not.
func TestFindClaudeSession(t *testing.T) {
	config := t.TempDir()
	path := writeTranscript(t, config, "/srv/app/sub", "s1", 0.25, time.Now())
	s, err := FindClaudeSession(config, "s1")
	if err != nil || s.Transcript != path || s.CostUSD != 0.25 || s.Cwd != "/srv/app/sub" {
		t.Fatalf("FindClaudeSession = %+v, %v", s, err)
	}
	os.WriteFile(filepath.Join(filepath.Dir(path), "empty.jsonl"), []byte("{}\n"), 0o600)
	for _, id := range []string{"nope", "../x", "*", "empty", ""} {
		if _, err := FindClaudeSession(config, id); !errors.Is(err, ErrNoClaudeSession) {
			t.Errorf("FindClaudeSession(%q) = %v, want ErrNoClaudeSession", id, err)
		}
	}
}

// TestClaudeConfigDir: the agent's CLAUDE_CONFIG_DIR, else its HOME
// (in a run, the owner's), else this process's home.
func TestClaudeConfigDir(t *testing.T) {
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("HOME", "/home/me")
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{nil, "/home/me/.claude"},
		{[]string{"HOME=/a", "HOME=/b"}, "/b/.claude"},
		{[]string{"HOME=/a", "CLAUDE_CONFIG_DIR=/c"}, "/c"},
	} {
		if got := ClaudeConfigDir(tc.env); got != tc.want {
			t.Errorf("ClaudeConfigDir(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}
	t.Setenv("CLAUDE_CONFIG_DIR", "/env") // not the agent's environment
	if got := ClaudeConfigDir([]string{"HOME=/a"}); got != "/a/.claude" {
		t.Errorf("with this process's CLAUDE_CONFIG_DIR set: %q", got)
	}
}

// TestClaudeForkParser: a run resuming a session is charged its
// total_cost_usd past the session's running total (Claude Code 2.1.332
// reported 0.00028 for a fork of a 0.00014 session whose own turn cost
// 0.00014).
func TestClaudeForkParser(t *testing.T) {
	line := []byte(`{"type":"result","subtype":"success","is_error":false,"total_cost_usd":0.00028,"usage":{"input_tokens":10,"output_tokens":5},"result":"ok"}`)
	for _, tc := range []struct {
		p    Parser
		want float64
	}{
		{NewClaudeForkParser(0.00014), 0.00014},
		{NewClaudeForkParser(0.001), 0},
		{NewClaudeForkParser(0), 0.00028},
	} {
		evs, err := tc.p.Feed(line)
		if err != nil {
			t.Fatal(err)
		}
		var cost float64
		for _, e := range evs {
			if e.Kind == EventCost {
				cost = e.CostUSD
			}
		}
		if d := cost - tc.want; d > 1e-12 || d < -1e-12 {
			t.Errorf("cost %v, want %v", cost, tc.want)
		}
	}
}
