package engine

import "github.com/tinehq/tine/grouprec"

// ControlPlane is what the engine's own operations need of the control
// plane (package control implements it): the engine owns this interface
// and never imports control. The default, NopControlPlane, does nothing.
type ControlPlane interface {
	// Chosen is told that a person chose fork chosen (a run id) of a group
	// of workspace ws whose stored verdict is v (nil when no judge ran), so
	// the judge's weights learn from it. It is best effort: the choice is
	// made and recorded whatever it returns.
	Chosen(ws string, v *grouprec.Verdict, chosen string) error
}

// NopControlPlane is the control plane of an engine given none.
type NopControlPlane struct{}

// Chosen does nothing.
func (NopControlPlane) Chosen(string, *grouprec.Verdict, string) error { return nil }

// SetControl makes cp the control plane of e's operations; nil restores
// the NopControlPlane. Call it before e is shared between goroutines.
func (e *Engine) SetControl(cp ControlPlane) {
	if cp == nil {
		cp = NopControlPlane{}
	}
	e.ctl = cp
}
