//go:build linux

package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/postgres/pgtest"
)

// fleetNode is a tine serve --node of a test, its stderr (where it says
// which tasks it took) kept in a file.
type fleetNode struct {
	name string
	e    *env
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startNode starts tine serve --node name on a state directory of its
// own, on the fleet's PostgreSQL url, and waits until it listens.
func startNode(t *testing.T, url, name string, args ...string) *fleetNode {
	t.Helper()
	return startNodeEnv(t, url, name, nil, args...)
}

// startNodeEnv is startNode with vars added to the node's environment.
func startNodeEnv(t *testing.T, url, name string, vars []string, args ...string) *fleetNode {
	t.Helper()
	return startNodeIn(t, newEnv(t), url, name, vars, args...)
}

// startNodeIn is startNodeEnv in the state directory of e, which may
// hold workspaces already.
func startNodeIn(t *testing.T, e *env, url, name string, vars []string, args ...string) *fleetNode {
	t.Helper()
	e.vars = append(append(e.vars, "TINE_STORE_URL="+url), vars...)
	n := &fleetNode{name: name, e: e, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logf, err := os.Create(n.log)
	if err != nil {
		t.Fatal(err)
	}
	n.cmd = exec.Command(tineBin, append([]string{"serve", "--node", name, "--heartbeat", "300ms"}, args...)...)
	n.cmd.Env = e.vars
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logf.Close()
	go func() { n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		n.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-n.done:
		case <-time.After(40 * time.Second):
			n.cmd.Process.Kill()
			<-n.done
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(n.output(t), "taking up to") {
		if time.Now().After(deadline) {
			t.Fatalf("node %s did not start:\n%s", name, n.output(t))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return n
}

// output is what the node printed so far.
func (n *fleetNode) output(t *testing.T) string {
	b, err := os.ReadFile(n.log)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// taken lists the tasks the node said it took.
func (n *fleetNode) taken(t *testing.T) []string {
	var out []string
	for _, m := range takenRe.FindAllStringSubmatch(n.output(t), -1) {
		out = append(out, m[1])
	}
	return out
}

var takenRe = regexp.MustCompile(`task (t\w+) taken by node`)

// api is a client of the node's API on its unix socket.
func (n *fleetNode) api() *http.Client {
	sock := filepath.Join(n.e.home, "ctl", "tine.sock")
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", sock)
		}}}
}

// fleetRepo makes a git repository with one commit and returns its path
// and the commit.
func fleetRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := filepath.Join(canonicalPath(t, t.TempDir()), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostSh(t, dir, `git init -q -b main . && echo hello > a.txt &&
		git add a.txt && git -c user.name=t -c user.email=t@t commit -qm init`)
	return dir, strings.TrimSpace(hostSh(t, dir, "git rev-parse HEAD"))
}

// waitTasks polls tine tasks --json until every one of want tasks is
// final and returns the fleet's status.
func waitTasks(t *testing.T, dev *env, want int, within time.Duration) *fleetStatus {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var st fleetStatus
		dev.okJSON(&st, "tasks", "--json")
		final := 0
		for _, tk := range st.Tasks {
			if tk.Final() {
				final++
			}
		}
		if len(st.Tasks) == want && final == want {
			return &st
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v, %d of %d tasks are final: %+v", within, final, want, st.Queue)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// agentCmd is the tasks' command agent: it commits a file named after
// its fork and leaves another uncommitted, so the winner has both a
// commit and a change.
const agentCmd = `echo "fork $TINE_FORK_INDEX" > "f$TINE_FORK_INDEX.txt" && git add . &&
	git -c user.name=a -c user.email=a@a commit -qm "fork $TINE_FORK_INDEX" && echo more > "g$TINE_FORK_INDEX.txt"`

// TestFleet_ThreeNodes: three nodes on one machine (state directories of
// their own, one PostgreSQL) take 12 tasks that two developers submit at
// once with the same key: each task is queued once and taken by one node
// once, each runs its fork-run with a command agent and stores a winner
// and its patch; the API of one node names the node where another's task
// workspace lives; a node's tine does not touch the workspaces of the
// others; and a developer fetches a winner into their own workspace and
// merges it.
func TestFleet_ThreeNodes(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, commit := fleetRepo(t)
	listen := freeAddr(t)
	nodes := []*fleetNode{startNode(t, url, "n1", "--capacity", "2", "--listen", listen)}
	for _, name := range []string{"n2", "n3"} {
		nodes = append(nodes, startNode(t, url, name, "--capacity", "2"))
	}
	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)

	var wg sync.WaitGroup
	outs := make([]result, 2)
	for i := range outs {
		wg.Go(func() {
			outs[i] = dev.tine("submit", "--repo", repo, "--command", agentCmd, "-n", "2", "--count", "12", "--key", "batch")
		})
	}
	wg.Wait()
	for _, r := range outs {
		if r.code != 0 {
			t.Fatalf("%v", r)
		}
	}
	ids := strings.Fields(outs[0].stdout)
	if len(ids) != 12 || !slices.Equal(ids, strings.Fields(outs[1].stdout)) {
		t.Fatalf("two submitters of one key printed different tasks:\n%s\n%s", outs[0].stdout, outs[1].stdout)
	}

	st := waitTasks(t, dev, 12, 5*time.Minute)
	byNode := map[string]int{}
	for _, tk := range st.Tasks {
		if tk.State != fleet.TaskDone || tk.Winner == "" || !tk.HasPatch || tk.Commit != commit || len(tk.Commits) != 1 {
			t.Errorf("task %s: state %s (%s), winner %q, patch %v, commit %s; commits %q; want done with a winner's patch at %s and its commit",
				tk.ID, tk.State, tk.Reason, tk.Winner, tk.HasPatch, tk.Commit, tk.Commits, commit)
		}
		byNode[tk.Node]++
	}
	if len(byNode) < 2 {
		t.Errorf("the tasks ran on %v: want them spread over the nodes", byNode)
	}
	var taken []string
	for _, n := range nodes {
		taken = append(taken, n.taken(t)...)
	}
	slices.Sort(taken)
	want := slices.Sorted(slices.Values(ids))
	if !slices.Equal(taken, want) {
		t.Errorf("the nodes took %v; want each of %v once", taken, want)
	}

	t.Run("API", func(t *testing.T) { checkFleetAPI(t, nodes, st) })
	t.Run("TCP", func(t *testing.T) { checkFleetTCP(t, nodes[0], listen) })
	t.Run("APISubmit", func(t *testing.T) { checkAPISubmit(t, nodes[1], repo, commit) })
	t.Run("Refused", func(t *testing.T) {
		mine := newEnv(t) // a SQLite store and no TINE_FLEET_URL
		requireOneLineError(t, mine.tine("tasks"), exitUsage)
		requireOneLineError(t, dev.tine("submit", "--command", "true"), exitUsage)
		requireOneLineError(t, dev.tine("submit", "--repo", repo, "--commit", "nosuch", "--command", "true"), exitNotFound)
		requireOneLineError(t, dev.tine("submit", "--repo", repo), exitUsage)
	})
	t.Run("OthersWorkspaces", func(t *testing.T) {
		// Every node's tine opens the one store, which lists the other
		// nodes' workspaces: it writes nothing of theirs (before, each
		// command warned that it could not write their manifests).
		r := nodes[0].e.tine("ls")
		if r.code != 0 || strings.Contains(r.stderr, "manifests") || strings.Contains(nodes[0].output(t), "manifests") {
			t.Errorf("node n1's tine ls, with the other nodes' workspaces in the store: %v", r)
		}
	})
	t.Run("FetchAndMerge", func(t *testing.T) { checkFetch(t, dev, repo, st.Tasks[0]) })
}

// checkFleetAPI: GET /v1/fleet lists the nodes and tasks, and a request
// about a run of a workspace on another node is answered with that node.
func checkFleetAPI(t *testing.T, nodes []*fleetNode, st *fleetStatus) {
	cl := nodes[0].api()
	resp, err := cl.Get("http://tine/v1/fleet")
	if err != nil {
		t.Fatal(err)
	}
	var got fleetStatus
	err = json.NewDecoder(resp.Body).Decode(&got)
	resp.Body.Close()
	if err != nil || len(got.Nodes) != 3 || len(got.Tasks) != 12 {
		t.Errorf("GET /v1/fleet: %v, %d nodes, %d tasks; want 3 and 12", err, len(got.Nodes), len(got.Tasks))
	}
	for _, tk := range st.Tasks {
		if tk.Node == "n1" {
			continue
		}
		resp, err := cl.Get("http://tine/v1/runs/" + tk.ID + "%2Fsource")
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest || body["node"] != tk.Node {
			t.Errorf("n1's GET /v1/runs/%s/source, on node %s: %d %v; want 421 naming %s", tk.ID, tk.Node, resp.StatusCode, body, tk.Node)
		}
		return
	}
	t.Error("no task ran on a node other than n1")
}

// checkAPISubmit: POST /v1/fleet/tasks queues a task, once per key, and
// GET /v1/fleet/tasks/{id} answers it.
func checkAPISubmit(t *testing.T, n *fleetNode, repo, commit string) {
	cl := n.api()
	body := `{"repo": "` + repo + `", "key": "api-1", "request": {"prompt": "p", "agent_cmd": "true", "n": 1}}`
	var ids []string
	for range 2 {
		resp, err := cl.Post("http://tine/v1/fleet/tasks", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		var out []submitted
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated || len(out) != 1 {
			t.Fatalf("POST /v1/fleet/tasks: %d %+v", resp.StatusCode, out)
		}
		ids = append(ids, out[0].ID)
	}
	if ids[0] != ids[1] {
		t.Errorf("one key posted twice gave tasks %v", ids)
	}
	resp, err := cl.Get("http://tine/v1/fleet/tasks/" + ids[0])
	if err != nil {
		t.Fatal(err)
	}
	var tk fleet.Task
	json.NewDecoder(resp.Body).Decode(&tk)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || tk.ID != ids[0] || tk.Commit != commit || tk.Key != "api-1" {
		t.Errorf("GET /v1/fleet/tasks/%s: %d %+v", ids[0], resp.StatusCode, tk)
	}
	resp, err = cl.Post("http://tine/v1/fleet/tasks", "application/json", strings.NewReader(`{"request": {"prompt": "p"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST /v1/fleet/tasks without a repository: %d, want 400", resp.StatusCode)
	}
}

// freeAddr returns a loopback address with a port free now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// checkFleetTCP: on TCP, the fleet's status needs the node's bearer
// token (it lists every task's repository and prompt), and the node
// registered the address it listens on.
func checkFleetTCP(t *testing.T, n *fleetNode, listen string) {
	resp, err := http.Get("http://" + listen + "/v1/fleet")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/fleet on TCP without the token: %d, want 401", resp.StatusCode)
	}
	token, err := os.ReadFile(filepath.Join(n.e.home, "token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://"+listen+"/v1/fleet", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var st fleetStatus
	json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(st.Nodes) != 3 || st.Nodes[0].Address != "http://"+listen {
		t.Errorf("GET /v1/fleet on TCP with the token: %d, nodes %+v; want n1 at http://%s", resp.StatusCode, st.Nodes, listen)
	}
}

// checkFetch: the developer's own workspace, a clone of the repository,
// fetches task tk's winner as a fork, and the usual dry run and merge
// bring its files in.
func checkFetch(t *testing.T, dev *env, repo string, tk *fleet.Task) {
	ws := dev.workspaceDir("mine")
	hostSh(t, filepath.Dir(ws), "git clone -q "+repo+" mine")
	dev.ok("init", ws)
	r := dev.run(call{dir: ws}, "fetch", tk.ID)
	if r.code != 0 || !strings.Contains(r.stdout, "fetched task "+tk.ID) {
		t.Fatalf("%v", r)
	}
	if out := dev.run(call{dir: ws}, "merge", "--dry-run", tk.ID); out.code != 0 || !strings.Contains(out.stdout, "would merge cleanly") {
		t.Fatalf("%v", out)
	}
	if m, _ := filepath.Glob(filepath.Join(ws, "[fg]*.txt")); len(m) > 0 {
		t.Fatalf("the dry run wrote %v", m)
	}
	if out := dev.run(call{dir: ws}, "merge", tk.ID); out.code != 0 {
		t.Fatalf("%v", out)
	}
	m, _ := filepath.Glob(filepath.Join(ws, "[fg]*.txt"))
	if len(m) != 2 {
		t.Fatalf("after tine merge, the forks' files in the workspace: %v; want the winner's two", m)
	}
	if b, err := os.ReadFile(m[0]); err != nil || !strings.HasPrefix(string(b), "fork ") {
		t.Errorf("%s after tine merge: %q, %v", m[0], b, err)
	}
	r = dev.tine("fetch", "tnosuchtk")
	requireOneLineError(t, r, exitNotFound)
}

// TestFleet_NodeLost: a node killed while it runs a task stops
// heartbeating; another node marks its task lost, saying why, and never
// runs it again; the other tasks finish on the nodes left; the lost
// task's files stay on its node, and the node, back, does not run it.
func TestFleet_NodeLost(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, _ := fleetRepo(t)
	a := startNode(t, url, "na")
	b := startNode(t, url, "nb")
	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)
	dev.ok("submit", "--repo", repo, "--command", `sleep 3; echo done > out.txt`, "-n", "1", "--count", "4")

	var victim *fleetNode
	var task string
	deadline := time.Now().Add(2 * time.Minute)
	for victim == nil {
		if time.Now().After(deadline) {
			t.Fatal("no task started")
		}
		for _, n := range []*fleetNode{a, b} {
			if tk := n.taken(t); len(tk) > 0 {
				victim, task = n, tk[0]
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	victim.cmd.Process.Kill()
	<-victim.done

	st := waitTasks(t, dev, 4, 3*time.Minute)
	for _, tk := range st.Tasks {
		switch {
		case tk.ID == task:
			if tk.State != fleet.TaskLost || !strings.Contains(tk.Reason, "stopped heartbeating") || tk.Node != victim.name {
				t.Errorf("task %s on the killed node %s: %s on %s (%s); want lost, saying the node stopped heartbeating", tk.ID, victim.name, tk.State, tk.Node, tk.Reason)
			}
		case tk.State == fleet.TaskDone:
		case tk.State == fleet.TaskLost && tk.Node == victim.name:
			// the killed node had taken a second task
		default:
			t.Errorf("task %s: %s on %s (%s); want done", tk.ID, tk.State, tk.Node, tk.Reason)
		}
	}
	if _, err := os.Stat(filepath.Clean(victim.e.home) + "-tasks/" + task + "/repo"); err != nil {
		t.Errorf("the lost task's workspace on %s: %v; want it kept", victim.name, err)
	}
	other := a
	if victim == a {
		other = b
	}
	if slices.Contains(other.taken(t), task) {
		t.Errorf("node %s ran the lost task %s again", other.name, task)
	}
	back := startNode(t, url, victim.name)
	time.Sleep(2 * time.Second)
	var again fleetStatus
	dev.okJSON(&again, "tasks", "--json")
	for _, x := range again.Tasks {
		if x.ID == task && x.State != fleet.TaskLost {
			t.Errorf("task %s after its node came back: %s", task, x.State)
		}
	}
	if slices.Contains(back.taken(t), task) {
		t.Errorf("node %s, back, ran its lost task %s", back.name, task)
	}
}

// costAgent is a command agent that reports $0.01 every 50 ms, twenty
// times ($0.20 in all), then writes its file.
const costAgent = `for i in $(seq 20); do echo '{"tine_cost_usd": 0.01}'; sleep 0.05; done; echo done > out.txt`

// TestFleet_Budget: tine submit --aggregate-budget caps a batch of tasks
// across the fleet: the node charges each task's spend to the batch as
// it goes, stops the task running when the batch crosses its cap, and
// does not start the batch's other tasks (skipped, with the amounts);
// --budget caps each task's fork-run.
func TestFleet_Budget(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, _ := fleetRepo(t)
	startNode(t, url, "nb", "--capacity", "1")
	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)
	var subs []submitted
	dev.okJSON(&subs, "submit", "--repo", repo, "--command", costAgent, "-n", "1", "--count", "3", "--aggregate-budget", "0.05", "--json")
	dev.ok("submit", "--repo", repo, "--command", costAgent, "-n", "2", "--budget", "0.03", "--key", "capped")

	st := waitTasks(t, dev, 4, 3*time.Minute)
	var stopped, skipped int
	var spent float64
	for _, tk := range st.Tasks[:3] {
		spent += tk.CostUSD
		switch tk.State {
		case fleet.TaskSkipped:
			skipped++
			// The batch's spend is past its cap and below one task's
			// $0.20; how far past depends on how fast the node stopped
			// the first task (a loaded machine: $0.10).
			m := regexp.MustCompile(`^budget: batch ` + subs[0].Batch + ` had spent \$(0\.\d{4}) of its \$0\.0500 cap`).FindStringSubmatch(tk.Reason)
			if m == nil || m[1] <= "0.0500" || m[1] >= "0.2000" {
				t.Errorf("skipped task %s: %q; want the batch's spend (past $0.05, under $0.20) and cap", tk.ID, tk.Reason)
			}
		case fleet.TaskDone, fleet.TaskFailed: // failed when no fork finished
			stopped++
			if tk.CostUSD <= 0.05 || tk.CostUSD >= 0.2 || !strings.Contains(tk.Reason, "over its cap of $0.0500: the task was stopped") {
				t.Errorf("task %s: cost $%v (%s); want stopped past $0.05, before its agent's $0.20", tk.ID, tk.CostUSD, tk.Reason)
			}
		default:
			t.Errorf("task %s: %s (%s); want stopped, or skipped", tk.ID, tk.State, tk.Reason)
		}
	}
	if stopped != 1 || skipped != 2 {
		t.Errorf("%d tasks stopped, %d skipped; want the first stopped and the other two skipped", stopped, skipped)
	}
	for _, tk := range st.Tasks[:3] {
		if tk.State == fleet.TaskSkipped {
			continue
		}
		r := fetchTaskJSON(t, dev, tk.ID)
		if fk := r.Report.Forks[0]; fk.State != "budget_killed" || !strings.Contains(fk.Reason, "batch") {
			t.Errorf("task %s's fork: %s (%s); want budget_killed by its batch", tk.ID, fk.State, fk.Reason)
		}
	}

	capped := fetchTaskJSON(t, dev, st.Tasks[3].ID)
	if capped.Report == nil || capped.Report.Budget.AggregateCap != 0.03 || capped.CostUSD > 0.031 || capped.CostUSD < 0.02 {
		t.Errorf("task with --budget 0.03: cost $%v, report %+v; want its fork-run capped at $0.03", capped.CostUSD, capped.Report)
	}
	requireOneLineError(t, dev.tine("submit", "--repo", repo, "--command", "true", "--aggregate-budget", "-1"), exitUsage)
}

// fetchTaskJSON returns task id with its report, as GET
// /v1/fleet/tasks/{id} answers it, read from the database.
func fetchTaskJSON(t *testing.T, dev *env, id string) *fleet.Task {
	t.Helper()
	u := ""
	for _, v := range dev.vars {
		if s, ok := strings.CutPrefix(v, "TINE_FLEET_URL="); ok {
			u = s
		}
	}
	f, err := fleet.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tk, err := f.Task(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// TestFleet_MCPAndDashboard: an agent's tine mcp, on a tine serve that
// is no node but whose store is the fleet's PostgreSQL, queues tasks with
// submit_tasks and follows them with list_tasks; a node runs them; the
// node's dashboard lists the nodes and tasks on /ui/fleet.
func TestFleet_MCPAndDashboard(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, _ := fleetRepo(t)
	listen := freeAddr(t)
	node := startNode(t, url, "nm", "--capacity", "2", "--listen", listen)
	api := newEnv(t)
	api.vars = append(api.vars, "TINE_STORE_URL="+url)
	d := api.serve()
	defer d.stop(t)
	cs := api.mcpSession("mcp")

	_, sub := mcpCall(t, cs, false, "submit_tasks", map[string]any{"repo": repo, "agent_cmd": agentCmd, "copies": 1,
		"count": 2, "key": "mcp", "aggregate_budget_usd": 1})
	queued, _ := sub["tasks"].([]any)
	if len(queued) != 2 {
		t.Fatalf("submit_tasks: %v; want 2 tasks", sub)
	}
	mcpCall(t, cs, true, "submit_tasks", map[string]any{"repo": "relative/repo", "agent_cmd": "true"})
	var st map[string]any
	deadline := time.Now().Add(3 * time.Minute)
	for {
		var text string
		text, st = mcpCall(t, cs, false, "list_tasks", map[string]any{"state": "done"})
		if tasks, _ := st["tasks"].([]any); len(tasks) == 2 {
			if !strings.Contains(text, "2 done") {
				t.Errorf("list_tasks says %q; want 2 done", text)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("list_tasks: %v", st)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if nodes, _ := st["nodes"].([]any); len(nodes) != 1 || nodes[0].(map[string]any)["name"] != "nm" {
		t.Errorf("list_tasks' nodes: %v; want nm", st["nodes"])
	}

	token, err := os.ReadFile(filepath.Join(node.e.home, "token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://"+listen+"/ui/fleet", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-node="nm" data-state="up"`) {
		t.Fatalf("GET /ui/fleet: %d\n%s", resp.StatusCode, page)
	}
	for _, q := range queued {
		id := q.(map[string]any)["id"].(string)
		if !strings.Contains(string(page), `data-task="`+id+`" data-state="done"`) {
			t.Errorf("/ui/fleet does not list task %s as done", id)
		}
	}
}
