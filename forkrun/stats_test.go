package forkrun

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tinehq/tine/grouprec"
)

func line(t *testing.T, when time.Time, judge, winner, outcome, chosen string) grouprec.Resolution {
	t.Helper()
	b, err := json.Marshal(Summary{Judge: judge, Winner: winner, Outcome: outcome})
	if err != nil {
		t.Fatal(err)
	}
	return grouprec.Resolution{Time: when, Chosen: chosen, ForkRun: b}
}

func TestStats(t *testing.T) {
	w1 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) // 2026-W48
	w2 := w1.AddDate(0, 0, 7)
	h := []grouprec.Resolution{
		line(t, w1, "heuristic", "s-1", OutcomeAwaitingChoice, "s-1"), // confirmed
		line(t, w1, "heuristic", "s-1", OutcomeAwaitingChoice, "s-2"), // overridden
		line(t, w1, "heuristic", "s-1", OutcomeMerged, "s-1"),         // automatic
		line(t, w2, "pairwise", "s-3", OutcomeAwaitingChoice, ""),     // rejected
		line(t, w2, "pairwise", "", OutcomeNoWinner, "s-2"),           // unrecommended
		line(t, w2, "pairwise", "s-1", OutcomeReported, "s-1"),        // confirmed
		{Time: w2, Chosen: "x"},                                       // forked by hand: skipped
	}
	st := Stats(h)
	want := Tally{Groups: 6, Automatic: 1, Confirmed: 2, Overridden: 1, Rejected: 1, Unrecommended: 1, Agreement: 0.5}
	if st.All != want {
		t.Errorf("all %+v; want %+v", st.All, want)
	}
	if j := st.Judges["heuristic"]; j.Confirmed != 1 || j.Overridden != 1 || j.Automatic != 1 || j.Agreement != 0.5 {
		t.Errorf("heuristic %+v", j)
	}
	if j := st.Judges["pairwise"]; j.Confirmed != 1 || j.Rejected != 1 || j.Unrecommended != 1 || j.Agreement != 0.5 {
		t.Errorf("pairwise %+v", j)
	}
	if len(st.Weeks) != 2 || st.Weeks[0].Week != "2026-W48" || st.Weeks[0].Groups != 3 || st.Weeks[1].Week != "2026-W49" || st.Weeks[1].Groups != 3 {
		t.Errorf("weeks %+v", st.Weeks)
	}
}
