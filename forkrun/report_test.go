package forkrun_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/procfs"
)

func TestLoad_TellsAnAbandonedForkRun(t *testing.T) {
	e := enginetest.Open(t, t.TempDir())
	me, err := procfs.Read("", os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, c := range []struct {
		name  string
		owner *forkrun.Owner
		want  string
	}{
		{"alive", &forkrun.Owner{Pid: me.Pid, StartTime: me.StartTime}, forkrun.OutcomeRunning},
		{"pid reused", &forkrun.Owner{Pid: me.Pid, StartTime: "1"}, forkrun.OutcomeAbandoned},
		{"gone", &forkrun.Owner{Pid: 1 << 22, StartTime: "1"}, forkrun.OutcomeAbandoned},
		{"unknown owner", nil, forkrun.OutcomeRunning},
	} {
		t.Run(c.name, func(t *testing.T) {
			lg := e.Layout().Group("w", "g-"+c.name)
			os.MkdirAll(lg.Dir(), 0o755)
			b, _ := json.Marshal(forkrun.Report{Group: "g", Outcome: forkrun.OutcomeRunning, Owner: c.owner,
				Forks: []*forkrun.Fork{{Name: "a", State: forkrun.Running}, {Name: "b", State: forkrun.Finished}}})
			os.WriteFile(lg.Report(), b, 0o644)
			b, _ = json.Marshal(forkrun.Summary{Group: "g", Outcome: forkrun.OutcomeRunning})
			os.WriteFile(lg.Summary(), b, 0o644)
			r, err := forkrun.Load(e, "w", "g-"+c.name)
			if err != nil || r.Outcome != c.want {
				t.Fatalf("outcome %q (%v), want %q", r.Outcome, err, c.want)
			}
			if want := map[bool]forkrun.State{true: forkrun.Canceled, false: forkrun.Running}[c.want == forkrun.OutcomeAbandoned]; r.Forks[0].State != want || r.Forks[1].State != forkrun.Finished {
				t.Errorf("fork states %s, %s", r.Forks[0].State, r.Forks[1].State)
			}
			if s, err := forkrun.LoadSummary(e, "w", "g-"+c.name); err != nil || s.Outcome != c.want {
				t.Errorf("summary outcome %q (%v), want %q", s.Outcome, err, c.want)
			}
		})
	}
}
