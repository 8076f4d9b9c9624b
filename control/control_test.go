package control_test

import (
	"testing"

	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/testkit"
)

// An engine opened With a plane has one: Of returns it every time, and it
// is the plane the engine's own operations call.
func TestOf_TheEnginesOnePlane(t *testing.T) {
	e := enginetest.Open(t, t.TempDir())
	p := control.Of(e)
	if p != control.Of(e) || engine.ControlPlane(p) != e.Control() {
		t.Errorf("Of gives %p then %p; the engine's plane is %v", p, control.Of(e), e.Control())
	}
	plain := enginetest.Open(t, t.TempDir(), engine.WithControl(nil)) // the plane taken back
	if _, nop := plain.Control().(engine.NopControlPlane); !nop || control.Of(plain) == nil {
		t.Errorf("an engine opened without a plane has %T, and Of gives %v", plain.Control(), control.Of(plain))
	}
}

// The runtime calls control (a launch issues the run's capability), so
// control must not import the runtime or what runs processes.
func TestControl_ImportsNoRuntime(t *testing.T) {
	testkit.ForbidImports(t, "runtime", "supervisor", "cgroup", "netns", "livefork")
}
