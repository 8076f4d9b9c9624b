package dashboard

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// Events read as sentences naming runs, never their ids.
func TestSentence(t *testing.T) {
	names := map[string]string{"r1": "source", "r2": "source-2", "g1": "g1"}
	ev := func(kind tine.EventKind, run string, d map[string]any) *tine.Event {
		b, _ := json.Marshal(d)
		return &tine.Event{Kind: kind, Run: run, Detail: b}
	}
	for _, c := range []struct {
		ev   *tine.Event
		want string
	}{
		{ev(tine.EventFork, "r2", map[string]any{"parent": "r1", "group": "g1", "approach": "use a map"}), "source-2 was forked from source in group g1: use a map"},
		{ev(tine.EventMerge, "r2", map[string]any{"target": "r1", "outcome": "merged"}), "source-2 was merged into source (merged)"},
		{ev(tine.EventMergedInto, "r1", map[string]any{"run": "r2", "outcome": "merged"}), "source took source-2's changes (merged)"},
		{ev(tine.EventDiscard, "r2", map[string]any{"force": true}), "source-2 was discarded"},
		{ev(tine.EventForked, "r1", map[string]any{"group": "g1", "forks": []string{"r2", "r3"}}), "source was forked 2 way(s) (group g1)"},
		{ev("something_new", "r1", map[string]any{"of": "r2"}), `source: something_new {"of":"source-2"}`},
	} {
		got := sentence(c.ev, names)
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.ev.Kind, got, c.want)
		}
		if strings.Contains(got, "r2") && !strings.Contains(got, "source-2") {
			t.Errorf("%s names a run by its id: %q", c.ev.Kind, got)
		}
	}
}
