//go:build linux && amd64

package runtime_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/supervisor"
)

// sleeperToml runs one single-threaded python process, which ptrace can
// fork live.
const sleeperToml = `[[service]]
name = "sleeper"
command = "exec /usr/bin/python3 sleeper.py"
`

// Stop of a fork returns only once the process it received by live fork
// has ended. The copy is a child of the parent's supervisor (it was cloned
// with CLONE_PARENT), which reaps it in its own time: here the parent is
// frozen meanwhile, so the copy is left a zombie, which is ended. Once the
// parent thaws, its supervisor reaps it.
func TestStop_LiveForkedCopyEnds(t *testing.T) {
	f, src, res := liveForkedSleeper(t)
	ps, err := f.rt.PS(f.ctx, res.Forks[0].ID)
	if err != nil || len(ps.Adopted) != 1 {
		t.Fatalf("PS of the fork: %v %+v", err, ps)
	}
	cp := ps.Adopted[0]
	if st, err := procfs.Read("", cp.Pid); err != nil || st.Exited() {
		t.Fatalf("the live-forked copy %d does not run: %v %+v", cp.Pid, err, st)
	}
	srcCg, err := cgroup.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := srcCg.Freeze(f.ctx); err != nil { // the copy's reaper waits
		t.Fatal(err)
	}
	defer srcCg.Thaw()
	if _, err := f.rt.Stop(f.ctx, res.Forks[0].ID); err != nil {
		t.Fatal(err)
	}
	if st, err := procfs.Read("", cp.Pid); err == nil && st.StartTime == cp.Start && !st.Exited() {
		t.Fatalf("the live-forked copy %d runs on (state %c) after Stop of its fork", cp.Pid, st.State)
	} else if err == nil {
		t.Logf("after Stop the copy %d is in state %c", cp.Pid, st.State)
	}
	if err := srcCg.Thaw(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the parent's supervisor reaped the copy", func() bool { return supervisor.StartTime(cp.Pid) != cp.Start })
	if st, _ := f.rt.ProcState(f.run(t, src)); st != runtime.ProcRunning {
		t.Errorf("stopping the fork left the parent %s", st)
	}
}

// Stop of a run whose process was forked live into a fork ends the copy
// too (it lives in the run's pid namespace), so the fork's service is
// started again, fresh, in the fork: it runs in the fork's cgroup, tine ps
// of the fork lists it as the supervisor's and no longer the ended copy,
// and the fork's log says why.
func TestStop_LiveForkedCopyRestartsInItsFork(t *testing.T) {
	f, src, res := liveForkedSleeper(t)
	fork := res.Forks[0].ID
	ps, err := f.rt.PS(f.ctx, fork)
	if err != nil || len(ps.Adopted) != 1 || len(ps.Services) != 0 {
		t.Fatalf("PS of the fork: %v %+v", err, ps)
	}
	cp := ps.Adopted[0]
	if _, err := f.rt.Stop(f.ctx, src); err != nil {
		t.Fatal(err)
	}
	if procfs.Alive("", cp.Pid, cp.Start) {
		t.Fatalf("the copy %d outlived its origin's pid namespace", cp.Pid)
	}
	ps, err = f.rt.PS(f.ctx, fork)
	if err != nil {
		t.Fatal(err)
	}
	if ps.State != runtime.ProcRunning || len(ps.Adopted) != 0 || len(ps.Services) != 1 || ps.Services[0].Name != "sleeper" || ps.Services[0].Pid == 0 {
		t.Fatalf("PS of the fork after its origin stopped: state %s, adopted %+v, services %+v", ps.State, ps.Adopted, ps.Services)
	}
	// The restart does not wait for the service's ready check: its process
	// may not have exec'd python yet.
	var svc *runtime.Process
	waitFor(t, "the fork's own supervisor runs the sleeper", func() bool {
		ps, err := f.rt.PS(f.ctx, fork)
		if err != nil {
			return false
		}
		for i, p := range ps.Processes {
			if p.Service == "sleeper" && p.NSPid > 1 && strings.Contains(p.Command, "sleeper.py") {
				svc = &ps.Processes[i]
				return true
			}
		}
		return false
	})
	cg, err := cgroup.Load(fork)
	if err != nil {
		t.Fatal(err)
	}
	if pids, _ := cg.Procs(); !slices.Contains(pids, svc.Pid) || !running(svc.Pid) {
		t.Errorf("the restarted sleeper %d is not running in the fork's cgroup %v", svc.Pid, pids)
	}
	if k := f.kinds(t, f.run(t, fork)); !slices.Contains(k, tine.EventRestart) {
		t.Errorf("the fork's events %v record no %s", k, tine.EventRestart)
	}
	if st, _ := f.rt.ProcState(f.run(t, src)); st != runtime.ProcStopped {
		t.Errorf("the origin is %s after Stop", st)
	}
}

// A run whose supervisor is killed (no tine stop) takes the copies of its
// processes in its forks with it, like a stop: tine gc, which finds the
// supervisor dead, starts the forks' services again and records it, and
// the run stays reported dead (until tine start or tine stop).
func TestGC_DeadOriginRestartsForks(t *testing.T) {
	f, src, fork := killedOrigin(t, nil)
	gc, err := f.rt.GC(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(gc.Restarted, f.run(t, fork).Run.Name) || !slices.Contains(gc.Supervisors, f.run(t, src).Run.Name) {
		t.Errorf("GC = %+v, want the fork's services restarted and the origin's supervisor's files removed", gc)
	}
	requireRestarted(t, f, fork)
	if st, _ := f.rt.ProcState(f.run(t, src)); st != runtime.ProcDead {
		t.Errorf("after GC the origin is %s, want dead until tine start or tine stop", st)
	}
}

// Starting a run again after its supervisor was killed also starts again
// the services of its forks whose live-forked copies ended with it.
func TestStart_DeadOriginRestartsForks(t *testing.T) {
	f, src, fork := killedOrigin(t, nil)
	if st, err := f.rt.Start(f.ctx, src, runtime.StartOptions{Services: true}); err != nil || !st.Recovered {
		t.Fatalf("Start of the dead origin: %v %+v", err, st)
	}
	requireRestarted(t, f, fork)
}

// The daemon does not wait for anyone to notice: WatchCopies (which tine
// serve runs) starts the forks' services again within its interval of
// their origin's supervisor being killed, and leaves the origin dead.
func TestWatchCopies_DeadOriginRestartsForks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f, src, fork := killedOrigin(t, func(f *fixture) {
		if got := f.rt.ReviveCopies(f.ctx); len(got) != 0 {
			t.Fatalf("ReviveCopies with every copy alive restarted %v", got)
		}
		go f.rt.WatchCopies(ctx, 50*time.Millisecond, t.Logf)
	})
	// The watcher records the restart once the service runs: wait for both.
	waitFor(t, "the fork's service runs again, its restart recorded", func() bool {
		ps, err := f.rt.PS(f.ctx, fork)
		return err == nil && len(ps.Adopted) == 0 && len(ps.Services) == 1 && ps.Services[0].Pid > 0 &&
			slices.Contains(f.kinds(t, f.run(t, fork)), tine.EventRestart)
	})
	requireRestarted(t, f, fork)
	if st, _ := f.rt.ProcState(f.run(t, src)); st != runtime.ProcDead {
		t.Errorf("the origin is %s, want dead until tine start or tine stop", st)
	}
	if got := f.rt.ReviveCopies(f.ctx); len(got) != 0 {
		t.Errorf("a second ReviveCopies restarted %v again", got)
	}
}

// killedOrigin forks a running sleeper live into one fork, runs before (if
// given), then kills the origin's supervisor (no tine stop) and waits for
// the copy to end with its pid namespace.
func killedOrigin(t *testing.T, before func(*fixture)) (f *fixture, src, fork string) {
	t.Helper()
	f, src, res := liveForkedSleeper(t)
	fork = res.Forks[0].ID
	cp := liveForkedCopy(t, f, fork)
	if before != nil {
		before(f)
	}
	f.killSupervisor(t, src)
	waitFor(t, "the copy ends with its origin's pid namespace", func() bool { return !procfs.Alive("", cp.Pid, cp.Start) })
	return f, src, fork
}

// liveForkedCopy is the one process fork holds by live fork.
func liveForkedCopy(t *testing.T, f *fixture, fork string) runtime.Adopted {
	t.Helper()
	ps, err := f.rt.PS(f.ctx, fork)
	if err != nil || len(ps.Adopted) != 1 || len(ps.Services) != 0 {
		t.Fatalf("PS of the fork: %v %+v", err, ps)
	}
	return ps.Adopted[0]
}

// requireRestarted checks that fork's supervisor runs its sleeper service
// again, no longer listing the ended copy, and that its log says so.
func requireRestarted(t *testing.T, f *fixture, fork string) {
	t.Helper()
	ps, err := f.rt.PS(f.ctx, fork)
	if err != nil {
		t.Fatal(err)
	}
	if ps.State != runtime.ProcRunning || len(ps.Adopted) != 0 || len(ps.Services) != 1 || ps.Services[0].Name != "sleeper" || ps.Services[0].Pid == 0 {
		t.Fatalf("PS of the fork after its origin died: state %s, adopted %+v, services %+v", ps.State, ps.Adopted, ps.Services)
	}
	if k := f.kinds(t, f.run(t, fork)); !slices.Contains(k, tine.EventRestart) {
		t.Errorf("the fork's events %v record no %s", k, tine.EventRestart)
	}
}

// tine ps of a fork lists no live-forked copy that has ended, not even one
// its reaper (the origin's supervisor, frozen here) left a zombie.
func TestPS_EndedLiveForkedCopyNotListed(t *testing.T) {
	f := newFixture(t, "", map[string]string{"tine.toml": sleeperToml,
		"sleeper.py": "import time\nopen('up', 'w').close()\nwhile True: time.sleep(0.02)\n"})
	src, res := f.forkLive(t)
	ps, err := f.rt.PS(f.ctx, res.Forks[0].ID)
	if err != nil || len(ps.Adopted) != 1 {
		t.Fatalf("PS of the fork: %v %+v", err, ps)
	}
	cp := ps.Adopted[0]
	srcCg, err := cgroup.Load(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := srcCg.Freeze(f.ctx); err != nil {
		t.Fatal(err)
	}
	defer srcCg.Thaw()
	if err := syscall.Kill(cp.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the copy is a zombie", func() bool { st, err := procfs.Read("", cp.Pid); return err == nil && st.Exited() })
	if ps, err = f.rt.PS(f.ctx, res.Forks[0].ID); err != nil || len(ps.Adopted) != 0 {
		t.Errorf("PS of the fork lists the ended copy: %v %+v", err, ps.Adopted)
	}
}

// liveForkedSleeper is a running source whose python service was forked
// live into one fork.
func liveForkedSleeper(t *testing.T) (*fixture, string, *engine.ForkResult) {
	t.Helper()
	f := newFixture(t, "", map[string]string{"tine.toml": sleeperToml,
		"sleeper.py": "import time\nopen('up', 'w').close()\nwhile True: time.sleep(0.02)\n"})
	src, res := f.forkLive(t)
	return f, src, res
}

// forkLive starts the source with its services, waits for its python to
// be up (it makes the file "up"), and forks it live by ptrace into one
// fork, which must get the one process.
func (f *fixture) forkLive(t *testing.T) (string, *engine.ForkResult) {
	t.Helper()
	src := f.w.Source.Run.ID
	f.start(t, src)
	waitFor(t, "the service runs python", func() bool { _, err := os.Stat(filepath.Join(f.w.Path, "up")); return err == nil })
	res, err := f.w.Engine.Fork(f.ctx, src, engine.ForkOptions{Copies: 1, Live: engine.LivePtrace})
	if err != nil {
		t.Fatal(err)
	}
	if rep := res.Live[0]; !rep.Started || len(rep.Forked) != 1 || rep.Error != "" {
		t.Fatalf("live fork: %+v", rep)
	}
	return src, res
}

// probeToml's service, a single-threaded python, waits for a file "go" in
// its workspace and then writes to "result" what it could do: write a file
// in its workspace and one in the directory "go" names (OUTSIDE when it is
// empty), and make two calls the fork's
// seccomp filter denies but a source's allows (umount2 of a missing path:
// ENOENT when allowed; setns of no descriptor: EBADF when allowed).
const probeToml = `[[service]]
name = "probe"
command = "exec /usr/bin/python3 probe.py"
`

const probePy = `import ctypes, errno, os, time
libc = ctypes.CDLL(None, use_errno=True)
open('up', 'w').close()
def outcome(f):
    try:
        r = f()
    except OSError as e:
        return errno.errorcode[e.errno]
    if r is not None and r < 0:
        return errno.errorcode[ctypes.get_errno()]
    return 'ok'
def write(path):
    with open(path, 'w') as f:
        f.write('x')
while True:
    while not os.path.exists('go'):
        time.sleep(0.02)
    outside = open('go').read().strip() or os.environ['OUTSIDE']
    os.remove('go')
    res = [outcome(lambda: write('inside')),
           outcome(lambda: write(os.path.join(outside, 'from-%d' % os.getpid()))),
           outcome(lambda: libc.umount2(b'/nonexistent-tine-probe', 0)),
           outcome(lambda: libc.setns(-1, 0))]
    with open('result.tmp', 'w') as f:
        f.write(' '.join(res))
    os.rename('result.tmp', 'result')
`

// A process forked live into a fork is confined as the fork's own
// processes are, on top of its origin's: Landlock lets it write its
// workspace but not a host directory its origin may write (EACCES), and
// the fork's seccomp filter denies it umount2 and setns (EPERM), which the
// source's filter allows its origin. tine ps says what the copy is
// confined by.
func TestLiveFork_CopyGetsTheForksConfinement(t *testing.T) {
	outside, err := os.MkdirTemp("/var/tmp/..", "tine-outside-") // /var: neither /tmp nor a home
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	outside = filepath.Clean(outside)
	t.Setenv("OUTSIDE", outside)
	// The state directory where the daemon's is, below no path a fork may
	// write (not /tmp, as the tests' usually are).
	home, err := os.MkdirTemp("/var/lib", "tine-t")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	f := newFixture(t, filepath.Join(home, "h"), map[string]string{"tine.toml": probeToml, "probe.py": probePy})
	_, res := f.forkLive(t)
	fork := f.run(t, res.Forks[0].ID)
	view := f.w.Engine.Path(fork.Workspace, fork.Run)
	result := func(dir, outside string) string {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "go"), []byte(outside), 0o644); err != nil {
			t.Fatal(err)
		}
		var got []byte
		waitFor(t, "a result in "+dir, func() bool { got, err = os.ReadFile(filepath.Join(dir, "result")); return err == nil })
		os.Remove(filepath.Join(dir, "result"))
		return string(got)
	}
	// Outside the fork's writable paths its files are on read-only mounts
	// (EROFS); its run's own directory is on a writable one (its
	// supervisor's), where Landlock alone refuses the copy (EACCES).
	if got, want := result(view, ""), "ok EROFS EPERM EPERM"; got != want {
		t.Errorf("the live-forked copy could: %q, want %q (inside, outside, umount2, setns)", got, want)
	}
	if got, want := result(view, f.rt.LogDir(fork)), "ok EACCES EPERM EPERM"; got != want {
		t.Errorf("the live-forked copy could: %q, want %q (inside, its run's log directory, umount2, setns)", got, want)
	}
	if got, want := result(f.w.Path, ""), "ok ok ENOENT EBADF"; got != want {
		t.Errorf("its origin in the source could: %q, want %q (inside, outside, umount2, setns)", got, want)
	}
	if _, err := os.Stat(filepath.Join(view, "inside")); err != nil {
		t.Errorf("the copy's write inside its workspace is not in the fork's view: %v", err)
	}
	ents, _ := os.ReadDir(outside)
	if len(ents) != 1 {
		t.Errorf("%s holds %d files, want the origin's alone", outside, len(ents))
	}
	ps, err := f.rt.PS(f.ctx, fork.Run.ID)
	if err != nil || len(ps.Adopted) != 1 {
		t.Fatalf("PS of the fork: %v %+v", err, ps)
	}
	if c := ps.Adopted[0].Confinement; c == nil || c.Landlock == 0 || !c.Seccomp || !c.DenyMounts ||
		!slices.Contains(c.Writable, f.w.Path) {
		t.Errorf("tine ps says the copy is confined by %+v, want the fork's Landlock and seccomp", c)
	}
	// Root's copy keeps only confine.KeptCaps, for good (bounding set too):
	// with CAP_NET_ADMIN it could delete its fork's egress rules.
	var kept uint64
	for _, c := range confine.KeptCaps {
		kept |= 1 << c
	}
	caps := func(pid int) (eff, bnd uint64) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			switch k {
			case "CapEff":
				eff = n
			case "CapBnd":
				bnd = n
			}
		}
		return eff, bnd
	}
	if eff, bnd := caps(ps.Adopted[0].Pid); eff != kept || bnd != kept {
		t.Errorf("the copy's capabilities: effective %#x, bounding %#x; want %#x", eff, bnd, kept)
	}
	if c := ps.Adopted[0].Confinement; c == nil || c.Caps != kept {
		t.Errorf("tine ps says the copy keeps capabilities %+v", c)
	}
}

// A process of a fork cannot be forked live by ptrace (the fork's seccomp
// filter denies setns): a live fork of a fork says so, up front, and
// starts the services fresh.
func TestLiveFork_OfAForkRefused(t *testing.T) {
	f, _, res := liveForkedSleeper(t)
	first := res.Forks[0].ID
	res, err := f.w.Engine.Fork(f.ctx, first, engine.ForkOptions{Copies: 1, Live: engine.LivePtrace})
	if err != nil {
		t.Fatal(err)
	}
	rep := res.Live[0]
	why := rep.Refused["(all)"]
	if len(rep.Forked) != 0 || !strings.Contains(why, "denies setns") || strings.Contains(why, "operation not permitted") ||
		!slices.Equal(rep.Restarted, []string{"sleeper"}) || rep.Error != "" {
		t.Fatalf("live fork of a fork: %+v, want refused up front and the sleeper restarted", rep)
	}
}
