package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/merge"
)

// planListed is how many paths of each action a merge's summary lists
// before "and N more"; a conflict's paths are all listed, as they are what
// the person must act on.
const planListed = 10

// planActions are the actions of a plan in the order a summary shows them.
var planActions = []merge.Action{merge.Take, merge.TextMerged, merge.Converged, merge.Conflict}

// writePlan writes a merge plan's paths to w, one row each: every path
// when verbose, else a summary, grouped by action, of the first planListed
// paths of each (all the conflicts) and how many more, then the counts.
func writePlan(w io.Writer, p *merge.Plan, verbose bool) error {
	// tabwriter writes cell by cell: buffered, a plan of 10,000 paths is a
	// few writes instead of 90,000.
	bw := bufio.NewWriter(w)
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	if verbose {
		writePlanAll(tw, p)
	} else {
		writePlanSummary(tw, p)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !verbose {
		if counts := planCounts(p); counts != "" {
			fmt.Fprintf(bw, "paths: %s\n", counts)
		}
	}
	return bw.Flush()
}

// writePlanAll writes every entry of p in its order, then what it leaves out.
func writePlanAll(w io.Writer, p *merge.Plan) {
	for _, en := range p.Entries {
		writeEntry(w, en)
	}
	for _, l := range p.LeftOut {
		writeLeftOut(w, l)
	}
}

// writePlanSummary writes the first planListed entries of each action of
// p (every conflict), then of what it leaves out, each group followed by
// how many it did not list.
func writePlanSummary(w io.Writer, p *merge.Plan) {
	for _, act := range planActions {
		listed, more := 0, 0
		for _, en := range p.Entries {
			switch {
			case en.Action != act:
			case listed < planListed || act == merge.Conflict:
				writeEntry(w, en)
				listed++
			default:
				more++
			}
		}
		writeMore(w, string(act), more)
	}
	for i, l := range p.LeftOut {
		if i == planListed {
			writeMore(w, "left_out", len(p.LeftOut)-planListed)
			break
		}
		writeLeftOut(w, l)
	}
}

func writeEntry(w io.Writer, en merge.Entry) {
	fmt.Fprintf(w, "%s\t%s\t%s\t%d bytes\t%s\n", en.Action, en.Change, display.Path(en.Path), en.Bytes, display.Text(en.Reason))
}

func writeLeftOut(w io.Writer, l merge.LeftOut) {
	fmt.Fprintf(w, "left_out\t%s\t%s\t0 bytes\t%s\n", l.Change, display.Path(l.Path), l.Reason)
}

// writeMore says how many paths of a group a summary did not list.
func writeMore(w io.Writer, group string, n int) {
	if n > 0 {
		fmt.Fprintf(w, "%s\t\tand %d more (--verbose lists every path)\t\t\n", group, n)
	}
}

// planCounts says how many paths of p each action has, leaving out the
// actions it has none of: "40000 take, 2 converged, 1 left out".
func planCounts(p *merge.Plan) string {
	n := map[merge.Action]int{}
	for _, en := range p.Entries {
		n[en.Action]++
	}
	var parts []string
	for _, act := range planActions {
		if n[act] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[act], act))
		}
	}
	if len(p.LeftOut) > 0 {
		parts = append(parts, fmt.Sprintf("%d left out", len(p.LeftOut)))
	}
	return strings.Join(parts, ", ")
}
