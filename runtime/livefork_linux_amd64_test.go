//go:build linux && amd64

package runtime_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/cgroup"
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
	f := newFixture(t, "", map[string]string{"tine.toml": sleeperToml,
		"sleeper.py": "import time\nopen('up', 'w').close()\nwhile True: time.sleep(0.02)\n"})
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
