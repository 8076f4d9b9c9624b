package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// stepSpy is a ControlPlane that records the control steps of the
// engine's operations, in order, and how many runs the workspace had when
// each was taken.
type stepSpy struct {
	NopControlPlane
	e     *Engine
	steps []string
}

func (s *stepSpy) record(ctx context.Context, ws, step string) {
	var n int
	s.e.store.View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{Workspace: ws})
		n = len(runs)
		return err
	})
	s.steps = append(s.steps, step+" with runs "+strconv.Itoa(n))
}

func (s *stepSpy) RevokeCap(ctx context.Context, r *tine.Run) error {
	s.record(ctx, r.Workspace, "revoke "+r.Name)
	return nil
}

func (s *stepSpy) IssueCaps(ctx context.Context, w *tine.Workspace, runs ...*tine.Run) error {
	var names []string
	for _, r := range runs {
		names = append(names, r.Name)
	}
	s.record(ctx, w.ID, "issue "+strings.Join(names, ","))
	return nil
}

func (s *stepSpy) Promoted(ctx context.Context, r Ref) error {
	s.record(ctx, r.Workspace.ID, "promoted "+r.Run.ID) // a promoted fork takes the source's name
	return nil
}

func (f *fixture) openSpy() *stepSpy {
	f.t.Helper()
	spy := &stepSpy{}
	f.e.Close()
	f.open(WithControl(func(e *Engine) ControlPlane { spy.e = e; return spy }))
	return spy
}

// Fork revokes the parent's capability before its files are cloned (no
// fork recorded yet) and issues fresh ones to it and each fork after;
// Promote tells the control plane the fork is the source now.
func TestFork_ControlSteps(t *testing.T) {
	f := newFixture(t, "copy")
	spy := f.openSpy()
	res := f.fork(2)
	a, b := res.Forks[0].Name, res.Forks[1].Name
	if _, err := f.e.Promote(f.ctx, res.Forks[0].ID, false); err != nil {
		t.Fatal(err)
	}
	want := []string{"revoke source with runs 1", "issue source," + a + "," + b + " with runs 3", "promoted " + res.Forks[0].ID + " with runs 3"}
	if strings.Join(spy.steps, "; ") != strings.Join(want, "; ") {
		t.Errorf("control steps %q, want %q", spy.steps, want)
	}
}

// A fork that fails after the parent's capability was revoked still
// gives the parent a fresh one.
func TestFork_FailedStillIssuesTheParentsCapability(t *testing.T) {
	f := newFixture(t, "copy")
	spy := f.openSpy()
	injected := errors.New("injected")
	faultHook = func(op string) error {
		if op == "fork" {
			return injected
		}
		return nil
	}
	defer func() { faultHook = nil }()
	if _, err := f.e.Fork(f.ctx, f.ref.Run.ID, ForkOptions{Copies: 1}); !errors.Is(err, injected) {
		t.Fatalf("Fork: %v, want the injected fault", err)
	}
	want := []string{"revoke source with runs 1", "issue source with runs 1"}
	if strings.Join(spy.steps, "; ") != strings.Join(want, "; ") {
		t.Errorf("control steps %q, want %q", spy.steps, want)
	}
}

// A rebuilt store has no capabilities: Rebuild asks the control plane to
// issue one to every live run.
func TestRebuild_IssuesCapabilities(t *testing.T) {
	f := newFixture(t, "copy")
	a := f.fork(1).Forks[0]
	f.e.Close()
	f.e = nil
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(f.home, "tine.db") + s)
	}
	spy := &stepSpy{}
	rep, err := Rebuild(f.ctx, f.home, testOptions(WithControl(func(e *Engine) ControlPlane { spy.e = e; return spy }))...)
	if err != nil || len(rep.Skipped) != 0 {
		t.Fatalf("Rebuild: %v (%+v)", err, rep)
	}
	want := "issue source," + a.Name + " with runs 2"
	if strings.Join(spy.steps, "; ") != want {
		t.Errorf("control steps %q, want %q", spy.steps, want)
	}
	f.open()
}
