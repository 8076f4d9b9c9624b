//go:build linux

package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tinehq/tine/hook"
	"github.com/tinehq/tine/internal/agentmock"
	"github.com/tinehq/tine/internal/runenv"
)

var pendingID = regexp.MustCompile(`pending as (a[0-9a-z]{8})`)

// pushSource makes a live workspace that is a git repository of one
// commit with a bare remote origin; it returns the env, the workspace,
// the remote and the commit.
func pushSource(t *testing.T) (e *env, dir, remote, head string) {
	t.Helper()
	e, dir = liveWorkspace(t, false, map[string]string{"a.txt": "one\n"})
	remote = filepath.Join(t.TempDir(), "remote.git")
	hostSh(t, dir, "git init -q -b main && git add -A && git -c user.name=t -c user.email=t@x commit -qm one && git init -q --bare "+remote+" && git remote add origin "+remote)
	return e, dir, remote, strings.TrimSpace(hostSh(t, dir, "git rev-parse HEAD"))
}

// External effects go through the daemon: a push asked for from the
// source waits for a person, is done once approved (exactly the commit
// shown), is never repeated for the same key, and leaves a receipt; an
// HTTP request likewise; a fork may not ask at all.
func TestEffect_ThroughTheMediator(t *testing.T) {
	e, _, remote, head := pushSource(t)
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			posts.Add(1)
		}
		w.Write([]byte("deployed"))
	}))
	defer srv.Close()
	d := e.serve()
	defer d.stop(t)

	out := e.ok("exec", "source", "--", "tine", "effect", "git-push", "origin", "main")
	id := pendingID.FindStringSubmatch(out)
	if id == nil || !strings.Contains(out, head) || !strings.Contains(out, remote) {
		t.Fatalf("git-push asked: %s", out)
	}
	if refs := remoteRefs(t, remote); refs != "" {
		t.Fatalf("pushed before anyone approved: %q", refs)
	}
	// The person sees exactly what approving sends (the remote and the
	// commit) and for which run, by name.
	if p := e.ok("pending"); !strings.Contains(p, id[1]) || !strings.Contains(p, head) || !strings.Contains(p, remote) || !strings.Contains(p, "live/source") {
		t.Errorf("tine pending does not say what the push sends:\n%s", p)
	}
	if again := e.ok("exec", "source", "--", "tine", "effect", "git-push", "origin", "main"); !strings.Contains(again, id[1]) {
		t.Errorf("asked twice, a second approval: %s", again)
	}
	if out := e.ok("approve", id[1]); !strings.Contains(out, "done: git push") || !strings.Contains(out, head) {
		t.Errorf("tine approve does not say what it pushed: %s", out)
	}
	if refs := remoteRefs(t, remote); refs != head+" refs/heads/main" {
		t.Errorf("the remote after the approval: %q, want %s refs/heads/main", refs, head)
	}
	if again := e.ok("exec", "source", "--", "tine", "effect", "git-push", "origin", "main"); !strings.Contains(again, "done already") {
		t.Errorf("asked again once done: %s", again)
	}

	ask := []string{"exec", "source", "--", "tine", "effect", "http", "POST", srv.URL + "/deploy", "--data", `{"env":"staging"}`, "--key", "deploy-1"}
	hid := pendingID.FindStringSubmatch(e.ok(ask...))
	if hid == nil || posts.Load() != 0 {
		t.Fatalf("http asked: %v, %d posts", hid, posts.Load())
	}
	e.ok("approve", hid[1])
	e.ok(ask...)
	if n := posts.Load(); n != 1 {
		t.Errorf("the POST was sent %d times, want once", n)
	}
	var evs []jsonEvent
	e.okJSON(&evs, "log", "source", "--json")
	var receipts []map[string]any
	for _, ev := range evs {
		if ev.Kind == "effect" {
			var rec map[string]any
			json.Unmarshal(ev.Detail, &rec)
			receipts = append(receipts, rec)
		}
	}
	if len(receipts) != 2 || receipts[0]["ok"] != true || receipts[1]["status"] != float64(200) || receipts[1]["key"] != "deploy-1" ||
		receipts[1]["body_sha256"] == "" {
		t.Errorf("receipts: %+v", receipts)
	}

	e.ok("fork", "source")
	if r := e.tine("exec", "source-1", "--", "tine", "effect", "git-push", "origin", "main"); r.code == 0 || !strings.Contains(r.stderr, "refused from a fork") {
		t.Errorf("a fork asked for a push: %v", r)
	}
	// A fork's own tine.toml cannot let it through: the policy is the source's.
	e.execSh("source-1", `printf '[effects]\nfrom_forks = "after_promotion"\n' > tine.toml`)
	if r := e.tine("exec", "source-1", "--", "tine", "effect", "git-push", "origin", "main"); r.code == 0 {
		t.Errorf("a fork set its own effect policy: %v", r)
	}
}

// With the source's [effects] from_forks = "after_promotion", a fork's
// request is kept, and a person is asked for it once the fork is promoted.
func TestEffect_FromAForkAfterPromotion(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"a.txt": "one\n", "tine.toml": "[effects]\nfrom_forks = \"after_promotion\"\n"})
	remote := filepath.Join(t.TempDir(), "remote.git")
	hostSh(t, dir, "git init -q -b main && git add -A && git -c user.name=t -c user.email=t@x commit -qm one && git init -q --bare "+remote+" && git remote add origin "+remote)
	d := e.serve()
	defer d.stop(t)
	e.ok("fork", "source")
	e.execSh("source-1", "echo two > a.txt && git -c user.name=t -c user.email=t@x commit -qam two")
	head := strings.TrimSpace(e.execSh("source-1", "git rev-parse HEAD"))
	if out := e.ok("exec", "source-1", "--", "tine", "effect", "git-push", "origin", "main"); !strings.Contains(out, "once source-1 is promoted") {
		t.Fatalf("a fork's push: %s", out)
	}
	if out := e.ok("pending"); strings.Contains(out, "effect") {
		t.Fatalf("offered before the promotion:\n%s", out)
	}
	e.ok("promote", "source-1")
	id := regexp.MustCompile(`a[0-9a-z]{8}`).FindString(e.ok("pending"))
	if id == "" {
		t.Fatal("nothing pending after the promotion")
	}
	e.ok("approve", id)
	if refs := remoteRefs(t, remote); refs != head+" refs/heads/main" {
		t.Errorf("the remote after the approval: %q, want the fork's commit %s", refs, head)
	}
}

func remoteRefs(t *testing.T, remote string) string {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", remote, "for-each-ref", "--format=%(objectname) %(refname)").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// TestEffect_RealClaudeAsksThroughTine: the real claude, run by a person
// in the source (tine exec) with tine's hooks from tine setup claude, is
// scripted as a model that reads what it is told: its git push is denied
// by the hook, whose message names tine effect; it then runs what the
// message names, from its Bash tool (so the run's capability must reach
// claude's commands). The push waits for a person, nothing reaches the
// remote before, and once approved the remote has the source's commit
// and the log a receipt.
func TestEffect_RealClaudeAsksThroughTine(t *testing.T) {
	requireClaude(t)
	e, _, remote, head := pushSource(t)
	const ask = "tine effect git-push origin main"
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		bash := func(c string) agentmock.Turn {
			return agentmock.Turn{Tool: &agentmock.ToolUse{Name: "Bash", Input: map[string]any{"command": c}}}
		}
		switch {
		case r.Turn == 0:
			return bash("git push origin main"), true
		case r.Turn == 1 && len(r.ToolResults) == 1 && strings.Contains(r.ToolResults[0].Content, "tine effect git-push"):
			return bash(ask), true
		case r.Turn == 1:
			return agentmock.Turn{Text: "the denial named no way to ask"}, true
		}
		return agentmock.Turn{Text: "asked"}, r.Turn == 2
	})
	home := canonicalPath(t, t.TempDir())
	vars := mock.Env(home)
	if r := e.run(call{vars: vars}, "setup", "claude", "--tine", tineBin); r.code != 0 {
		t.Fatalf("%v", r)
	}
	d := e.serve()
	defer d.stop(t)
	argv := append(append([]string{"exec", "source", "--", "env"}, vars...),
		"claude", "-p", "push it", "--permission-mode", "acceptEdits", "--allowedTools", "Bash")
	out := e.ok(argv...)
	conv := mock.Conversation()
	if len(conv) < 3 || len(conv[2].ToolResults) != 1 {
		t.Fatalf("claude's conversation: %d turns, want 3\nclaude: %s", len(conv), out)
	}
	denial, asked := conv[1].ToolResults[0], conv[2].ToolResults[0]
	if !denial.IsError || !strings.Contains(denial.Content, "external") {
		t.Errorf("git push's result %+v, want the hook's denial", denial)
	}
	id := pendingID.FindStringSubmatch(asked.Content)
	if asked.IsError || id == nil || !strings.Contains(asked.Content, head) {
		t.Fatalf("%s's result %+v, want a pending approval of %s", ask, asked, head)
	}
	if refs := remoteRefs(t, remote); refs != "" {
		t.Fatalf("pushed before anyone approved: %q", refs)
	}
	e.ok("approve", id[1])
	if refs := remoteRefs(t, remote); refs != head+" refs/heads/main" {
		t.Errorf("the remote after the approval: %q, want %s refs/heads/main", refs, head)
	}
	if log := e.ok("log", "source"); !strings.Contains(log, "effect") {
		t.Errorf("no receipt in the log:\n%s", log)
	}
}

// TestEffect_RealCodexAsksThroughTine: the real codex exec, run by a
// person in the source with its own sandbox (workspace-write, as codex
// runs by default) and tine setup codex's hooks and MCP server. Its git
// push is denied by the hook, whose message names tine effect and, for
// codex, the MCP tool; tine effect from its sandbox cannot reach the
// daemon (the sandbox refuses every socket) and says why; the MCP server,
// which codex runs outside its sandbox with the run's socket and
// capability, asks. The push waits for a person and is done once
// approved.
func TestEffect_RealCodexAsksThroughTine(t *testing.T) {
	requireCodex(t)
	e, _, remote, head := pushSource(t)
	mcpCall := agentmock.FunctionCall("effect", map[string]any{"kind": "git-push", "remote": "origin", "refspec": "main"})
	mcpCall.Namespace = "mcp__" + hook.CodexMCPServer
	steps := []agentmock.OpenAIItem{
		agentmock.FunctionCall("exec_command", map[string]any{"cmd": "git push origin main"}),
		// codex runs commands in a login shell, whose PATH (the profile's)
		// has no /run/tine/bin: the run's own tine by its path.
		agentmock.FunctionCall("exec_command", map[string]any{"cmd": runenv.RunDir + "/bin/tine effect git-push origin main"}),
		mcpCall,
	}
	ce := codexMock(t, func(r *agentmock.OpenAIRequest) agentmock.OpenAITurn {
		if n := len(r.ToolOutputs()); n < len(steps) {
			return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{steps[n]}}
		}
		return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{agentmock.Message("asked")}}
	})
	m, vars := ce.mock, ce.vars
	if r := e.run(call{vars: vars}, "setup", "codex", "--tine", tineBin); r.code != 0 || !strings.Contains(r.stdout, "MCP server") {
		t.Fatalf("%v", r)
	}
	d := e.serve()
	defer d.stop(t)
	argv := append(append([]string{"exec", "source", "--", "env"}, vars...),
		"codex", "exec", "--json", "--skip-git-repo-check", "--sandbox", "workspace-write", "push it")
	out := e.ok(argv...)
	var outputs []string
	for _, o := range m.Requests()[len(m.Requests())-1].ToolOutputs() {
		outputs = append(outputs, o.Text())
	}
	if len(outputs) != len(steps) {
		t.Fatalf("tool outputs %q, want %d\ncodex: %s", outputs, len(steps), out)
	}
	if denial := outputs[0]; !strings.Contains(denial, "external") || !strings.Contains(denial, "MCP server's `effect` tool") {
		t.Errorf("git push: %q, want the hook's denial naming the MCP tool", denial)
	}
	if cmd := outputs[1]; !strings.Contains(cmd, "refuses sockets") || !strings.Contains(cmd, "MCP server") {
		t.Errorf("tine effect in codex's sandbox: %q, want why it cannot reach tine", cmd)
	}
	id := pendingID.FindStringSubmatch(outputs[2])
	if id == nil || !strings.Contains(outputs[2], head) {
		t.Fatalf("the MCP tool effect: %q, want a pending approval of %s", outputs[2], head)
	}
	if refs := remoteRefs(t, remote); refs != "" {
		t.Fatalf("pushed before anyone approved: %q", refs)
	}
	e.ok("approve", id[1])
	if refs := remoteRefs(t, remote); refs != head+" refs/heads/main" {
		t.Errorf("the remote after the approval: %q, want %s refs/heads/main", refs, head)
	}
}
