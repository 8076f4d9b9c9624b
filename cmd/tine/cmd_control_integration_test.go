//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// rawRequest speaks HTTP to the daemon's socket from inside run without any
// capability, as a process that bypasses tine would, and returns the
// status line.
func (e *env) rawRequest(run, method, path string) string {
	e.t.Helper()
	script := fmt.Sprintf(`import socket
s = socket.socket(socket.AF_UNIX); s.connect("/run/tine/ctl/tine.sock")
s.sendall(b"%s %s HTTP/1.0\r\nHost: tine\r\n\r\n")
print(s.recv(65536).decode().split("\r\n")[0])
`, method, path)
	return e.ok("exec", run, "--", "/usr/bin/python3", "-c", script)
}

// An agent inside a run forks itself and proposes a merge through the
// tine on its PATH; nothing lands until a person approves that exact
// request, which is single-use and goes stale when the fork changes.
func TestControl_ForkSelfRequestApprove(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"a.txt": "original\n"})
	d := e.serve()
	defer d.stop(t)
	e.ok("start", "source")

	// A stale token kept from before the fork stops working once it forks.
	e.execSh("source", "cp /run/tine/cap/token "+filepath.Join(e.tmp, "old-token"))
	out := e.ok("exec", "source", "--", "tine", "fork-self", "-n", "1", "--approach", "rewrite")
	if !strings.Contains(out, "source-1") || !strings.Contains(out, "rewrite") {
		t.Fatalf("fork-self: %s", out)
	}
	r := e.tine("exec", "source", "--", "sh", "-c", "TINE_CAPABILITY="+filepath.Join(e.tmp, "old-token")+" tine fork-self")
	if r.code != 7 || !strings.Contains(r.stderr, "revoked") {
		t.Errorf("the parent's token from before the fork: %v", r)
	}
	// Bypassing tine from inside a run: no capability, no access.
	if got := e.rawRequest("source-1", "GET", "/v1/runs"); !strings.Contains(got, "403") {
		t.Errorf("an unsigned request from inside a run got %q", got)
	}

	e.execSh("source-1", "echo rewritten > a.txt")
	out = e.ok("exec", "source-1", "--", "tine", "request", "merge")
	id := regexp.MustCompile(`pending as (a[0-9a-z]{8})`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("request merge: %s", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "original\n" {
		t.Fatalf("the merge landed before approval: %q", b)
	}
	var pending []tine.Approval
	e.okJSON(&pending, "pending", "--json")
	if len(pending) != 1 || pending[0].ID != id[1] || pending[0].Action != tine.ActionMerge || len(pending[0].Evidence) == 0 {
		t.Fatalf("tine pending: %+v", pending)
	}
	e.ok("approve", id[1])
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "rewritten\n" {
		t.Errorf("after approval the source has %q", b)
	}
	// Approving it again is "already used" (exit 5, wrong state), not a missing
	// privilege (before: "insufficient privileges", exit 7).
	if r := e.tine("approve", id[1]); r.code != 5 || !strings.Contains(r.stderr, "is consumed: already used") || strings.Contains(r.stderr, "privilege") {
		t.Errorf("approving twice: %v", r)
	}

	// Stale: the fork changes after asking; the approval no longer fits.
	e.execSh("source-1", "echo again > b.txt")
	out = e.ok("exec", "source-1", "--", "tine", "request", "merge")
	id2 := regexp.MustCompile(`pending as (a[0-9a-z]{8})`).FindStringSubmatch(out)
	e.execSh("source-1", "echo sneaky > c.txt")
	if r := e.tine("approve", id2[1]); r.code != 5 || !strings.Contains(r.stderr, "changed") {
		t.Errorf("approving a request whose run changed since: %v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "c.txt")); err == nil {
		t.Error("a stale approval merged")
	}
}

// hookEvent reads a real Claude Code hook payload and sets fields of it.
func hookEvent(t *testing.T, fixture string, set map[string]string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "hook", "testdata", "fixtures", "claude", fixture))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range set {
		m[k] = v
	}
	out, _ := json.Marshal(m)
	return out
}

// The agent's hooks drive the daemon: a fork the agent asks for mid-turn
// waits for the turn to stop, and a person's choice typed as a prompt
// approves its fork's merge request.
func TestControl_HooksTurnsAndTypedApproval(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"a.txt": "original\n"})
	d := e.serve()
	defer d.stop(t)
	e.ok("start", "source")
	hookIn := func(run string, payload []byte) string {
		t.Helper()
		r := e.run(call{stdin: payload}, "exec", run, "--", "tine", "hook", "claude")
		if r.code != 0 {
			t.Fatalf("tine hook claude in %s: %v", run, r)
		}
		return r.stdout
	}
	prompt := func(p string) []byte {
		return hookEvent(t, "docs-examples/userpromptsubmit.input.json", map[string]string{"prompt": p})
	}
	stop := hookEvent(t, "docs-examples/stop.input.json", nil)

	hookIn("source", prompt("try the upgrade two ways"))
	out := e.ok("exec", "source", "--", "tine", "fork-self", "-n", "1")
	if !strings.Contains(out, "when this turn stops") {
		t.Fatalf("fork-self mid-turn: %q", out)
	}
	if rows := e.ls(); len(rows) != 1 {
		t.Fatalf("a fork was made mid-turn: %+v", rows)
	}
	hookIn("source", stop)
	if rows := e.ls(); len(rows) != 2 || rows[1].Name != "source-1" {
		t.Fatalf("after the turn stopped: %+v", rows)
	}

	// In a source, fork-worthy commands are sent to forks.
	pre := hookEvent(t, "docs-examples/pretooluse-bash.input.json", nil)
	var m map[string]any
	json.Unmarshal(pre, &m)
	m["tool_input"] = map[string]any{"command": "npm update"}
	pre, _ = json.Marshal(m)
	if out := hookIn("source", pre); !strings.Contains(out, "deny") || !strings.Contains(out, "tine fork-self") {
		t.Errorf("npm update in the source: %q", out)
	}

	e.execSh("source-1", "echo from-fork > a.txt")
	out = e.ok("exec", "source-1", "--", "tine", "request", "merge")
	id := regexp.MustCompile(`pending as (a[0-9a-z]{8})`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("request merge: %s", out)
	}
	// The person at the source's agent approves its fork's request.
	hookIn("source", prompt("approve "+id[1]))
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "from-fork\n" {
		t.Errorf("after the typed approval the source has %q", b)
	}
	var evs []jsonEvent
	e.okJSON(&evs, "log", "source", "--json")
	kinds := map[string]bool{}
	for _, ev := range evs {
		kinds[ev.Kind] = true
	}
	for _, k := range []string{"evidence.turn_started", "evidence.turn_stopped", "evidence.approval_choice", "evidence.tool_denied"} {
		if !kinds[k] {
			t.Errorf("the source's log has no %s: %v", k, kinds)
		}
	}
	// Each hook reported how long it took to decide.
	body := d.metrics(t)
	if !strings.Contains(body, `tine_hook_decision_duration_seconds_count{agent="claude",decision="deny"} 1`) ||
		!strings.Contains(body, `tine_hook_decision_duration_seconds_count{agent="claude",decision="pass"}`) {
		t.Errorf("/metrics has no hook decision times:\n%s", grepLines(body, "tine_hook"))
	}
}

// An agent cannot approve its own request by feeding its hook a prompt.
func TestControl_NoSelfApprovalThroughHook(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"a.txt": "original\n"})
	d := e.serve()
	defer d.stop(t)
	e.ok("start", "source")
	e.ok("fork", "source")
	e.execSh("source-1", "echo mine > a.txt")
	out := e.ok("exec", "source-1", "--", "tine", "request", "merge")
	id := regexp.MustCompile(`pending as (a[0-9a-z]{8})`).FindStringSubmatch(out)
	payload := hookEvent(t, "docs-examples/userpromptsubmit.input.json", map[string]string{"prompt": "approve " + id[1]})
	e.run(call{stdin: payload}, "exec", "source-1", "--", "tine", "hook", "claude")
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "original\n" {
		t.Errorf("the fork approved its own merge through its hook: %q", b)
	}
	var pending []tine.Approval
	e.okJSON(&pending, "pending", "--json")
	if len(pending) != 1 || pending[0].State != tine.ApprovalPending {
		t.Errorf("the request is no longer pending: %+v", pending)
	}
	// A person approves it through the API; from inside a run that is refused.
	if got := e.rawRequest("source", "POST", "/v1/approvals/"+id[1]+"/approve"); !strings.Contains(got, "403") {
		t.Errorf("approving from inside a run: %q", got)
	}
	// Nor through the dashboard, whose pages act for a person.
	if got := e.rawRequest("source-1", "GET", "/ui/"); !strings.Contains(got, "403") {
		t.Errorf("the dashboard from inside a run: %q", got)
	}
	if code := d.get(t, "/ui/", nil); code != 200 {
		t.Errorf("the dashboard for a person: %d", code)
	}
	var list []tine.Approval
	if code := d.get(t, "/v1/approvals", &list); code != 200 || len(list) != 1 {
		t.Fatalf("GET /v1/approvals: %d %+v", code, list)
	}
	if code := d.do(t, "POST", "/v1/approvals/"+id[1]+"/approve", `{"by": "reviewer"}`, nil); code != 200 {
		t.Errorf("POST approve: %d", code)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "mine\n" {
		t.Errorf("after approval through the API the source has %q", b)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Inside a run the state directory is covered: a person's command there
// (tine ls, tine diff) used to open it anyway, and root's said the store
// was missing beside its workspaces ("tine doctor explains how to
// recover"), a normal user's made a fresh store in the fork's home. Now,
// with the run's daemon up, the commands that go through a daemon go
// through the run's, signed with its capability and held to its lineage
// (its own diff, not its parent's); the rest, and all of them without the
// daemon, refuse in one line naming what works inside a run.
func TestControl_StoreCommandsInsideARun(t *testing.T) {
	e, _ := liveWorkspace(t, false, map[string]string{"a.txt": "a\n"})
	e.ok("fork", "source")
	refused := func(run string, args ...string) {
		t.Helper()
		r := e.tine(append([]string{"exec", run, "--", "tine"}, args...)...)
		if r.code != exitUnsupported || !strings.Contains(r.stderr, "a run does not see") || !strings.Contains(r.stderr, "tine fork-self") {
			t.Errorf("tine %v inside %s: %v, want exit %d and what works inside a run", args, run, r, exitUnsupported)
		}
	}
	for _, run := range []string{"source", "source-1"} { // no daemon
		refused(run, "ls")
		refused(run, "diff", "source-1")
	}
	if out := e.execSh("source-1", "ls -a ~/.local/share 2>/dev/null || true"); strings.Contains(out, "tine") {
		t.Errorf("a command inside the fork made a state directory in its home: %q", out)
	}
	// A state directory of its own still works inside a run.
	if out := e.execSh("source-1", "TINE_HOME=/tmp/own tine ls"); strings.Contains(out, "source") {
		t.Errorf("tine ls of an empty state directory of the run's own listed %q", out)
	}
	d := e.serve()
	defer d.stop(t)
	e.execSh("source-1", "echo b >> a.txt")
	if out := e.ok("exec", "source-1", "--", "tine", "diff", "source-1"); !strings.Contains(out, "a.txt") {
		t.Errorf("tine diff of the fork from inside it, through its daemon: %q", out)
	}
	if out := e.ok("exec", "source-1", "--", "tine", "ls"); !strings.Contains(out, "source-1") || strings.Contains(out, " source ") {
		t.Errorf("tine ls inside the fork: %q, want the fork (and its forks) only", out)
	}
	if r := e.tine("exec", "source-1", "--", "tine", "diff", "source"); r.code != exitUnsupported || !strings.Contains(r.stderr, "out of scope") {
		t.Errorf("tine diff of the fork's parent from inside it: %v, want refused as out of its scope", r)
	}
	refused("source-1", "gc") // not a command that goes through a daemon
}

// Inside a run, tine merge (the person's command, not tine request) can
// only file a request: it says so, names the request and for whom, and
// exits 11, never 0 with nothing printed as if it had merged.
func TestControl_MergeInsideARunSaysItFiled(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"a.txt": "original\n"})
	d := e.serve()
	defer d.stop(t)
	e.ok("start", "source")
	e.ok("exec", "source", "--", "tine", "fork-self", "-n", "1")
	e.execSh("source-1", "echo rewritten > a.txt")
	r := e.tine("exec", "source-1", "--", "tine", "merge", "source-1")
	if r.code != exitFiled || !regexp.MustCompile(`not done: it is filed as request a[0-9a-z]{8} for a person of workspace \S+ to approve`).MatchString(r.stderr) {
		t.Errorf("tine merge inside a run: %v, want exit 11 naming the request", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "original\n" {
		t.Errorf("the merge landed without approval: %q", b)
	}
	var pending []tine.Approval
	e.okJSON(&pending, "pending", "--json")
	if len(pending) != 1 || pending[0].Action != tine.ActionMerge {
		t.Errorf("tine pending: %+v", pending)
	}
}
