package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// CodexSandbox is the sandbox tine asks of codex in a fork unless the
// agent's args choose one: codex may write the workspace (its default,
// read-only, fails every edit). A fork is disposable and nothing leaves
// it without a merge; tine's hooks block external effects.
const CodexSandbox = "workspace-write"

// CodexSandboxConfined is the sandbox tine asks of codex in a fork whose
// writes tine confines itself (Landlock): codex's own sandbox (bubblewrap)
// needs mounts, which Landlock forbids, and tine's confinement already
// holds its commands to the workspace, /tmp and the owner's caches.
const CodexSandboxConfined = "danger-full-access"

// codexSandboxFlags are the codex exec flags that choose a sandbox; one
// of them in [Config.Args] replaces tine's --sandbox.
var codexSandboxFlags = []string{"-s", "--sandbox", "--dangerously-bypass-approvals-and-sandbox",
	"--full-auto", "--approve-for-me", "--yolo"}

// CodexArgv is the argv of a codex agent run:
//
//	codex exec --json [--model M] [--sandbox workspace-write|danger-full-access]
//	  [--skip-git-repo-check] ARGS... [fork S] [--] PROMPT
//
// The sandbox is danger-full-access when tine confines the fork itself
// (cfg.Confined). --sandbox is left out when ARGS choose a sandbox themselves (-s,
// --sandbox, -c sandbox_mode=…, --dangerously-bypass-approvals-and-sandbox,
// …). --skip-git-repo-check is always given (unless ARGS have it): codex
// refuses to run outside a git repository without it, a fork's directory
// is not inside the source's repository when the workspace is a
// subdirectory of one, and inside a repository it changes nothing.
// session, when set, is continued with exec fork: a new session with S's
// history, S itself untouched (never exec resume, which would append
// every fork's turn to S, and fails when two forks resume it at once).
// Flags of exec come before the fork subcommand, which takes none of
// them. The prompt is preceded by -- when it starts with a dash.
func CodexArgv(bin string, cfg Config, prompt, session string) []string {
	argv := []string{bin, "exec", "--json"}
	if cfg.Model != "" {
		argv = append(argv, "--model", cfg.Model)
	}
	if !codexChoosesSandbox(cfg.Args) {
		sandbox := CodexSandbox
		if cfg.Confined {
			sandbox = CodexSandboxConfined
		}
		argv = append(argv, "--sandbox", sandbox)
	}
	if !slices.Contains(cfg.Args, "--skip-git-repo-check") {
		argv = append(argv, "--skip-git-repo-check")
	}
	argv = append(argv, cfg.Args...)
	if session != "" {
		argv = append(argv, "fork", session)
	}
	if strings.HasPrefix(prompt, "-") {
		argv = append(argv, "--")
	}
	return append(argv, prompt)
}

func codexArgv(bin string, cfg Config, prompt, session string) []string {
	return CodexArgv(bin, cfg, prompt, session)
}

// CodexInConfinedFork is argv, a command a person runs in a fork whose
// writes tine confines (tine exec FORK -- codex ...), as it should run
// there, and what to tell them (empty: not codex, or nothing to say).
// Codex's own sandbox (bubblewrap) cannot start in such a fork (it needs
// mounts the fork refuses): every command of codex's would fail ("bwrap:
// setting up uid map") while codex went on as if it had run. When argv
// runs codex without choosing its sandbox, -c
// sandbox_mode="danger-full-access" goes after the program, the fork's
// confinement holding codex instead, as under fork-run
// (CodexSandboxConfined); when it chooses another sandbox, argv is kept and
// the note says its commands will fail.
func CodexInConfinedFork(argv []string) ([]string, string) {
	if len(argv) == 0 || filepath.Base(argv[0]) != "codex" {
		return argv, ""
	}
	if codexChoosesSandbox(argv[1:]) {
		if codexFullAccess(argv[1:]) {
			return argv, ""
		}
		return argv, `codex's own sandbox cannot start here (it needs mounts a fork refuses): each of its commands will fail; run it with --sandbox ` + CodexSandboxConfined + ` (the fork's confinement holds it)`
	}
	out := append([]string{argv[0], "-c", `sandbox_mode="` + CodexSandboxConfined + `"`}, argv[1:]...)
	return out, `codex's own sandbox cannot start here (it needs mounts a fork refuses, and each of its commands would fail): codex runs with sandbox_mode="` + CodexSandboxConfined + `", held by the fork's confinement`
}

// codexFullAccess reports whether args, which choose codex's sandbox,
// choose none (danger-full-access, or bypassing it).
func codexFullAccess(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return strings.Contains(a, CodexSandboxConfined) || a == "--dangerously-bypass-approvals-and-sandbox" || a == "--yolo"
	})
}

// codexChoosesSandbox reports whether args pick codex's sandbox.
func codexChoosesSandbox(args []string) bool {
	for i, a := range args {
		flag, _, _ := strings.Cut(a, "=")
		if slices.Contains(codexSandboxFlags, flag) || (strings.HasPrefix(a, "-s") && !strings.HasPrefix(a, "--")) {
			return true
		}
		if (a == "-c" || a == "--config") && i+1 < len(args) && codexSandboxKey(args[i+1]) {
			return true
		}
		if (strings.HasPrefix(a, "-c") && !strings.HasPrefix(a, "--") && codexSandboxKey(a[2:])) ||
			(strings.HasPrefix(a, "--config=") && codexSandboxKey(a[len("--config="):])) {
			return true
		}
	}
	return false
}

func codexSandboxKey(kv string) bool {
	k, _, _ := strings.Cut(strings.TrimSpace(kv), "=")
	k = strings.TrimSpace(k)
	return k == "sandbox_mode" || k == "default_permissions" || strings.HasPrefix(k, "permissions.")
}

// codexParser reads codex exec --json.
type codexParser struct {
	opts    options
	n       int
	started map[string]bool // item ids whose call was reported
	last    string          // the last agent message, the final answer
	base    codexUsage      // the running total of the forked session
	live    codexLive       // the turn's estimate until turn.completed
}

// codexLive estimates a turn's usage from its streamed items, since codex
// exec --json reports usage only in turn.completed: every item the model
// made (message, reasoning, a call's command) is output, chars/4; each
// model request after a tool result reads that result as new input and
// the turn so far again as cached input. It leaves out the instructions
// and the history before the turn, so it stays below the real usage,
// which replaces it at turn.completed.
type codexLive struct {
	context int64 // chars of the turn so far: items and tool results
	fresh   int64 // chars of tool results not yet read by a request
	open    bool  // a model response is under way: items arrived since the last tool result
}

// NewCodexForkParser is a Codex parser for a run that forks a session
// whose running total was base (see [CodexSessionUsage]): codex reports
// the thread's running total in turn.completed, history included, so the
// parser charges the run only what exceeds base, its own turn.
func NewCodexForkParser(base Usage, opts ...Option) Parser {
	p, _ := NewParser(Codex, opts...)
	cp := p.(*codexParser)
	cp.base = codexUsage{Input: base.InputTokens + base.CacheReadTokens, Cached: base.CacheReadTokens, Output: base.OutputTokens}
	return cp
}

// ErrNoSession is returned by [CodexSessionUsage] when no rollout of the
// session is found.
var ErrNoSession = errors.New("no such codex session")

// CodexHome is the directory codex keeps its sessions in for an agent
// whose whole environment is env: its last CODEX_HOME, else .codex in its
// last HOME (else in this process's home).
func CodexHome(env []string) string {
	if v := lastEnv(env, "CODEX_HOME"); v != "" {
		return v
	}
	return filepath.Join(envHome(env), ".codex")
}

// CodexRollout returns the path of session id's rollout file under
// codexHome (sessions/YYYY/MM/DD/rollout-TIME-ID.jsonl).
func CodexRollout(codexHome, id string) (string, error) {
	if id == "" || strings.ContainsAny(id, "/*?[\\") {
		return "", fmt.Errorf("codex session %q: %w", id, ErrNoSession)
	}
	matches, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
	if len(matches) == 0 {
		return "", fmt.Errorf("codex session %s: %w under %s", id, ErrNoSession, filepath.Join(codexHome, "sessions"))
	}
	slices.Sort(matches)
	return matches[len(matches)-1], nil
}

// CodexSessionUsage returns the running token total session id had
// reached, from the last token_count event of its rollout under
// codexHome; zero when it recorded none.
func CodexSessionUsage(codexHome, id string) (Usage, error) {
	path, err := CodexRollout(codexHome, id)
	if err != nil {
		return Usage{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return Usage{}, err
	}
	defer f.Close()
	var last *codexUsage
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	for sc.Scan() {
		b := sc.Bytes()
		if !bytes.Contains(b, []byte(`"token_count"`)) {
			continue
		}
		var l struct {
			Payload struct {
				Type string `json:"type"`
				Info *struct {
					Total *codexUsage `json:"total_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		if json.Unmarshal(b, &l) == nil && l.Payload.Type == "token_count" && l.Payload.Info != nil && l.Payload.Info.Total != nil {
			last = l.Payload.Info.Total
		}
	}
	if err := sc.Err(); err != nil {
		return Usage{}, fmt.Errorf("read %s: %w", path, err)
	}
	if last == nil {
		return Usage{}, nil
	}
	return last.usage(), nil
}

type codexLine struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Item     *codexItem  `json:"item"`
	Usage    *codexUsage `json:"usage"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

type codexItem struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	ItemType string `json:"item_type"` // the first published name of type
	Text     string `json:"text"`
	Command  string `json:"command"`
	ExitCode *int   `json:"exit_code"`
	Output   string `json:"aggregated_output"`
	Status   string `json:"status"`
	Changes  []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

type codexUsage struct {
	Input  int64 `json:"input_tokens"` // cached tokens included
	Cached int64 `json:"cached_input_tokens"`
	Output int64 `json:"output_tokens"`
}

// usage is u in tine's terms: input without the cached part.
func (u codexUsage) usage() Usage {
	return Usage{InputTokens: max(u.Input-u.Cached, 0), CacheReadTokens: u.Cached, OutputTokens: u.Output}
}

// minus is what u adds to base, never negative.
func (u codexUsage) minus(base codexUsage) codexUsage {
	return codexUsage{Input: max(u.Input-base.Input, 0), Cached: max(u.Cached-base.Cached, 0),
		Output: max(u.Output-base.Output, 0)}
}

// Feed parses one line.
func (p *codexParser) Feed(line []byte) ([]Event, error) {
	p.n++
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	var l codexLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, parseError(p.n, line, err)
	}
	return p.events(&l), nil
}

func (p *codexParser) events(l *codexLine) []Event {
	switch l.Type {
	case "thread.started":
		if l.ThreadID != "" {
			return []Event{{Kind: EventSession, SessionID: l.ThreadID}}
		}
	case "item.started", "item.updated":
		return p.itemStarted(l.Item)
	case "item.completed":
		return p.itemCompleted(l.Item)
	case "turn.completed":
		return p.turnCompleted(l.Usage)
	case "turn.failed":
		return []Event{{Kind: EventResult, IsError: true, Text: errText(l)}}
	case "error":
		return []Event{{Kind: EventText, Text: "error: " + errText(l)}}
	}
	return nil
}

func errText(l *codexLine) string {
	if l.Error != nil {
		return l.Error.Message
	}
	return l.Message
}

func (it *codexItem) kind() string {
	if it.Type != "" {
		return it.Type
	}
	return it.ItemType
}

// call returns the tool call an item stands for, if it is one.
func (it *codexItem) call() (Event, bool) {
	ev := Event{Kind: EventToolCall, ToolID: it.ID, ToolName: it.kind()}
	switch ev.ToolName {
	case "command_execution":
		ev.Command = it.Command
	case "file_change":
		var parts []string
		for _, c := range it.Changes {
			parts = append(parts, c.Kind+" "+c.Path)
		}
		ev.Command = strings.Join(parts, ", ")
	case "mcp_tool_call":
		ev.Command = it.Server + "/" + it.Tool
	default:
		return Event{}, false
	}
	return ev, true
}

func (p *codexParser) itemStarted(it *codexItem) []Event {
	if it == nil || p.started[it.ID] {
		return nil
	}
	ev, ok := it.call()
	if !ok {
		return nil
	}
	p.started[it.ID] = true
	return append([]Event{ev}, p.made(int64(len(ev.Command)))...)
}

// made charges the estimate of chars the model made, in the request
// under way or, after a tool result, in a new one (which read the result
// and the turn so far).
func (p *codexParser) made(chars int64) []Event {
	l := &p.live
	var u Usage
	if !l.open {
		u.InputTokens, u.CacheReadTokens = l.fresh/charsPerToken, (l.context-l.fresh)/charsPerToken
		l.fresh, l.open = 0, true
	}
	u.OutputTokens = chars / charsPerToken
	l.context += chars
	if u == (Usage{}) {
		return nil
	}
	return p.opts.estimate("", u)
}

// read notes a tool result the model will read in its next request.
func (p *codexParser) read(chars int64) {
	p.live.context += chars
	p.live.fresh += chars
	p.live.open = false
}

// itemCompleted yields the text of a message, or the call (if its start
// was not seen) and the result of a tool item. Reasoning is not output.
func (p *codexParser) itemCompleted(it *codexItem) []Event {
	if it == nil {
		return nil
	}
	switch it.kind() {
	case "agent_message", "assistant_message":
		p.last = it.Text
		return append([]Event{{Kind: EventText, Text: it.Text}}, p.made(int64(len(it.Text)))...)
	case "reasoning":
		return p.made(int64(len(it.Text)))
	}
	evs := p.itemStarted(it)
	if _, ok := it.call(); !ok {
		return evs
	}
	p.read(int64(len(it.Output)))
	failed := it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0)
	return append(evs, Event{Kind: EventToolResult, ToolID: it.ID,
		ToolName: it.kind(), ExitCode: it.ExitCode, IsError: failed})
}

// turnCompleted yields the run's usage and its cost when priced, which
// replace the live estimate (Final), and the result: codex exec runs one
// turn. Codex reports the thread's running total; what the forked session
// had reached (base) is not this run's.
func (p *codexParser) turnCompleted(cu *codexUsage) []Event {
	var evs []Event
	if cu != nil {
		u := cu.minus(p.base).usage()
		evs = append(evs, Event{Kind: EventUsage, Usage: u, Final: true})
		for _, c := range p.opts.estimate("", u) {
			c.Final = true
			evs = append(evs, c)
		}
	}
	p.live = codexLive{}
	return append(evs, Event{Kind: EventResult, Text: p.last})
}
