//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// localUser is a normal user running the tine binary.
type localUser struct {
	t        *testing.T
	uid, gid int
	home     string
	bin      string   // a copy of tine they may execute
	vars     []string // their environment
}

// asUser returns name's localUser, whose tine finds the system daemon on
// sock; it skips when the user does not exist.
func asUser(t *testing.T, name, sock string) *localUser {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Skipf("needs the user %s: %v", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	p := &localUser{t: t, uid: uid, gid: gid, home: u.HomeDir, bin: publicTine(t)}
	data := publicDir(t) // their own state directory goes in here
	os.Chown(data, uid, gid)
	p.vars = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + u.HomeDir, "USER=" + name, "LC_ALL=C",
		"TINE_DAEMON_SOCKET=" + sock, "XDG_DATA_HOME=" + data}
	return p
}

// publicDir is a directory every user may enter, removed at cleanup.
func publicDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "tine-user-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(d, 0o755)
	t.Cleanup(func() {
		mnt.UnmountAll(d)
		os.RemoveAll(d)
	})
	return d
}

// publicTine is a copy of the tine binary every user may execute (the
// built one is in a directory of root's).
func publicTine(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(publicDir(t), "tine")
	b, err := os.ReadFile(tineBin)
	if err == nil {
		err = os.WriteFile(dst, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// tine runs the localUser's tine in dir with extra environment.
func (p *localUser) tine(dir string, vars []string, args ...string) result {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Env = append(append([]string{}, p.vars...), vars...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, strings.NewReader("")
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		p.t.Fatalf("tine %v: %v", args, err)
	}
	return r
}

// follow runs the localUser's tine in dir for d, then interrupts it, and
// returns what it printed (tine logs --follow, tine events --follow).
func (p *localUser) follow(dir string, d time.Duration, args ...string) string {
	p.t.Helper()
	cmd := exec.Command(p.bin, args...)
	cmd.Env, cmd.Dir = p.vars, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	time.Sleep(d)
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	return stdout.String()
}

func (p *localUser) ok(dir string, args ...string) string {
	p.t.Helper()
	r := p.tine(dir, nil, args...)
	if r.code != 0 {
		p.t.Fatalf("as uid %d: %v", p.uid, r)
	}
	return r.stdout
}

func (p *localUser) okJSON(dir string, v any, args ...string) {
	p.t.Helper()
	if out := p.ok(dir, args...); json.Unmarshal([]byte(out), v) != nil {
		p.t.Fatalf("tine %v: not JSON: %q", args, out)
	}
}

func uidOf(t *testing.T, p string) int {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// userWorkspace starts a system daemon (root's, on a socket of the test)
// and makes tineuser a directory app to init, with a service svc that logs
// a line; it skips when not root or without the user.
func userWorkspace(t *testing.T) (e *env, ann *localUser, sock, dir string) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	e = newEnv(t)
	sock = filepath.Join(publicDir(t), "tine.sock")
	// Variables of root's that must not reach the user's processes
	// (TestUser_RootsEnvironmentStaysRoots).
	e.serveWith([]string{"TINE_DAEMON_SOCKET=" + sock, "TINE_TEST_ROOTS_KEY=sk-root", "SSH_AUTH_SOCK=/tmp/roots-agent"}, "--system")
	ann = asUser(t, "tineuser", sock)

	dir = filepath.Join(publicDir(t), "app")
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.WriteFile(filepath.Join(dir, "src", "a.txt"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "tine.toml"), []byte("[[service]]\nname = \"svc\"\ncommand = \"echo svc up; id -u > svc.uid; exec sleep 600\"\nready = { command = \"test -s svc.uid\" }\n"), 0o644)
	for _, p := range []string{dir, filepath.Join(dir, "src"), filepath.Join(dir, "src", "a.txt"), filepath.Join(dir, "tine.toml")} {
		os.Chown(p, ann.uid, ann.gid)
	}
	e.ws = append(e.ws, dir) // released by root at cleanup if the test stops half-way
	return e, ann, sock, dir
}

// TestUser_RootsEnvironmentStaysRoots: the system daemon, root's, starts
// the user's services from its own environment: none of root's variables
// (a key, its ssh agent) reach them, only the user's identity and the
// locale. (Before, all of root's environment but a few store variables
// went along.)
func TestUser_RootsEnvironmentStaysRoots(t *testing.T) {
	_, ann, _, dir := userWorkspace(t)
	toml := "[[service]]\nname = \"svc\"\ncommand = \"env > svc.env; exec sleep 600\"\nready = { command = \"test -s svc.env\" }\n"
	if err := os.WriteFile(filepath.Join(dir, "tine.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	ann.ok(dir, "init", ".")
	ann.ok(dir, "start", "source")
	b, err := os.ReadFile(filepath.Join(dir, "svc.env"))
	if err != nil {
		t.Fatal(err)
	}
	env := string(b)
	if strings.Contains(env, "sk-root") || strings.Contains(env, "roots-agent") {
		t.Errorf("root's variables reached the user's service:\n%s", env)
	}
	if !strings.Contains(env, "USER=tineuser") || !strings.Contains(env, "HOME="+ann.home) {
		t.Errorf("the service's environment is not the user's:\n%s", env)
	}
}

// TestUser_ThroughTheSystemDaemon: a normal user, with the system daemon
// up, gets copy-on-write workspaces and runs everything in them as
// themselves: init (overlay), fork, exec (streams and exit status), start
// with a service, fork-run with a command agent, merge and release; another
// user sees none of it; without the daemon, what needs privileges says
// which command starts it.
func TestUser_ThroughTheSystemDaemon(t *testing.T) {
	e, ann, sock, dir := userWorkspace(t)
	var ref engine.Ref
	ann.okJSON(dir, &ref, "init", "--json", ".")
	if ref.Workspace.Backend != "overlay" || ref.Workspace.UID != ann.uid {
		t.Fatalf("init through the daemon: backend %s, owner %d; want overlay, %d", ref.Workspace.Backend, ref.Workspace.UID, ann.uid)
	}
	var fr engine.ForkResult
	ann.okJSON(dir, &fr, "fork", "source", "--json")
	fork := fr.Forks[0].Name

	r := ann.tine(dir, nil, "exec", fork, "--", "sh", "-c", "id -u; pwd; echo made > made.txt; echo oops >&2; exit 3")
	if r.code != 3 || r.stdout != strconv.Itoa(ann.uid)+"\n"+dir+"\n" || r.stderr != "oops\n" {
		t.Errorf("exec through the daemon: %v", r)
	}
	if r := ann.tine(dir, nil, "exec", fork, "--", "no-such-command"); r.code != 127 {
		t.Errorf("exec of a missing command: %v, want exit 127", r)
	}
	var rows []runRow
	ann.okJSON(dir, &rows, "ls", "--json")
	view := ""
	for _, row := range rows {
		if row.Name == fork {
			view = row.Path
		}
	}
	if view == "" || uidOf(t, filepath.Join(view, "made.txt")) != ann.uid {
		t.Errorf("the fork's new file (view %q) does not belong to uid %d", view, ann.uid)
	}

	ann.ok(dir, "start", "source")
	var ps runtime.PS
	ann.okJSON(dir, &ps, "ps", "source", "--json")
	if ps.State != runtime.ProcRunning {
		t.Errorf("ps through the daemon: %+v, want running", ps)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "svc.uid")); strings.TrimSpace(string(got)) != strconv.Itoa(ann.uid) {
		t.Errorf("the service ran as uid %q, want %d", got, ann.uid)
	}
	ann.ok(dir, "stop", "source")

	var rep forkrun.Report
	ann.okJSON(dir, &rep, "fork-run", "source", "--json", "-n", "1", "--prompt", "say who you are", "--merge-mode", "manual",
		"--agent-cmd", "id -u > agent.uid")
	if len(rep.Forks) != 1 {
		t.Fatalf("fork-run through the daemon: %+v", rep)
	}
	if out := ann.ok(dir, "exec", rep.Forks[0].Name, "--", "cat", "agent.uid"); out != strconv.Itoa(ann.uid)+"\n" {
		t.Errorf("the agent ran as uid %q, want %d", out, ann.uid)
	}

	ann.ok(dir, "merge", fork)
	if uidOf(t, filepath.Join(dir, "made.txt")) != ann.uid {
		t.Errorf("made.txt merged into the source does not belong to uid %d", ann.uid)
	}

	// Another user: nothing of ann's exists for them.
	bob := asUser(t, "nobody", sock)
	var none []runRow
	bob.okJSON("/", &none, "ls", "--json")
	if len(none) != 0 {
		t.Errorf("another user lists %d of ann's runs", len(none))
	}
	for _, args := range [][]string{{"exec", "app/source", "--", "id"}, {"diff", "app/source"}, {"stop", "app/source"},
		{"release", "app"}, {"fork", "app/source"}} {
		if r := bob.tine("/", nil, args...); r.code != exitNotFound || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("another user: %v, want not found (exit 3)", r)
		}
	}
	if r := bob.tine("/", nil, "init", dir); r.code != exitUnsupported {
		t.Errorf("another user's init of ann's directory: %v, want refused (exit 7)", r)
	}

	ann.ok("/", "release", "--unmerged", dir)
	if uidOf(t, filepath.Join(dir, "made.txt")) != ann.uid || uidOf(t, dir) != ann.uid {
		t.Errorf("after release the files do not belong to uid %d", ann.uid)
	}
	e.ws = e.ws[:len(e.ws)-1]

	// No daemon: the copy backend works; what needs privileges says how to get them, in one line.
	alone := []string{"TINE_DAEMON_SOCKET=" + filepath.Join(publicDir(t), "none.sock")}
	local := filepath.Join(publicDir(t), "local")
	os.Mkdir(local, 0o755)
	os.Chown(local, ann.uid, ann.gid)
	if r := ann.tine(local, alone, "init", "."); r.code != 0 || !strings.Contains(r.stdout, "backend copy") {
		t.Fatalf("init without the daemon: %v", r)
	}
	r = ann.tine(local, alone, "start", "source")
	if r.code != exitUnsupported || !strings.Contains(r.stderr, "sudo tine setup daemon") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("start without the daemon: %v, want exit 7 and one line naming sudo tine setup daemon", r)
	}
}

// TestUser_ChoosesThroughTheSystemDaemon: what a normal user needs to
// choose and resolve a fork-run goes through the system daemon and prints
// what root's tine prints of the same store (summary, compare, cost, tree,
// path, logs, events, pending, port; export and stats where the output
// moves with time), approve and refuse decide as the user; gc and doctor
// are root's; another user finds none of it.
func TestUser_ChoosesThroughTheSystemDaemon(t *testing.T) {
	e, ann, sock, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	var rep forkrun.Report
	ann.okJSON(dir, &rep, "fork-run", "source", "--json", "-n", "2", "--prompt", "write it", "--merge-mode", "manual",
		"--agent-cmd", "echo done > done.txt")
	if len(rep.Forks) != 2 || rep.Group == "" {
		t.Fatalf("fork-run through the daemon: %+v", rep)
	}
	f1, f2, g := "app/"+rep.Forks[0].Name, "app/"+rep.Forks[1].Name, rep.Group
	ann.ok(dir, "start", "app/source")
	host := ann.ok(dir, "port", "app/source", "8080", "--host-port", "0")
	if !strings.Contains(host, "-> app/source:8080") {
		t.Errorf("port through the daemon: %q", host)
	}
	if r := ann.tine(dir, nil, "port", "app/source", "80", "--host-port", "80"); r.code != exitUnsupported || !strings.Contains(r.stderr, "1024") {
		t.Errorf("a normal user's port on host port 80: %v, want refused (exit 7)", r)
	}

	// Code in a fork asks to merge it and to discard the other: a person decides.
	pending := regexp.MustCompile(`pending as (a[0-9a-z]{8})`)
	asks := map[string]string{}
	for run, action := range map[string]string{f1: "merge", f2: "discard"} {
		id := pending.FindStringSubmatch(ann.ok(dir, "exec", run, "--", "tine", "request", action))
		if id == nil {
			t.Fatalf("tine request %s in %s: no approval pending", action, run)
		}
		asks[action] = id[1]
	}

	same := [][]string{
		{"summary", f1}, {"summary", f1, "--json"}, {"compare", g}, {"compare", g, "--json"}, {"cost", g}, {"cost", f2, "--json"},
		{"log", f1}, {"tree", "app"}, {"tree", "--json"}, {"path", f1}, {"path", f1, "--json"}, {"logs", "app/source", "svc"},
		{"logs", "app/source", "--tail", "1"}, {"events", "app"}, {"events", "--json"}, {"pending", "--json"}, {"port", "app/source"},
	}
	for _, args := range same {
		mine, roots := ann.tine(dir, nil, args...), e.tine(args...)
		if mine.code != 0 || mine.stdout != roots.stdout || mine.stdout == "" {
			t.Errorf("tine %v through the daemon:\n%v\nroot's:\n%v", args, mine, roots)
		}
	}
	if out := ann.follow(dir, 1500*time.Millisecond, "logs", "app/source", "svc", "--follow"); !strings.HasPrefix(out, "--- tine: starting svc") || !strings.HasSuffix(out, "\nsvc up\n") {
		t.Errorf("logs --follow through the daemon printed %q", out)
	}
	if out := ann.follow(dir, 1500*time.Millisecond, "events", "app", "--follow"); !strings.Contains(out, "publish") {
		t.Errorf("events --follow through the daemon printed %q", out)
	}
	if out := ann.ok(dir, "export", g); !strings.Contains(out, "# tine: group "+g) || !strings.Contains(out, rep.Forks[1].Name) {
		t.Errorf("export through the daemon: %s", out)
	}
	var st struct {
		Run   string `json:"run"`
		State string `json:"state"`
	}
	ann.okJSON(dir, &st, "stats", "app/source", "--json")
	if st.Run != "source" || st.State != runtime.ProcRunning {
		t.Errorf("stats through the daemon: %+v", st)
	}
	for _, args := range [][]string{{"gc"}, {"doctor"}} {
		if r := ann.tine(dir, nil, args...); r.code != exitUnsupported || !strings.Contains(r.stderr, "sudo tine "+args[0]) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("tine %s as a normal user: %v, want exit 7 and one line saying it is root's", args[0], r)
		}
	}

	// Another user: none of it is there, and they decide nothing of ann's.
	bob := asUser(t, "nobody", sock)
	for _, args := range [][]string{{"summary", f1}, {"compare", g}, {"cost", g}, {"cost", f1}, {"export", g}, {"tree", "app"},
		{"path", f1}, {"logs", "app/source"}, {"events", "app"}, {"pending", "app"}, {"stats", "app/source"}, {"port", "app/source"},
		{"port", "app/source", "9000"}, {"approve", asks["merge"]}, {"refuse", asks["discard"]}} {
		if r := bob.tine("/", nil, args...); r.code != exitNotFound || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("another user: %v, want not found (exit 3)", r)
		}
	}
	for _, args := range [][]string{{"pending", "--json"}, {"events", "--json"}, {"tree", "--json"}} {
		if out := strings.TrimSpace(bob.ok("/", args...)); out != "[]" && out != "" {
			t.Errorf("another user: tine %v shows %s", args, out)
		}
	}

	if out := ann.ok(dir, "approve", asks["merge"]); !strings.Contains(out, "approved "+asks["merge"]) {
		t.Errorf("approve through the daemon: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "done.txt")); string(b) != "done\n" {
		t.Errorf("the approved merge did not land: done.txt = %q", b)
	}
	if out := ann.ok(dir, "refuse", asks["discard"]); !strings.Contains(out, "refused "+asks["discard"]) {
		t.Errorf("refuse through the daemon: %q", out)
	}
	var evs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(e.ok("events", "app", "--json")), "\n") {
		var ev map[string]any
		json.Unmarshal([]byte(l), &ev)
		evs = append(evs, ev)
	}
	decided := 0
	for _, ev := range evs {
		d, _ := ev["detail"].(map[string]any)
		if k, _ := ev["kind"].(string); (k == "approval_approved" || k == "approval_refused") && fmt.Sprint(d["by"]) == "tineuser" {
			decided++
		}
	}
	if decided < 2 {
		t.Errorf("the decisions are not recorded as tineuser's: %v", evs)
	}
	ann.ok(dir, "stop", "app/source")
	ann.ok("/", "release", "--unmerged", dir)
	e.ws = e.ws[:len(e.ws)-1]
}

// TestUser_ForkRunWithNoWorkFails: a normal user's fork-run whose agents
// all fail runs in the daemon and exits 1 with the same line root's does
// (it exited 0), and a refusal from inside a run through the system daemon
// names no daemon to start (it said 'start it with sudo tine setup
// daemon', the daemon being up: the system socket is hidden in a run).
func TestUser_ForkRunWithNoWorkFails(t *testing.T) {
	_, ann, _, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	r := ann.tine(dir, nil, "fork-run", "source", "-n", "2", "--prompt", "do it", "--agent-cmd", "exit 3")
	if r.code != exitError || !strings.Contains(r.stderr, "nothing to judge") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("a fork-run whose agents all failed: %v, want exit 1 and one line", r)
	}
	if r := ann.tine(dir, nil, "fork-run", "source", "--json", "-n", "1", "--prompt", "do it", "--agent-cmd", "true"); r.code != exitError || r.stderr != "" {
		t.Errorf("with --json: %v, want exit 1, the report alone", r)
	}
	var fr engine.ForkResult
	ann.okJSON(dir, &fr, "fork", "source", "--json")
	r = ann.tine(dir, nil, "exec", fr.Forks[0].Name, "--", "tine", "effect", "http", "GET", "http://127.0.0.1:9/")
	if r.code != exitUnsupported || !strings.Contains(r.stderr, "refused from a fork") || strings.Contains(r.stderr, "setup daemon") {
		t.Errorf("an effect from a fork: %v, want the daemon's refusal alone (exit 7)", r)
	}
}

// TestUser_ForkRunAgentsGetTheirEnvironment: a normal user's fork-run
// runs in the daemon, and its agents and tests start from the user's
// environment, as in their own tine (they got the daemon's: claude said
// "Not logged in" with the user's ANTHROPIC_API_KEY set), the fork's
// secrets withheld as ever.
func TestUser_ForkRunAgentsGetTheirEnvironment(t *testing.T) {
	_, ann, _, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	vars := []string{"MY_API_BASE=http://127.0.0.1:9", "GITHUB_TOKEN=hidden"}
	show := `echo "$MY_API_BASE ${GITHUB_TOKEN:-none} $TINE_ROLE $HOME"`
	r := ann.tine(dir, vars, "fork-run", "source", "--json", "-n", "1", "--prompt", "p", "--merge-mode", "manual",
		"--agent-cmd", show+" > agent.env", "--test", show+" > test.env")
	var rep forkrun.Report
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || len(rep.Forks) != 1 {
		t.Fatalf("fork-run: %v", r)
	}
	want := "http://127.0.0.1:9 none fork " + ann.home + "\n"
	for _, f := range []string{"agent.env", "test.env"} {
		if got := ann.ok(dir, "exec", rep.Forks[0].Name, "--", "cat", f); got != want {
			t.Errorf("%s: %q, want %q", f, got, want)
		}
	}
}

// TestUser_DemoThroughTheSystemDaemon: a normal user's tine demo runs
// through the system daemon, as their fork-run does (it said "tine demo
// needs root"): the sample is forked three ways, judged, the winner
// merged, and the source's tests pass; the workspace is the user's.
func TestUser_DemoThroughTheSystemDaemon(t *testing.T) {
	e, ann, _, _ := userWorkspace(t)
	dir := filepath.Join(publicDir(t), "calc")
	os.Chown(filepath.Dir(dir), ann.uid, ann.gid)
	e.ws = append(e.ws, dir)
	r := ann.tine(filepath.Dir(dir), nil, "demo", "--dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, "the source's tests now pass") {
		t.Fatalf("tine demo as a normal user: %v", r)
	}
	if uidOf(t, filepath.Join(dir, "calc.sh")) != ann.uid {
		t.Errorf("the demo's sample is not the user's")
	}
	if out := ann.ok(dir, "ls"); !strings.Contains(out, "calc") || !strings.Contains(out, "merged") {
		t.Errorf("tine ls after the demo:\n%s", out)
	}
	ann.ok(filepath.Dir(dir), "release", "--unmerged", dir)
}

// TestUser_JudgeStatsThroughTheSystemDaemon: tine judge stats and
// reset-weights go through the daemon for a normal user (they said the
// command does not go through it), counting only the groups of their own
// workspaces; root's count every one, and another's workspace is not
// found.
func TestUser_JudgeStatsThroughTheSystemDaemon(t *testing.T) {
	e, ann, _, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	resolve := func(src string, run func(args ...string) result) {
		t.Helper()
		var rep forkrun.Report
		r := run("fork-run", src, "--json", "-n", "2", "--prompt", "p", "--merge-mode", "manual", "--agent-cmd", "echo x > f.txt")
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || len(rep.Forks) != 2 {
			t.Fatalf("fork-run: %v", r)
		}
		if r := run("choose", rep.Group, rep.Forks[0].Name, "--merge"); r.code != 0 {
			t.Fatalf("choose: %v", r)
		}
	}
	resolve("source", func(args ...string) result { return ann.tine(dir, nil, args...) })
	e.ok("init", e.workspaceDir("rootws"))
	resolve("rootws/source", e.tine)
	var mine, all forkrun.JudgeStats
	ann.okJSON(dir, &mine, "judge", "stats", "--json")
	e.okJSON(&all, "judge", "stats", "--json")
	if mine.All.Groups != 1 || len(mine.Weights) != 1 || mine.Weights["app"].Features == nil {
		t.Errorf("the user's judge stats: %d group(s), weights of %v; want their one group and workspace", mine.All.Groups, maps.Keys(mine.Weights))
	}
	if all.All.Groups < 2 || len(all.Weights) < 2 {
		t.Errorf("root's judge stats: %d group(s), %d workspaces' weights; want every one", all.All.Groups, len(all.Weights))
	}
	if out := ann.ok(dir, "judge", "reset-weights", "app"); !strings.Contains(out, "reset") {
		t.Errorf("reset-weights of the user's workspace: %q", out)
	}
	if r := ann.tine(dir, nil, "judge", "reset-weights", "rootws"); r.code != exitNotFound {
		t.Errorf("reset-weights of root's workspace by the user: %v, want not found", r)
	}
}

// TestUser_ForkRefreshedSignInReachesTheHome: Claude Code's and codex's
// refresh tokens rotate at each use, and a fork's home is a layer of its
// own: a sign-in refreshed by an agent in a fork stayed there, the
// owner's real home kept the retired token, and the person was signed out
// at their next refresh. Now the newer sign-in reaches the home once the
// agent ends; one of another account, one not a sign-in, and one reached
// through a symbolic link the fork planted do not.
func TestUser_ForkRefreshedSignInReachesTheHome(t *testing.T) {
	e, ann, _, dir := userWorkspace(t)
	claudeFile, codexFile := plantSignIns(t, ann)
	ann.ok(dir, "init", ".")
	forkRun := func(script string) {
		t.Helper()
		r := ann.tine(dir, nil, "fork-run", "source", "--json", "-n", "1", "--prompt", "p", "--merge-mode", "manual", "--agent-cmd", script)
		if r.code != 0 {
			t.Fatalf("fork-run: %v", r)
		}
	}
	forkRun(save("~/.claude/.credentials.json", claude("rt-new", 2000)) + " && " +
		save("~/.codex/auth.json", codex("rt-new", "acct-1", "2026-12-01T08:00:00Z")) + " && echo x > f.txt")
	if b, _ := os.ReadFile(claudeFile); !strings.Contains(string(b), "rt-new") {
		t.Errorf("claude's sign-in in the home after a fork refreshed it: %s", b)
	}
	if b, _ := os.ReadFile(codexFile); !strings.Contains(string(b), "rt-new") {
		t.Errorf("codex's sign-in in the home after a fork refreshed it: %s", b)
	}
	if uidOf(t, claudeFile) != ann.uid {
		t.Error("the carried sign-in is not the user's")
	}
	if fi, err := os.Stat(claudeFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the carried sign-in's mode: %v %v", fi.Mode(), err)
	}
	// The person refreshes in the home afterwards: the stopped fork's copy,
	// now the older, is replaced (by the daemon, within its 5 s round).
	layers, _ := filepath.Glob(filepath.Join(e.home, "workspaces", "*", "runs", "*", "home", "upper", ".claude", ".credentials.json"))
	if len(layers) != 1 {
		t.Fatalf("the fork's layers holding claude's sign-in: %q, want one", layers)
	}
	writeFiles(t, ann, filepath.Dir(claudeFile), map[string]string{".credentials.json": claude("rt-person", 3000)})
	var got []byte
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if got, _ = os.ReadFile(layers[0]); strings.Contains(string(got), "rt-person") {
			break
		}
	}
	if !strings.Contains(string(got), "rt-person") {
		t.Errorf("the stopped fork's copy after the person refreshed in the home: %s", got)
	}
	forkRun(save("~/.codex/auth.json", codex("rt-evil", "acct-2", "2027-01-01T00:00:00Z")) + " && " +
		save("~/.claude/.credentials.json", `{"claudeAiOauth":{}}`) + " && echo x > f.txt")
	forkRun("rm -rf ~/.claude && ln -s /etc ~/.claude && echo x > f.txt")
	if b, _ := os.ReadFile(codexFile); !strings.Contains(string(b), "rt-new") {
		t.Errorf("a fork's sign-in of another account reached the home: %s", b)
	}
	if b, _ := os.ReadFile(claudeFile); !strings.Contains(string(b), "rt-person") {
		t.Errorf("a fork's file that is not a sign-in, or one through its symbolic link, reached the home: %s", b)
	}
}

// plantSignIns puts the agents' sign-ins (an old refresh, "rt-old") in
// the user's real home, removed at cleanup, and returns claude's and
// codex's files; it skips the test where the user has their own.
func plantSignIns(t *testing.T, ann *localUser) (claudeFile, codexFile string) {
	t.Helper()
	claudeFile, codexFile = filepath.Join(ann.home, ".claude", ".credentials.json"), filepath.Join(ann.home, ".codex", "auth.json")
	for _, f := range []string{claudeFile, codexFile} {
		if _, err := os.Lstat(f); err == nil {
			t.Skipf("%s exists: not overwriting the user's own", f)
		}
		if _, err := os.Lstat(filepath.Dir(f)); err != nil {
			os.Mkdir(filepath.Dir(f), 0o700)
			os.Chown(filepath.Dir(f), ann.uid, ann.gid)
			t.Cleanup(func() { os.RemoveAll(filepath.Dir(f)) })
		}
		t.Cleanup(func() { os.Remove(f) })
	}
	writeFiles(t, ann, filepath.Dir(claudeFile), map[string]string{".credentials.json": claude("rt-old", 1000)})
	writeFiles(t, ann, filepath.Dir(codexFile), map[string]string{"auth.json": codex("rt-old", "acct-1", "2026-12-01T00:00:00Z")})
	return claudeFile, codexFile
}

// claude and codex are sign-in files of refresh token rt, as the agents
// write them.
func claude(rt string, at int64) string {
	return fmt.Sprintf(`{"claudeAiOauth":{"accessToken":"at-%s","refreshToken":"%s","expiresAt":%d}}`, rt, rt, at)
}

func codex(rt, account, at string) string {
	return fmt.Sprintf(`{"tokens":{"access_token":"at-%s","refresh_token":"%s","account_id":"%s"},"last_refresh":"%s"}`, rt, rt, account, at)
}

// save is a shell command that saves body to file as the agents do: a new
// file renamed over the old.
func save(file, body string) string {
	return fmt.Sprintf("printf '%%s' '%s' > %s.new && mv %s.new %s", body, file, file, file)
}

// TestUser_ForkRunFindsTheAgentOnTheirPATH: a normal user's fork-run
// through the system daemon finds the agent on the user's PATH (an npm
// user prefix, ~/bin), not the daemon's, and gives Claude the permissions
// the user may have (bypassPermissions), not root's. Before, it failed
// "agent binary not found" (exit 7) unless tine.toml named an absolute
// path, and the user's Claude got root's acceptEdits.
func TestUser_ForkRunFindsTheAgentOnTheirPATH(t *testing.T) {
	_, ann, _, dir := userWorkspace(t)
	bin := filepath.Join(ann.home, "tine-test-bin")
	os.MkdirAll(bin, 0o755)
	t.Cleanup(func() { os.RemoveAll(bin) })
	// A stand-in for a claude installed under the user's prefix: it records
	// how tine started it, which is what this test is about.
	os.WriteFile(filepath.Join(bin, "claude-of-ann"), []byte("#!/bin/sh\nprintf '%s\\n' \"$@\" > claude.args\n"), 0o755)
	os.WriteFile(filepath.Join(bin, "agent-of-ann"), []byte("#!/bin/sh\nid -u > agent.uid\n"), 0o755)
	toml := "[agent.mine]\nkind = \"claude\"\nbinary = \"claude-of-ann\"\n"
	os.WriteFile(filepath.Join(dir, "tine.toml"), []byte(toml), 0o644)
	os.Chown(filepath.Join(dir, "tine.toml"), ann.uid, ann.gid)
	ann.ok(dir, "init", ".")
	path := []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin"}

	r := ann.tine(dir, path, "fork-run", "source", "--json", "-n", "1", "--prompt", "p", "--merge-mode", "manual", "--agent", "mine")
	var rep forkrun.Report
	if json.Unmarshal([]byte(r.stdout), &rep) != nil || len(rep.Forks) != 1 {
		t.Fatalf("fork-run with claude on the user's PATH: %v", r)
	}
	args := ann.ok(dir, "exec", rep.Forks[0].Name, "--", "cat", "claude.args")
	if !strings.Contains(args, "--permission-mode\nbypassPermissions\n") {
		t.Errorf("the user's claude was started with %q, want bypassPermissions", args)
	}

	r = ann.tine(dir, path, "fork-run", "source", "--json", "-n", "1", "--prompt", "p", "--merge-mode", "manual", "--agent-cmd", "agent-of-ann")
	if json.Unmarshal([]byte(r.stdout), &rep) != nil || len(rep.Forks) != 1 {
		t.Fatalf("fork-run with a command agent on the user's PATH: %v", r)
	}
	if got := ann.ok(dir, "exec", rep.Forks[0].Name, "--", "cat", "agent.uid"); got != strconv.Itoa(ann.uid)+"\n" {
		t.Errorf("the command agent ran as %q", got)
	}
}

// TestUser_ServeWhileTheSystemDaemonRuns: a normal user's tine serve,
// while the system daemon serves them, says where their workspaces are
// (the system daemon's, with their names and paths), that tine dashboard
// prints their dashboard's URL there, and how to run a daemon of their
// own, exit 4; before, it silently started a second, empty daemon over a
// state directory of theirs, then named no dashboard.
func TestUser_ServeWhileTheSystemDaemonRuns(t *testing.T) {
	_, ann, sock, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, ann.bin, "serve")
	cmd.Env, cmd.Dir = ann.vars, dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tine serve as a normal user started a daemon of its own while the system daemon serves them:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Errorf("tine serve: %v, want exit 4\n%s", err, out.String())
	}
	for _, want := range []string{sock, "app", dir, "tine dashboard", "TINE_HOME="} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("tine serve does not say %q:\n%s", want, out.String())
		}
	}
	if strings.Count(strings.TrimSpace(out.String()), "\n") > 0 {
		t.Errorf("not one line:\n%s", out.String())
	}
}

// TestUser_MCPThroughTheSystemDaemon: a normal user's tine mcp talks to
// the system daemon that serves them, as their other commands do: their
// agent sees their workspace, and fork_run's command runs in the forks as
// them, in their environment, leaving no supervisor. Before, tine mcp
// looked for a daemon in the user's own state directory ("is tine serve
// running?").
func TestUser_MCPThroughTheSystemDaemon(t *testing.T) {
	e, ann, _, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	cmd := exec.Command(ann.bin, "mcp")
	cmd.Env, cmd.Dir, cmd.Stderr = append(append([]string{}, ann.vars...), "TINE_TEST_CALLER_MARK=anns"), dir, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
	c := sdk.NewClient(&sdk.Implementation{Name: "tine-test", Version: "0"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if text, _ := mcpCall(t, cs, false, "list_runs", nil); !strings.Contains(text, dir) {
		t.Errorf("list_runs as the user: %s", text)
	}
	_, fr := mcpCall(t, cs, false, "fork_run", map[string]any{"run": "app/source", "copies": 1, "command": `echo "$(id -u) $TINE_TEST_CALLER_MARK"`})
	ran := fr["ran"].([]any)[0].(map[string]any)
	if want := fmt.Sprintf("%d anns\n", ann.uid); ran["stdout"] != want {
		t.Errorf("fork_run's command as the user: %q, want %q", ran["stdout"], want)
	}
	name := fr["forks"].([]any)[0].(map[string]any)["name"].(string)
	var ps runtime.PS
	e.okJSON(&ps, "ps", "app/"+name, "--json")
	if ps.State != runtime.ProcStopped {
		t.Errorf("%s: supervisor %s after fork_run's command, want stopped", name, ps.State)
	}
}

// TestUser_RealClaudeOnTheirPATH is TestUser_ForkRunFindsTheAgentOnTheirPATH
// with the real Claude Code against the mock Messages API: found on the
// user's PATH only, run through the system daemon as the user, with the
// user's permissions (bypassPermissions), it writes its file in the fork
// with no permission denied.
func TestUser_RealClaudeOnTheirPATH(t *testing.T) {
	requireClaude(t)
	real, _ := exec.LookPath("claude")
	mock := answerMock(t)
	_, ann, _, dir := userWorkspace(t)
	home := publicDir(t)
	bin := filepath.Join(home, "bin")
	os.MkdirAll(bin, 0o755)
	if err := os.Symlink(real, filepath.Join(bin, "claude-of-ann")); err != nil {
		t.Fatal(err)
	}
	hostCmd(t, "/", "chown", "-R", fmt.Sprintf("%d:%d", ann.uid, ann.gid), home)
	os.WriteFile(filepath.Join(dir, "tine.toml"), []byte("[agent.mine]\nkind = \"claude\"\nbinary = \"claude-of-ann\"\n"), 0o644)
	os.Chown(filepath.Join(dir, "tine.toml"), ann.uid, ann.gid)
	ann.ok(dir, "init", ".")
	vars := append(mock.Env(home), "PATH="+bin+":/usr/local/bin:/usr/bin:/bin")
	r := ann.tine(dir, vars, "fork-run", "source", "--json", "-n", "1", "--prompt", "write the answer to answer.txt",
		"--merge-mode", "manual", "--agent", "mine")
	var rep forkrun.Report
	if json.Unmarshal([]byte(r.stdout), &rep) != nil || len(rep.Forks) != 1 {
		t.Fatalf("fork-run with the real claude on the user's PATH: %v", r)
	}
	f := rep.Forks[0]
	if f.Agent.Result != "success" || f.Agent.DenialsTotal != 0 {
		t.Errorf("the user's claude: result %q, denials %d (%s); stderr %s", f.Agent.Result, f.Agent.DenialsTotal, f.Reason, f.AgentStderr)
	}
	if got := ann.ok(dir, "exec", f.Name, "--", "cat", "answer.txt"); got != "42\n" {
		t.Errorf("answer.txt in the fork: %q", got)
	}
}
