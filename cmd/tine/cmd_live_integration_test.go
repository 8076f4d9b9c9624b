//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// webToml declares a service serving the workspace on :3000.
const webToml = `[[service]]
name = "web"
command = "exec /usr/bin/python3 -m http.server 3000 --bind 0.0.0.0"
ready = { port = 3000, timeout = "20s" }
`

// liveWorkspace makes a managed workspace holding files, with network
// isolation when isolate is set.
func liveWorkspace(t *testing.T, isolate bool, files map[string]string) (*env, string) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("requires /usr/bin/python3 for the test services (.ci/run installs it)")
	}
	e := newEnv(t)
	dir := e.workspaceDir("live")
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"init", dir}
	if isolate {
		args = append(args, "--net")
	}
	e.ok(args...)
	return e, dir
}

func (e *env) ps(run string) runtime.PS {
	e.t.Helper()
	var ps runtime.PS
	e.okJSON(&ps, "ps", run, "--json")
	return ps
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestLive_ForksServeTheSamePort(t *testing.T) {
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": webToml, "page.txt": "source\n"})
	out := e.ok("start", "source")
	if !strings.Contains(out, "web") || !strings.Contains(out, "ready") {
		t.Fatalf("tine start: %s", out)
	}
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "-n", "2", "--wait", "--json")
	if len(res.Live) != 2 {
		t.Fatalf("fork of a running run started %d forks: %+v", len(res.Live), res.Live)
	}
	addrs := map[string]string{"source": e.ps("source").Addr}
	for i, rep := range res.Live {
		if !rep.Started || rep.Error != "" || rep.Addr == "" || len(rep.Restarted) != 1 {
			t.Fatalf("fork %d: %+v", i, rep)
		}
		addrs[rep.Run] = rep.Addr
		e.execSh(rep.Run, fmt.Sprintf("echo fork-%d > page.txt", i+1))
	}
	if len(addrs) != 3 || addrs["source"] == addrs["source-1"] || addrs["source-1"] == addrs["source-2"] {
		t.Fatalf("addresses not distinct: %v", addrs)
	}
	for run, addr := range addrs {
		want := run + "\n"
		if run != "source" {
			want = strings.Replace(run, "source-", "fork-", 1) + "\n"
		}
		if got := httpGet(t, "http://"+addr+":3000/page.txt"); got != want {
			t.Errorf("%s at %s:3000 served %q, want %q", run, addr, got, want)
		}
	}
	lsOut := e.ok("ls")
	for _, a := range addrs {
		if !strings.Contains(lsOut, a) {
			t.Errorf("tine ls does not show address %s:\n%s", a, lsOut)
		}
	}
	// Published on the host: both forks behind their own host ports.
	pub := strings.Fields(e.ok("port", "source-2", "3000"))[0]
	if got := httpGet(t, "http://"+pub+"/page.txt"); got != "fork-2\n" {
		t.Errorf("published port %s served %q", pub, got)
	}
	// Discarding a running fork stops it and removes its network link and cgroup.
	id := res.Forks[1].ID
	e.ok("discard", "--unmerged", "--while-running", "source-2")
	if _, err := os.Stat("/sys/class/net/tv" + id); err == nil {
		t.Errorf("veth of discarded %s remains", id)
	}
	for _, dir := range cgroupDirs(id) {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("cgroup %s of discarded run remains", dir)
		}
	}
}

// cgroupDirs are the places run id's cgroup may live in.
func cgroupDirs(id string) []string {
	var out []string
	for _, h := range []string{"unified", "freezer", "memory", "pids", "cpu", "cpuacct", ""} {
		out = append(out, filepath.Join("/sys/fs/cgroup", h, "tine", id))
	}
	return out
}

func TestLive_StopStartLogs(t *testing.T) {
	toml := `[[service]]
name = "ticker"
command = "echo started $TINE_SERVICE in $(hostname); while :; do sleep 0.1; done"
`
	e, dir := liveWorkspace(t, false, map[string]string{"tine.toml": toml, "f": "x\n"})
	e.ok("start", "source")
	ps := e.ps("source")
	if ps.State != runtime.ProcRunning || len(ps.Services) != 1 || ps.Services[0].State != "ready" {
		t.Fatalf("after start: %+v", ps)
	}
	first := ps.Services[0].Pid
	found := false
	for _, p := range ps.Processes {
		found = found || (p.Service == "ticker" && p.NSPid == first)
	}
	if !found {
		t.Errorf("tine ps shows no process of service ticker: %+v", ps.Processes)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(e.ok("logs", "source", "ticker"), "started ticker in source") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if out := e.ok("logs", "source"); !strings.Contains(out, "ticker | started ticker in source") {
		t.Errorf("tine logs source: %q", out)
	}
	e.ok("stop", "source")
	if ps := e.ps("source"); ps.State != runtime.ProcStopped || len(ps.Processes) != 0 {
		t.Errorf("after stop: %+v", ps)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "x\n" {
		t.Errorf("stop touched the files: %q", b)
	}
	e.ok("start", "source")
	if ps := e.ps("source"); ps.State != runtime.ProcRunning || len(ps.Services) != 1 || ps.Services[0].State != "ready" {
		t.Errorf("after restart: %+v", ps)
	}
	if r := e.tine("logs", "source", "nosuch"); r.code != 3 {
		t.Errorf("logs of a missing service: %v", r)
	}
}

func TestLive_FreezeDuringFork(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"seed": "x\n"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	writer := exec.CommandContext(ctx, tineBin, "exec", "source", "--", "sh", "-c",
		`i=0; while :; do i=$((i+1)); echo "line $i" >> log.txt; done`)
	writer.Env = e.vars
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); writer.Wait() }() // a failed check must not wait on a writer nobody stops
	waitFor(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
		return strings.Count(string(b), "\n") > 2000
	})
	for i := range 3 {
		var res engine.ForkResult
		e.okJSON(&res, "fork", "source", "--live", "none", "--json")
		b, err := os.ReadFile(filepath.Join(e.path(res.Forks[0].Name), "log.txt"))
		if err != nil {
			t.Fatal(err)
		}
		got := string(b)
		if !strings.HasSuffix(got, "\n") {
			t.Fatalf("fork %d: log.txt ends in a torn line: %q", i, got[max(0, len(got)-20):])
		}
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		for k, l := range lines {
			if l != fmt.Sprintf("line %d", k+1) {
				t.Fatalf("fork %d: line %d is %q", i, k+1, l)
			}
		}
		var src []byte
		waitFor(t, func() bool { // the writer goes on in the source (later on a loaded machine)
			src, _ = os.ReadFile(filepath.Join(dir, "log.txt"))
			return len(src) > len(got)
		})
		if !strings.HasPrefix(string(src), got) {
			t.Fatalf("fork %d: its %d bytes are not a prefix of the source's growing log (%d bytes)", i, len(got), len(src))
		}
	}
	e.ok("stop", "source") // ends the writer
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLive_SupervisorCrash(t *testing.T) {
	toml := "[[service]]\nname = \"sleeper\"\ncommand = \"exec sleep 1000\"\n"
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": toml})
	e.ok("start", "source")
	ps := e.ps("source")
	id := ps.Run.ID
	if err := syscall.Kill(ps.Supervisor, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return e.ps("source").State == runtime.ProcDead })
	if out := e.ok("ps", "source"); !strings.Contains(out, "dead") || !strings.Contains(out, "tine start source") {
		t.Errorf("tine ps after the supervisor died: %q", out)
	}
	if ls := e.ls(); len(ls) != 1 || ls[0].Processes != runtime.ProcDead {
		t.Errorf("tine ls after the supervisor died: %+v", ls)
	}
	var gc runtime.GCResult
	e.okJSON(&gc, "gc", "--json")
	if !slices.Contains(gc.Cgroups, id) || !slices.Contains(gc.Supervisors, "source") {
		t.Errorf("tine gc removed %+v; want run %s's cgroup and supervisor files", gc, id)
	}
	for _, dir := range cgroupDirs(id) {
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("cgroup %s remains after gc", dir)
		}
	}
	if _, err := os.Stat("/sys/class/net/tv" + id); err == nil {
		t.Errorf("veth remains after gc") // the kernel removes it with the namespace, or gc does
	}
	if out := e.ok("start", "source"); !strings.Contains(out, "recovered") {
		t.Errorf("tine start after a crash: %q", out)
	}
	if ps := e.ps("source"); ps.State != runtime.ProcRunning || len(ps.Services) != 1 || ps.Services[0].State != "ready" {
		t.Errorf("after recovery: %+v", ps)
	}
}

// tine.toml's limits reach the run's cgroup; tine exec commands run inside
// it with the run's identity in their environment.
func TestLive_LimitsAndIdentity(t *testing.T) {
	toml := "[limits]\nmemory = \"256M\"\npids = 64\ncpu = 0.5\n"
	e, dir := liveWorkspace(t, false, map[string]string{"tine.toml": toml})
	// --keep: the supervisor exec launches stays, so its cgroup can be read.
	out := e.ok("exec", "--keep", "source", "--", "sh", "-c", `echo "$TINE_RUN $TINE_ROLE $(hostname) $TINE_WORKSPACE $TINE_WORKSPACE_PATH"; cat /proc/self/cgroup`)
	if !strings.HasPrefix(out, "source source source live "+dir+"\n") {
		t.Errorf("identity inside the run: %q", out)
	}
	id := e.ps("source").Run.ID
	if !strings.Contains(out, "/tine/"+id) {
		t.Errorf("tine exec's command is not in the run's cgroup:\n%s", out)
	}
	checked := 0
	for file, want := range map[string]string{
		"/sys/fs/cgroup/pids/tine/" + id + "/pids.max":                "64",
		"/sys/fs/cgroup/memory/tine/" + id + "/memory.limit_in_bytes": strconv.Itoa(256 << 20),
		"/sys/fs/cgroup/unified/tine/" + id + "/pids.max":             "64",
		"/sys/fs/cgroup/tine/" + id + "/memory.max":                   strconv.Itoa(256 << 20),
	} {
		b, err := os.ReadFile(file)
		if err != nil {
			continue // this host's layout has no such file
		}
		checked++
		if got := strings.TrimSpace(string(b)); got != want {
			t.Errorf("%s = %s, want %s", file, got, want)
		}
	}
	if checked < 2 {
		t.Errorf("found %d of the run's memory and pids limit files; want both", checked)
	}
	var stats struct {
		Stats struct {
			Pids int `json:"pids"`
		} `json:"stats"`
	}
	e.okJSON(&stats, "stats", "source", "--json")
	if stats.Stats.Pids < 1 {
		t.Errorf("tine stats shows no process: %+v", stats)
	}
}

// Merging into a running run applies the plan with it frozen; its
// processes run on and see the merged files.
func TestLive_MergeIntoRunningTarget(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"tine.toml": webTomlLoopback, "page.txt": "before\n"})
	e.ok("start", "source")
	before := e.ps("source").Services[0].Pid
	e.ok("fork", "source", "--live", "none")
	e.execSh("source-1", "echo merged > page.txt")
	e.ok("merge", "source-1", "--filesystem")
	if b, _ := os.ReadFile(filepath.Join(dir, "page.txt")); string(b) != "merged\n" {
		t.Errorf("merged file: %q", b)
	}
	ps := e.ps("source")
	if ps.State != runtime.ProcRunning || ps.Services[0].Pid != before || ps.Stats == nil || ps.Stats.Frozen {
		t.Errorf("the target after the merge: %+v", ps)
	}
	if got := e.execSh("source", "cat page.txt"); got != "merged\n" {
		t.Errorf("inside the running target: %q", got)
	}
	var evs []jsonEvent
	e.okJSON(&evs, "log", "source", "--json")
	if evs[len(evs)-1].Kind != "merged_into" {
		t.Errorf("last event of the target: %s", evs[len(evs)-1].Kind)
	}
}

const webTomlLoopback = `[[service]]
name = "web"
command = "exec /usr/bin/python3 -m http.server 3999 --bind 127.0.0.1"
ready = { port = 3999, timeout = "20s" }
`

// tine fork of a running run returns once the forks' services run, saying
// which are still starting; --wait waits for their ready checks.
func TestLive_ForkSaysServicesReadyOrStarting(t *testing.T) {
	// Ready in the source at once; in a fork once a file named after it is
	// in its view.
	toml := `[[service]]
name = "web"
command = "exec sleep 1000"
ready = { command = "[ \"$TINE_RUN\" = source ] || test -e flag-$TINE_RUN", timeout = "30s" }
`
	e, dir := liveWorkspace(t, false, map[string]string{"tine.toml": toml})
	e.ok("start", "source")
	t0 := time.Now()
	out := e.ok("fork", "source", "--name", "early")
	if !strings.Contains(out, "services: web starting (ready checks go on") || time.Since(t0) > 20*time.Second {
		t.Errorf("tine fork without --wait (%v):\n%s", time.Since(t0), out)
	}
	if st := e.ps("early").Services; len(st) != 1 || st[0].State != "starting" {
		t.Errorf("early's services before its flag: %+v", st)
	}
	if err := os.WriteFile(filepath.Join(e.path("early"), "flag-early"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for e.ps("early").Services[0].State != "ready" {
		if time.Now().After(deadline) {
			t.Fatalf("early's web never became ready: %+v", e.ps("early").Services)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A flag in the source's files is in the fork's from its start: with
	// --wait the fork answers once web is ready.
	if err := os.WriteFile(filepath.Join(dir, "flag-waited"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--name", "waited", "--wait", "--json")
	if len(res.Live) != 1 || len(res.Live[0].Services) != 1 || res.Live[0].Services[0].State != "ready" {
		t.Errorf("tine fork --wait: %+v", res.Live)
	}
}

// A descriptor tine was started with (one a shell or a harness left open)
// does not reach the services: it pinned what it named (a /dev/null of a
// mount namespace gone) and kept CRIU from dumping a service.
func TestLive_ServicesGetNoStrayDescriptor(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"tine.toml": "[[service]]\nname = \"fds\"\ncommand = \"ls -l /proc/self/fd > fds.txt; exec sleep 600\"\nready = { command = \"test -s fds.txt\" }\n"})
	stray, err := os.CreateTemp(t.TempDir(), "stray")
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	cmd := exec.Command(tineBin, "start", "source")
	cmd.Env = e.vars
	for range 8 { // fds 3 to 10, not close-on-exec: above what tine passes its children itself
		cmd.ExtraFiles = append(cmd.ExtraFiles, stray)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tine start: %v\n%s", err, out)
	}
	defer e.ok("stop", "source")
	b, err := os.ReadFile(filepath.Join(dir, "fds.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), stray.Name()) {
		t.Errorf("the service got the descriptor tine start was given:\n%s", b)
	}
}
