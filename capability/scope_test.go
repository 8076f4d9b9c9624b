package capability

import (
	"errors"
	"testing"

	"github.com/tinehq/tine"
)

func TestScope(t *testing.T) {
	run := func(id, ws, parent string) *tine.Run {
		return &tine.Run{ID: id, Workspace: ws, Parent: parent, State: tine.StateActive}
	}
	src, a, b, g := run("src", "w1", ""), run("a", "w1", "src"), run("b", "w1", "src"), run("g", "w1", "a")
	other := run("u", "w2", "")
	gone := run("a", "w1", "src")
	gone.State = tine.StateDiscarded
	tests := []struct {
		name          string
		actor, target *tine.Run
		action        tine.Action
		ok            bool
	}{
		{"SourceInspectsChild", src, a, tine.ActionInspect, true},
		{"SourceSendsWorkToChild", src, a, tine.ActionSendWork, true},
		{"SourceForksChild", src, a, tine.ActionFork, true},
		{"SourceChoosesChild", src, a, tine.ActionChoose, true},
		{"SourceDiscardsChild", src, a, tine.ActionDiscard, false},
		{"SourceMergesChild", src, a, tine.ActionMerge, false},
		{"SourceInspectsGrandchild", src, g, tine.ActionInspect, false},
		{"SourceForksItself", src, src, tine.ActionFork, true},
		{"SourceMergesItself", src, src, tine.ActionMerge, false},
		{"ForkInspectsItself", a, a, tine.ActionInspect, true},
		{"ForkDiscardsItself", a, a, tine.ActionDiscard, true},
		{"ForkPromotesItself", a, a, tine.ActionPromote, true},
		{"ForkChoosesItself", a, a, tine.ActionChoose, false},
		{"ForkMergesIntoParent", a, src, tine.ActionMerge, true},
		{"ForkInspectsParent", a, src, tine.ActionInspect, false},
		{"ForkDiscardsParent", a, src, tine.ActionDiscard, false},
		{"ForkSendsWorkToParent", a, src, tine.ActionSendWork, false},
		{"ForkInspectsOwnFork", a, g, tine.ActionInspect, true},
		{"GrandchildMergesIntoSource", g, src, tine.ActionMerge, false},
		{"SiblingInspects", a, b, tine.ActionInspect, false},
		{"SiblingMerges", a, b, tine.ActionMerge, false},
		{"UnrelatedWorkspace", other, src, tine.ActionInspect, false},
		{"SameIDOtherWorkspace", run("src", "w2", ""), src, tine.ActionInspect, false},
		{"DiscardedActor", gone, gone, tine.ActionInspect, false},
		{"UnknownAction", a, a, tine.Action("delete_everything"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Scope(tt.actor, tt.target, tt.action)
			if tt.ok && err != nil || !tt.ok && !errors.Is(err, ErrScope) {
				t.Errorf("Scope = %v, want ok %v", err, tt.ok)
			}
		})
	}
}
