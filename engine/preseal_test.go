package engine

import (
	"context"
	"testing"
	"time"
)

// A person's command stops the background seal under way in its
// workspace, and none starts there while the command waits for the lock.
func TestPresealer_GivesWayToACommand(t *testing.T) {
	var p presealer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !p.begin("w1", cancel) {
		t.Fatal("a background seal refused with nobody waiting")
	}
	done := p.yield("w1")
	if ctx.Err() == nil {
		t.Error("the seal under way was not stopped by the command")
	}
	p.end("w1")
	if p.begin("w1", func() {}) {
		t.Error("a background seal began while a command waited for the workspace")
	}
	if !p.begin("w2", func() {}) {
		t.Error("a command in w1 kept w2 from being sealed")
	}
	done()
	if !p.begin("w1", func() {}) {
		t.Error("a background seal refused after the command got the lock")
	}
}

// A run is sealed or looked at in the background at most once per gap.
func TestPresealer_Due(t *testing.T) {
	var p presealer
	t0 := time.Unix(1000, 0)
	if !p.due("r1", t0, 10*time.Second) {
		t.Fatal("the first look was not due")
	}
	if p.due("r1", t0.Add(9*time.Second), 10*time.Second) {
		t.Error("due again within the gap")
	}
	if !p.due("r1", t0.Add(10*time.Second), 10*time.Second) || !p.due("r2", t0, 10*time.Second) {
		t.Error("not due after the gap, or for another run")
	}
}

// Once its copy is done, a background seal is recorded whole: a command
// coming then waits the moment it takes, and does not cut it halfway (its
// record and the pruning failed with "context canceled" in CI).
func TestPresealer_FinishedSealIsNotStopped(t *testing.T) {
	var p presealer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p.begin("w1", cancel)
	if !p.finish(ctx, "w1") {
		t.Fatal("a seal nobody stopped could not finish")
	}
	done := p.yield("w1")
	defer done()
	if ctx.Err() != nil {
		t.Error("a command stopped a background seal that had finished copying")
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	if p.begin("w2", cancel2); !p.finish(ctx2, "w2") {
		t.Fatal("w2's seal could not finish")
	}
	done2 := p.yield("w3")
	defer done2()
	ctx3, cancel3 := context.WithCancel(context.Background())
	p.begin("w3", cancel3) // refused: a command waits
	if p.finish(ctx3, "w3") {
		t.Error("a seal finished while a command waited for its workspace")
	}
}
