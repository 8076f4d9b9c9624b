//go:build linux

package main

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/agentmock"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/postgres/pgtest"
)

// sleeperAgent is a command agent that would run for five minutes; its
// sleep is told apart from any other by its length.
const sleeperAgent = `sleep 297; echo done > out.txt`

// TestFleet_CancelTasks: an agent's cancel_tasks (the MCP SDK's client)
// withdraws a queued task, which never runs, and tine tasks cancel stops a
// running one: its node kills its agent within
// seconds and records it canceled, saying who canceled it, its workspace
// kept; canceling it again changes nothing; a task that ended is not
// canceled (exit 5), one that does not exist is not found (exit 3).
// Before, a task once taken ran to its end whatever its submitter wanted.
func TestFleet_CancelTasks(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, _ := fleetRepo(t)
	node := startNode(t, url, "nx", "--capacity", "1")
	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)
	running := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--command", sleeperAgent, "-n", "1"))
	queued := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--command", agentCmd, "-n", "1"))
	queued2 := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--command", agentCmd, "-n", "1"))
	for end := time.Now().Add(2 * time.Minute); exec.Command("pgrep", "-f", "sleep 297").Run() != nil; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("task %s's agent did not start:\n%s", running, node.output(t))
		}
	}

	api := newEnv(t) // an agent's tine mcp, on a tine serve whose store is the fleet's
	api.vars = append(api.vars, "TINE_STORE_URL="+url)
	d := api.serve()
	defer d.stop(t)
	text, res := mcpCall(t, api.mcpSession("mcp"), false, "cancel_tasks", map[string]any{"tasks": []string{queued, "tnosuchtask"}})
	got, _ := res["tasks"].([]any)
	if len(got) != 2 || got[0].(map[string]any)["state"] != fleet.TaskCanceled || got[1].(map[string]any)["error"] == nil || !strings.Contains(text, "1 of 2") {
		t.Errorf("cancel_tasks of the queued task and of none: %q %v; want the first canceled, the second not found", text, res)
	}
	page := dashboardPost(t, d, "/ui/fleet", "")
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if csrf == nil || !strings.Contains(page, `action="/ui/fleet/tasks/`+queued2+`/cancel"`) || strings.Contains(page, `action="/ui/fleet/tasks/`+queued+`/cancel"`) {
		t.Fatalf("the fleet's page: want a cancel button on %s (queued), none on %s (canceled):\n%s", queued2, queued, clip(page))
	}
	if page := dashboardPost(t, d, "/ui/fleet/tasks/"+queued2+"/cancel", "confirm=1&csrf="+csrf[1]); !strings.Contains(page, "task "+queued2+": canceled; it was queued and never ran") {
		t.Errorf("the dashboard's cancel of a queued task:\n%s", clip(page))
	}
	t0 := time.Now()
	if out := dev.ok("tasks", "cancel", running); !strings.Contains(out, "task "+running+": being stopped on node nx") {
		t.Errorf("tine tasks cancel of the running task:\n%s", out)
	}
	tk := waitTask(t, dev, running, 30*time.Second)
	if tk.State != fleet.TaskCanceled || !strings.HasPrefix(tk.Reason, "canceled by root@") || tk.Node != "nx" || tk.Workspace == "" {
		t.Errorf("the running task once canceled: %s on %s (%s), workspace %q; want canceled on nx, saying by whom, its workspace kept", tk.State, tk.Node, tk.Reason, tk.Workspace)
	}
	if exec.Command("pgrep", "-f", "sleep 297").Run() == nil {
		t.Errorf("the canceled task's agent still runs %v after tine tasks cancel", time.Since(t0))
	}
	if out := node.output(t); strings.Contains(out, "task "+queued+" taken") || strings.Contains(out, "task "+queued2+" taken") {
		t.Errorf("node nx ran the task canceled while queued:\n%s", node.output(t))
	}
	if out := dev.ok("tasks", "cancel", running); !strings.Contains(out, "canceled already") {
		t.Errorf("tine tasks cancel again:\n%s", out)
	}

	done := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--command", agentCmd, "-n", "1"))
	if tk := waitTask(t, dev, done, 3*time.Minute); tk.State != fleet.TaskDone {
		t.Fatalf("task %s: %s (%s)", done, tk.State, tk.Reason)
	}
	requireOneLineError(t, dev.tine("tasks", "cancel", done), exitState)
	requireOneLineError(t, dev.tine("tasks", "cancel", "tnosuchtask"), exitNotFound)
}

// dashboardPost GETs path of daemon d's dashboard on its unix socket, or
// POSTs form there when form is not empty, and returns the page.
func dashboardPost(t *testing.T, d *daemon, path, form string) string {
	t.Helper()
	resp, err := d.client.Get("http://tine" + path)
	if form != "" {
		resp, err = d.client.Post("http://tine"+path, "application/x-www-form-urlencoded", strings.NewReader(form))
	}
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d\n%s", path, resp.StatusCode, clip(string(b)))
	}
	return string(b)
}

// waitTask polls tine tasks --json until task id is final and returns it.
func waitTask(t *testing.T, dev *env, id string, within time.Duration) *fleet.Task {
	t.Helper()
	for end := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		var st fleetStatus
		dev.okJSON(&st, "tasks", "--json")
		for _, tk := range st.Tasks {
			if tk.ID == id && tk.Final() {
				return tk
			}
		}
		if time.Now().After(end) {
			t.Fatalf("task %s is not final after %v: %+v", id, within, st.Tasks)
		}
	}
}

// TestFleet_TaskRetention: a node with --task-retention releases a task's
// workspace (its forks discarded, its clone removed) once the task ended
// that long ago, records when, and says so; the task's results stay in
// the fleet: tine fetch still brings its winner into a developer's
// workspace. Before, every task's workspace stayed on its node until a
// person released it there.
func TestFleet_TaskRetention(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, _ := fleetRepo(t)
	node := startNode(t, url, "nr", "--task-retention", "1s", "--heartbeat", "200ms")
	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)
	id := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--command", agentCmd, "-n", "1"))
	if tk := waitTask(t, dev, id, 3*time.Minute); tk.State != fleet.TaskDone || tk.Workspace == "" {
		t.Fatalf("task %s: %s (%s), workspace %q", id, tk.State, tk.Reason, tk.Workspace)
	}
	clone := filepath.Clean(node.e.home) + "-tasks/" + id
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var st fleetStatus
		dev.okJSON(&st, "tasks", "--json")
		if st.Tasks[0].CleanedAt != nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("task %s's workspace not released 30 s after it ended:\n%s", id, node.output(t))
		}
	}
	if _, err := os.Stat(clone); !os.IsNotExist(err) {
		t.Errorf("the task's clone %s after its release: %v; want it removed", clone, err)
	}
	if out := node.e.ok("ls", "--json"); strings.Contains(out, id) {
		t.Errorf("the node's runs after the release still list the task's workspace:\n%s", out)
	}
	if !strings.Contains(node.output(t), "task "+id+": its workspace released") {
		t.Errorf("the node did not say it released the task's workspace:\n%s", node.output(t))
	}
	ws := dev.workspaceDir("mine")
	hostSh(t, ws, "git clone -q "+repo+" .")
	dev.ok("init", ws)
	if r := dev.run(call{dir: ws}, "fetch", id); r.code != 0 || !strings.Contains(r.stdout, "commit(s) and files") {
		t.Fatalf("tine fetch of the task whose workspace was released: %v", r)
	}
}

// TestFleet_CancelRealClaude: tine tasks cancel stops a fleet task whose
// agent is the real claude, waiting on the mock Messages API in the
// middle of its conversation: the claude process is gone within seconds,
// the task is recorded canceled and the file claude wrote before is kept
// in the fork on its node.
func TestFleet_CancelRealClaude(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	requireClaude(t)
	url := pgtest.URL(t)
	held := make(chan struct{})
	defer close(held)
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		switch r.Turn {
		case 0:
			return writeAnswer("partial\n"), true
		case 1:
			<-held // the model thinks for ever: the agent waits
			return agentmock.Turn{Text: "finished"}, true
		}
		return agentmock.Turn{}, false
	})
	tmp := canonicalPath(t, t.TempDir())
	agentHome := filepath.Join(tmp, "home")
	if err := os.MkdirAll(agentHome, 0o755); err != nil {
		t.Fatal(err)
	}
	repo, _ := fleetRepo(t)
	hostSh(t, repo, `printf '[agent.claude]\nenv = { HOME = "`+agentHome+`" }\n' > tine.toml && git add tine.toml && git -c user.name=t -c user.email=t@t commit -qm toml`)
	node := startNodeEnv(t, url, "nc", mock.Env(agentHome), "--capacity", "1")
	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)
	claudes := func() int {
		out, _ := exec.Command("pgrep", "-x", "claude").Output()
		return strings.Count(string(out), "\n")
	}
	before := claudes()
	id := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--agent", "claude", "--prompt", "write the answer", "-n", "1"))
	for end := time.Now().Add(2 * time.Minute); len(mock.Requests()) == 0 || !heldTurn(mock); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("claude never reached its second turn:\n%s", node.output(t))
		}
	}
	if claudes() <= before {
		t.Fatalf("no claude process while its turn is held (%d before, %d now)", before, claudes())
	}
	dev.ok("tasks", "cancel", id)
	tk := waitTask(t, dev, id, 30*time.Second)
	if tk.State != fleet.TaskCanceled || tk.Workspace == "" {
		t.Fatalf("task %s: %s (%s), workspace %q; want canceled", id, tk.State, tk.Reason, tk.Workspace)
	}
	for end := time.Now().Add(10 * time.Second); claudes() > before; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d claude process(es) still run after the task was canceled", claudes()-before)
		}
	}
	var runs []struct{ Name, Role, Path string }
	node.e.okJSON(&runs, "ls", "--json")
	forks := 0
	for _, r := range runs {
		if r.Role != "fork" {
			continue
		}
		forks++
		if b, err := os.ReadFile(filepath.Join(r.Path, "answer.txt")); err != nil || string(b) != "partial\n" {
			t.Errorf("the canceled fork %s's answer.txt: %q, %v; want claude's write kept", r.Name, b, err)
		}
	}
	if forks != 1 {
		t.Errorf("forks on node nc after the cancel: %+v; want the task's one fork, kept", runs)
	}
}

// heldTurn reports whether mock got claude's second conversation turn (the
// one its script holds).
func heldTurn(mock *agentmock.Anthropic) bool {
	for _, r := range mock.Requests() {
		if r.Turn >= 1 {
			return true
		}
	}
	return false
}
