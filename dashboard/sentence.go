package dashboard

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tinehq/tine"
)

// sentence says event ev as a person would, naming runs by their names
// (names maps run ids to names): "source-2 was merged into source (3
// paths)", not its kind and JSON detail. An event it has no words for is
// its kind and detail, ids still read as names.
func sentence(ev *tine.Event, names map[string]string) string {
	var d map[string]any
	json.Unmarshal(ev.Detail, &d)
	run := orDefault(names[ev.Run], "the workspace")
	name := func(key string) string { s, _ := d[key].(string); return orDefault(names[s], s) }
	switch ev.Kind {
	case tine.EventInit:
		return fmt.Sprintf("%s was taken under management at %s", run, name("path"))
	case tine.EventFork:
		return withApproach(fmt.Sprintf("%s was forked from %s in group %s", run, name("parent"), name("group")), name("approach"))
	case tine.EventForked:
		forks, _ := d["forks"].([]any)
		return fmt.Sprintf("%s was forked %d way(s) (group %s)", run, len(forks), name("group"))
	case tine.EventCheckpoint:
		return fmt.Sprintf("%s recorded checkpoint %s", run, name("version"))
	case tine.EventRollback:
		return fmt.Sprintf("%s was rolled back to %s", run, name("version"))
	case tine.EventMerge:
		return fmt.Sprintf("%s was merged into %s (%s)", run, name("target"), orDefault(name("outcome"), "merged"))
	case tine.EventMergedInto:
		return fmt.Sprintf("%s took %s's changes (%s)", run, name("run"), orDefault(name("outcome"), "merged"))
	case tine.EventPromote:
		return fmt.Sprintf("%s was promoted to the source, replacing %s", run, name("retired"))
	case tine.EventRetire:
		return fmt.Sprintf("%s was retired: %s is the source now", run, name("promoted"))
	case tine.EventDiscard:
		return fmt.Sprintf("%s was discarded", run)
	case tine.EventChoose:
		return fmt.Sprintf("group %s was resolved: %s chosen", name("group"), run)
	case tine.EventStart:
		return fmt.Sprintf("%s's processes started", run)
	case tine.EventStop:
		return fmt.Sprintf("%s's processes stopped", run)
	case tine.EventDisplayIdle:
		return fmt.Sprintf("%s's display was stopped, idle for %s", run, orDefault(name("after"), "its idle timeout"))
	case tine.EventDisplayWake:
		return fmt.Sprintf("%s's display was started again (%s)", run, orDefault(name("by"), "used"))
	case tine.EventForkRunStart:
		return fmt.Sprintf("a fork-run started from %s", run)
	case tine.EventForkRunEnd:
		return fmt.Sprintf("the fork-run from %s ended (%s)", run, orDefault(name("outcome"), "done"))
	}
	return fmt.Sprintf("%s: %s %s", run, ev.Kind, namesIn(string(ev.Detail), names))
}

// withApproach adds a fork's approach to s, cut short.
func withApproach(s, approach string) string {
	if approach == "" {
		return s
	}
	return s + ": " + short(80, approach)
}

// namesIn is detail (JSON) with every run id it holds as a string said as
// the run's name, cut short.
func namesIn(detail string, names map[string]string) string {
	pairs := make([]string, 0, 2*len(names))
	for id, n := range names {
		pairs = append(pairs, `"`+id+`"`, `"`+n+`"`)
	}
	return short(240, strings.NewReplacer(pairs...).Replace(detail))
}
