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
