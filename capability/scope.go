package capability

import (
	"fmt"

	"github.com/tinehq/tine"
)

// relation is how the target of an action is related to the run acting.
type relation string

// Relations that grant anything; every other pair of runs (siblings,
// grandparents and grandchildren, runs of other workspaces) is unrelated.
const (
	self   relation = "itself"
	child  relation = "its direct fork"
	parent relation = "its direct parent"
)

// allowed lists what a run may do to a target of each relation. A run acts
// on itself; a parent inspects, instructs, forks and chooses among its
// direct forks; a fork merges into its direct parent and nothing else.
var allowed = map[relation]map[tine.Action]bool{
	self: {tine.ActionInspect: true, tine.ActionSendWork: true, tine.ActionFork: true,
		tine.ActionPromote: true, tine.ActionDiscard: true, tine.ActionEffect: true},
	child: {tine.ActionInspect: true, tine.ActionSendWork: true, tine.ActionFork: true,
		tine.ActionChoose: true},
	parent: {tine.ActionMerge: true},
}

// Scope reports whether the run actor may do action to the run target,
// judged by their lineage alone: whether the action suits the runs' states
// is the engine's question. A run may inspect, send work to, fork, discard
// and promote itself; inspect, send work to, fork and choose among its
// direct forks; and merge only into its direct parent. Anything else, and
// any action by a run that is no longer live, is refused with ErrScope.
func Scope(actor, target *tine.Run, action tine.Action) error {
	if !actor.Active() {
		return fmt.Errorf("run %s is %s: %w", actor.ID, actor.State, ErrScope)
	}
	rel, ok := relate(actor, target)
	if !ok {
		return fmt.Errorf("run %s may not %s run %s, which is not its own, its parent or its direct fork: %w",
			actor.ID, action, target.ID, ErrScope)
	}
	if !allowed[rel][action] {
		return fmt.Errorf("run %s may not %s %s %s: %w", actor.ID, action, rel, target.ID, ErrScope)
	}
	return nil
}

// relate returns how target is related to actor, if at all.
func relate(actor, target *tine.Run) (relation, bool) {
	switch {
	case actor.Workspace != target.Workspace || actor.ID == "" || target.ID == "":
		return "", false
	case actor.ID == target.ID:
		return self, true
	case target.Parent == actor.ID:
		return child, true
	case actor.Parent == target.ID:
		return parent, true
	}
	return "", false
}
