package runtime_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/runenv"
	"github.com/tinehq/tine/runtime"
)

// whoToml runs one service that writes the name of the run it runs in to
// who.txt, in the run's view, and stays up.
const whoToml = `[[service]]
name = "who"
command = "echo $TINE_RUN > who.txt; exec sleep 1000"
`

func TestStartStop_Service(t *testing.T) {
	f := newFixture(t, "", map[string]string{"tine.toml": whoToml})
	src := f.w.Source.Run.ID
	if st, pid := f.rt.ProcState(f.run(t, src)); st != runtime.ProcStopped || pid != 0 {
		t.Fatalf("before Start: %s %d, want stopped", st, pid)
	}
	res, err := f.rt.Start(f.ctx, src, runtime.StartOptions{Services: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Launched || len(res.Services) != 1 || res.Services[0].Name != "who" {
		t.Fatalf("Start: %+v", res)
	}
	r := f.run(t, src)
	if st, pid := f.rt.ProcState(r); st != runtime.ProcRunning || pid != res.Pid || r.Run.Proc != tine.ProcRunning {
		t.Fatalf("after Start: %s %d (recorded %s), want running %d", st, pid, r.Run.Proc, res.Pid)
	}
	if k := f.kinds(t, r); !slices.Contains(k, tine.EventStart) {
		t.Errorf("no start event: %v", k)
	}
	waitFor(t, "the service wrote who.txt", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.w.Path, "who.txt"))
		return strings.TrimSpace(string(b)) == r.Run.Name
	})
	procs := f.rt.Sessions(r)
	if len(procs) == 0 {
		t.Fatal("the service's processes are not listed as running in the run")
	}
	if _, err := f.rt.Stop(f.ctx, src); err != nil {
		t.Fatal(err)
	}
	r = f.run(t, src)
	if st, pid := f.rt.ProcState(r); st != runtime.ProcStopped || pid != 0 || r.Run.Proc != tine.ProcStopped {
		t.Errorf("after Stop: %s %d (recorded %s), want stopped", st, pid, r.Run.Proc)
	}
	if k := f.kinds(t, r); k[len(k)-1] != tine.EventStop {
		t.Errorf("last event %q, want stop: %v", k[len(k)-1], k)
	}
	for _, pid := range append(procs, res.Pid) {
		if running(pid) {
			t.Errorf("process %d of the run survived Stop", pid)
		}
	}
	if cgroupExists(t, r.Run.ID) {
		t.Errorf("the run's cgroup survived Stop")
	}
	if _, err := f.rt.Stop(f.ctx, src); err != nil {
		t.Errorf("Stop of a stopped run: %v", err)
	}
}

// Stop of a run whose supervisor died cleans up what it left.
func TestStop_DeadSupervisor(t *testing.T) {
	f := newFixture(t, "", map[string]string{"tine.toml": whoToml})
	src := f.w.Source.Run.ID
	f.start(t, src)
	f.killSupervisor(t, src)
	r := f.run(t, src)
	if !cgroupExists(t, r.Run.ID) {
		t.Fatal("the dead supervisor's cgroup is gone before Stop: nothing to test")
	}
	pidFile := filepath.Join(f.w.Engine.Layout().Run(r.Workspace.ID, r.Run.ID).Sup(), "pid")
	if _, err := f.rt.Stop(f.ctx, src); err != nil {
		t.Fatal(err)
	}
	r = f.run(t, src)
	if st, _ := f.rt.ProcState(r); st != runtime.ProcStopped || r.Run.Proc != tine.ProcStopped {
		t.Errorf("after Stop of a dead run: %s (recorded %s), want stopped", st, r.Run.Proc)
	}
	if cgroupExists(t, r.Run.ID) {
		t.Error("the dead supervisor's cgroup survived Stop")
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Error("the dead supervisor's pid file survived Stop")
	}
}

func TestExec_StatusOutputTimeout(t *testing.T) {
	f := newFixture(t, "", nil)
	src := f.w.Source.Run.ID
	res, err := f.rt.ExecCapture(f.ctx, src, []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res.Exit != 3 || res.Stdout != "out\n" || res.Stderr != "err\n" || res.TimedOut || res.Killed {
		t.Errorf("ExecCapture: %+v", res)
	}
	t0 := time.Now()
	res, err = f.rt.ExecCapture(f.ctx, src, []string{"sh", "-c", "sleep 30 & sleep 30"}, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Exit == 0 || time.Since(t0) > 10*time.Second {
		t.Errorf("ExecCapture past its timeout: %+v after %v", res, time.Since(t0))
	}
	if left := f.rt.Sessions(f.run(t, src)); len(left) != 0 {
		t.Errorf("processes of the timed-out command left running: %v", left)
	}
}

// A command's environment has each key once: the run's variables replace
// the caller's, and ExecOptions.Env comes last.
func TestExecWith_Env(t *testing.T) {
	f := newFixture(t, "", nil)
	t.Setenv("TINE_RUN", "stale")
	t.Setenv("TINE_ROLE", "stale")
	r := f.run(t, f.w.Source.Run.ID)
	res, err := f.rt.ExecWith(f.ctx, r.Run.ID, runtime.ExecOptions{Args: []string{"env"}, Env: []string{"EXTRA=1"}})
	if err != nil || res.Exit != 0 {
		t.Fatalf("env: %v %+v", err, res)
	}
	env := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	seen := map[string]int{}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		seen[k]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s appears %d times in the command's environment", k, n)
		}
	}
	for _, want := range append(runenv.Vars(r.Workspace, r.Run), "EXTRA=1") {
		k, _, _ := strings.Cut(want, "=")
		if i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") }); i < 0 || env[i] != want {
			t.Errorf("the command's environment lacks %s", want)
		}
	}
}

// Sessions need no supervisor, nor root: tine exec without one registers
// its command.
func TestSessions_LiveAndDead(t *testing.T) {
	w := enginetest.New(t, enginetest.Options{})
	f := &fixture{ctx: context.Background(), w: w, rt: runtime.Of(w.Engine)}
	r := f.run(t, f.w.Source.Run.ID)
	if got := f.rt.Sessions(r); len(got) != 0 {
		t.Fatalf("sessions of an idle run: %v", got)
	}
	if f.rt.Busy(r) {
		t.Fatal("an idle run is busy")
	}
	if err := f.rt.AddSession(r, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	dead := deadPid(t)
	if err := f.rt.AddSession(r, dead); err != nil {
		t.Fatal(err)
	}
	if got := f.rt.Sessions(r); !slices.Equal(got, []int{os.Getpid()}) {
		t.Errorf("Sessions = %v, want only the live %d (not the dead %d)", got, os.Getpid(), dead)
	}
	if !f.rt.Busy(r) {
		t.Error("a run with a live session is not busy")
	}
	f.rt.RemoveSession(r, os.Getpid())
	if got := f.rt.Sessions(r); len(got) != 0 || f.rt.Busy(r) {
		t.Errorf("after RemoveSession: %v", got)
	}
}

// deadPid returns the pid of a process that ran and was reaped.
func deadPid(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	p.Wait()
	return p.Pid
}

// webToml serves the run's files on port 3000 of its own network namespace.
const webToml = `[network]
isolate = true
[[service]]
name = "web"
command = "exec /usr/bin/python3 -m http.server 3000 --bind 0.0.0.0"
ready = { port = 3000, timeout = "20s" }
`

func TestPublish(t *testing.T) {
	f := newFixture(t, "", map[string]string{"tine.toml": webToml, "page.txt": "source page\n"})
	src := f.w.Source.Run.ID
	if _, err := f.rt.Publish(f.ctx, src, 3000, "127.0.0.1:0"); !errors.Is(err, tine.ErrState) {
		t.Fatalf("Publish of a stopped run: %v, want ErrState", err)
	}
	f.start(t, src)
	addr, err := f.rt.Publish(f.ctx, src, 3000, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") || addr == "127.0.0.1:0" {
		t.Fatalf("Publish returned %q", addr)
	}
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get("http://" + addr + "/page.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "source page\n" {
		t.Errorf("published port served %q", b)
	}
	if k := f.kinds(t, f.run(t, src)); !slices.Contains(k, tine.EventPublish) {
		t.Errorf("no publish event: %v", k)
	}
	if _, err := f.rt.Publish(f.ctx, src, 0, "127.0.0.1:0"); !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("Publish of port 0: %v, want ErrInvalid", err)
	}
}

// GC removes what a dead supervisor left, and leaves another state
// directory's live run alone.
func TestGC_DeadSupervisor(t *testing.T) {
	other := newFixture(t, "", map[string]string{"tine.toml": whoToml})
	otherPid := other.start(t, other.w.Source.Run.ID)
	f := newFixture(t, "", map[string]string{"tine.toml": whoToml})
	src := f.w.Source.Run.ID
	f.start(t, src)
	f.killSupervisor(t, src)
	r := f.run(t, src)
	pidFile := filepath.Join(f.w.Engine.Layout().Run(r.Workspace.ID, r.Run.ID).Sup(), "pid")
	res, err := f.rt.GC(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Cgroups, r.Run.ID) || !slices.Contains(res.Supervisors, r.Run.Name) {
		t.Errorf("GC = %+v, want %s's cgroup and supervisor", res, r.Run.Name)
	}
	if cgroupExists(t, r.Run.ID) {
		t.Error("GC left the dead run's cgroup")
	}
	if _, err := os.Stat(pidFile); err == nil {
		t.Error("GC left the dead supervisor's pid file")
	}
	if st, _ := f.rt.ProcState(f.run(t, src)); st != runtime.ProcDead {
		t.Errorf("after GC the run is %s, want still dead until start or stop", st)
	}
	o := other.run(t, other.w.Source.Run.ID)
	if slices.Contains(res.Cgroups, o.Run.ID) || !cgroupExists(t, o.Run.ID) {
		t.Errorf("GC removed another state directory's live run's cgroup: %+v", res)
	}
	if st, pid := other.rt.ProcState(o); st != runtime.ProcRunning || pid != otherPid {
		t.Errorf("another state directory's live run after GC: %s %d", st, pid)
	}
}

// A fork of a running run reruns its services, in the fork's view.
func TestFork_RerunsInTheForksView(t *testing.T) {
	f := newFixture(t, "", map[string]string{"tine.toml": whoToml})
	src := f.w.Source.Run.ID
	f.start(t, src)
	srcName := f.run(t, src).Run.Name
	whoIn := func(dir string) string {
		b, _ := os.ReadFile(filepath.Join(dir, "who.txt"))
		return strings.TrimSpace(string(b))
	}
	waitFor(t, "the source's service wrote who.txt", func() bool { return whoIn(f.w.Path) == srcName })
	res, err := f.w.Engine.Fork(f.ctx, src, engine.ForkOptions{Copies: 1})
	if err != nil {
		t.Fatal(err)
	}
	fork := f.run(t, res.Forks[0].ID)
	if len(res.Live) != 1 || !res.Live[0].Started || res.Live[0].Mode != engine.LiveRerun ||
		!slices.Equal(res.Live[0].Restarted, []string{"who"}) || res.Live[0].Error != "" {
		t.Fatalf("fork of a running run: %+v", res.Live)
	}
	if st, _ := f.rt.ProcState(fork); st != runtime.ProcRunning {
		t.Errorf("the fork is %s, want running", st)
	}
	view := f.w.Engine.Path(fork.Workspace, fork.Run)
	waitFor(t, "the fork's service wrote who.txt in the fork's view", func() bool { return whoIn(view) == fork.Run.Name })
	if got := whoIn(f.w.Path); got != srcName {
		t.Errorf("the source's who.txt says %q, want %q: the fork's service wrote into the source", got, srcName)
	}
	// Discarding the running fork stops it.
	if _, err := f.w.Engine.Discard(f.ctx, fork.Run.ID, true); err != nil {
		t.Fatal(err)
	}
	if cgroupExists(t, fork.Run.ID) {
		t.Error("the discarded fork's cgroup remains")
	}
	if st, _ := f.rt.ProcState(f.run(t, src)); st != runtime.ProcRunning {
		t.Errorf("discarding the fork left the source %s", st)
	}
}

// The start event of an isolated run records the address it was given:
// the address is claimed while the supervisor starts, and the event used
// to be built from the run before the claim (a data race, and an empty
// address on a first start).
func TestStart_IsolatedRecordsItsAddress(t *testing.T) {
	f := newFixture(t, "", map[string]string{"tine.toml": "[network]\nisolate = true\n"})
	src := f.w.Source.Run.ID
	f.start(t, src)
	r := f.run(t, src)
	if r.Run.Addr == "" {
		t.Fatal("an isolated run started without an address")
	}
	evs, err := f.w.Engine.Events(f.ctx, tine.EventFilter{Run: r.Run.ID})
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Addr string `json:"addr"`
	}
	for _, ev := range evs {
		if ev.Kind == tine.EventStart {
			json.Unmarshal(ev.Detail, &d)
		}
	}
	if d.Addr != r.Run.Addr {
		t.Errorf("the start event records address %q, the run has %q", d.Addr, r.Run.Addr)
	}
}

// A launch gives the run a fresh capability (through the engine's control
// plane) before its supervisor starts: the token file in its cap
// directory signs requests the plane's verifier accepts.
func TestStart_IssuesTheRunsCapability(t *testing.T) {
	f := newFixture(t, "", map[string]string{"tine.toml": whoToml})
	r := f.run(t, f.w.Source.Run.ID)
	token := f.w.Engine.Layout().Run(r.Workspace.ID, r.Run.ID).CapToken()
	if _, err := os.Stat(token); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a token before the launch: %v", err)
	}
	f.start(t, r.Run.ID)
	c, err := capability.ReadFile(token)
	if err != nil || c.Run != r.Run.ID {
		t.Fatalf("the run's token: %v, %v", c, err)
	}
	req, err := capability.Sign(c, "test", "GET /v1/state", nil, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if run, err := control.Of(f.w.Engine).Verifier().Verify(f.ctx, req, "test", "GET /v1/state"); err != nil || run != r.Run.ID {
		t.Errorf("Verify: %q, %v; want the run %s", run, err, r.Run.ID)
	}
}

// GC removes an empty cgroup of a run it does not know only once it is
// older than a launch takes: another state directory's supervisor may be
// about to be put in it.
func TestGC_UnknownCgroups(t *testing.T) {
	f := newFixture(t, "", nil)
	group := func(age time.Duration) string {
		id := tine.NewID(tine.PrefixRun)
		cg, err := cgroup.Open(id)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cg.Remove(context.Background()) })
		then := time.Now().Add(-age)
		for _, procs := range cg.ProcsFiles() {
			if err := os.Chtimes(filepath.Dir(procs), then, then); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	fresh, old := group(0), group(time.Hour)
	res, err := f.rt.GC(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Cgroups, old) || cgroupExists(t, old) {
		t.Errorf("GC = %+v: the abandoned cgroup %s was not removed", res, old)
	}
	if slices.Contains(res.Cgroups, fresh) || !cgroupExists(t, fresh) {
		t.Errorf("GC = %+v: it removed the fresh cgroup %s, which a supervisor may be launched into", res, fresh)
	}
}

// GC cleans a workspace's dead runs holding its lock, which every start
// holds: a supervisor being launched (in its cgroup, not answering yet)
// is not taken for a dead one and killed.
func TestGC_WaitsForALaunch(t *testing.T) {
	f := newFixture(t, "", nil)
	r := f.run(t, f.w.Source.Run.ID)
	unlock, err := f.w.Engine.LockWorkspace(r.Workspace.ID) // as a start holds it
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	cg, err := cgroup.Open(r.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	launching := exec.Command("sleep", "1000") // the supervisor, just put in its cgroup
	if err := launching.Start(); err != nil {
		t.Fatal(err)
	}
	defer launching.Wait()
	defer launching.Process.Kill()
	if err := cg.Add(launching.Process.Pid); err != nil {
		t.Fatal(err)
	}
	done := make(chan *runtime.GCResult, 1)
	go func() {
		res, err := f.rt.GC(f.ctx)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	select {
	case res := <-done:
		t.Fatalf("GC did not wait for the workspace's lock: %+v", res)
	case <-time.After(500 * time.Millisecond):
	}
	if !running(launching.Process.Pid) || !cgroupExists(t, r.Run.ID) {
		t.Fatal("GC killed a supervisor being launched")
	}
	unlock()
	if res := <-done; !slices.Contains(res.Cgroups, r.Run.ID) {
		t.Errorf("GC after the launch gave up = %+v, want the run's abandoned cgroup", res)
	}
}

// GC removes the lock file of a workspace that is gone — here one a
// command waiting for the workspace while it was released made again —
// and keeps the lock file of a workspace that is there and of one that
// somebody holds.
func TestGC_RemovesLocksOfGoneWorkspaces(t *testing.T) {
	f := newFixture(t, "", nil)
	g := enginetest.New(t, enginetest.Options{Backend: "overlay", Name: "gone", Home: f.w.Home})
	lay := f.w.Engine.Layout()
	kept, gone := f.w.Source.Workspace.ID, g.Source.Workspace.ID
	if _, err := g.Engine.Release(f.ctx, g.Path, true); err != nil {
		t.Fatal(err)
	}
	for _, ws := range []string{kept, gone} {
		unlock, err := f.w.Engine.LockWorkspace(ws)
		if err != nil {
			t.Fatal(err)
		}
		unlock()
	}
	held := tine.NewID(tine.PrefixWorkspace)
	unlock, err := f.w.Engine.LockWorkspace(held)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	res, err := f.rt.GC(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lay.Workspace(gone).Lock()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("GC left the lock file of released workspace %s: %v", gone, err)
	}
	if !slices.Equal(res.Locks, []string{gone}) {
		t.Errorf("GC removed the locks %q, want only %s's", res.Locks, gone)
	}
	for _, ws := range []string{kept, held} {
		if _, err := os.Stat(lay.Workspace(ws).Lock()); err != nil {
			t.Errorf("GC removed the lock file of %s: %v", ws, err)
		}
	}
}
