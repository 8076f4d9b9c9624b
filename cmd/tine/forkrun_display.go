package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/display"
)

// progress shows a fork-run as it goes: on a terminal, one line per fork
// redrawn in place (approach, state, elapsed, cost, tests); otherwise a
// line each time a fork changes state.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	tty   bool
	drawn int              // lines of the last frame (tty)
	last  map[string]State // state last printed per fork (plain)
	tick  *time.Ticker
	rep   *forkrun.Report
	noted bool // the report's notes were printed
}

// State is a fork's state as last shown.
type State = forkrun.State

func newProgress(w io.Writer) *progress {
	p := &progress{w: w, tty: isTerminal(w), last: map[string]State{}}
	if p.tty {
		p.tick = time.NewTicker(500 * time.Millisecond)
		go func() {
			for range p.tick.C {
				p.mu.Lock()
				if p.rep != nil && p.rep.Outcome == forkrun.OutcomeRunning {
					p.draw()
				}
				p.mu.Unlock()
			}
		}()
	}
	return p
}

// isTerminal reports whether w is a terminal.
// terminalText is text a run controls (a patch, a service's output) as it
// is written to w: on a terminal with its control characters escaped
// (display.Block, newlines and tabs kept), anywhere else exact.
func terminalText(w io.Writer, s string) string {
	if isTerminal(w) {
		return display.Block(s)
	}
	return s
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// update takes a new copy of the report.
func (p *progress) update(rep *forkrun.Report) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rep = rep
	if !p.noted && len(rep.Notes) > 0 {
		p.noted = true
		for _, n := range rep.Notes {
			fmt.Fprintf(p.w, "note: %s\n", display.Text(n))
		}
	}
	if p.tty {
		p.draw()
		if rep.Outcome != forkrun.OutcomeRunning && p.tick != nil {
			p.tick.Stop()
			p.tick = nil
		}
		return
	}
	for _, f := range rep.Forks {
		if p.last[f.Run] == f.State || (f.State == forkrun.Pending && p.last[f.Run] == "") {
			continue
		}
		p.last[f.Run] = f.State
		fmt.Fprintf(p.w, "%s %s\n", f.Name, forkLine(f, time.Now()))
	}
}

// draw redraws the frame in place.
func (p *progress) draw() {
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA", p.drawn)
	}
	now := time.Now()
	width := 0
	for _, f := range p.rep.Forks {
		width = max(width, len(f.Name))
	}
	for _, f := range p.rep.Forks {
		fmt.Fprintf(p.w, "\x1b[2K  %-*s  %s\n", width, f.Name, forkLine(f, now))
	}
	p.drawn = len(p.rep.Forks)
}

// forkLine is one fork's progress: state, elapsed, cost, tests, approach.
func forkLine(f *forkrun.Fork, now time.Time) string {
	s := fmt.Sprintf("%-13s %6s  $%.4f  tests %s", f.State, f.Elapsed(now).Round(100*time.Millisecond), f.CostUSD, padRight(testCell(f), 9))
	if f.Approach != "" {
		s += "  " + display.Text(clipLine(f.Approach, 48))
	}
	if f.Reason != "" && f.State.Terminal() && f.State != forkrun.Finished {
		s += "  (" + display.Text(clipLine(f.Reason, 80)) + ")"
	}
	return s
}

func testCell(f *forkrun.Fork) string {
	if f.State == forkrun.Testing {
		return "running"
	}
	if f.Test == nil {
		return "—"
	}
	return forkrun.TestWord(f.Test)
}

// padRight pads s with spaces to n characters (runes, not bytes: "—").
func padRight(s string, n int) string {
	if k := utf8.RuneCountInString(s); k < n {
		return s + strings.Repeat(" ", n-k)
	}
	return s
}

func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// printForkRun prints the final report: the forks side by side, the
// verdict and what was done.
func (a *app) printForkRun(rep *forkrun.Report) {
	fmt.Fprintf(a.stdout, "\nfork-run of %s: group %s, %d fork(s), %s agent, %.1fs, $%.4f in all\n",
		rep.Source, rep.Group, len(rep.Forks), rep.Agent, rep.Seconds, rep.TotalUSD())
	for _, n := range rep.Notes {
		fmt.Fprintf(a.stdout, "note: %s\n", display.Text(n))
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FORK\tSTATE\tTESTS\tFILES\t+/-\tCOST\tSCORE\tAPPROACH")
	for _, f := range rep.Forks {
		score := "—"
		if rep.Verdict != nil {
			if s, ok := rep.Verdict.Scores[f.Run]; ok {
				score = fmt.Sprintf("%.2f", s)
			}
		}
		mark := ""
		if rep.Winner == f.Name {
			mark = " *"
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\t%d\t+%d -%d\t$%.4f\t%s\t%s\n", f.Name, mark, f.State, forkrun.TestWord(f.Test),
			f.FilesChanged, f.LinesAdded, f.LinesDeleted, f.CostUSD, score, display.Text(clipLine(f.Approach, 40)))
	}
	tw.Flush()
	for _, f := range rep.Forks {
		if f.Reason != "" && f.State != forkrun.Finished {
			fmt.Fprintf(a.stdout, "%s: %s\n", f.Name, display.Text(f.Reason))
		}
		if f.Evidence != nil && f.Evidence.Short() != "—" {
			fmt.Fprintf(a.stdout, "%s evidence: %s\n", f.Name, display.Text(f.Evidence.Short()))
		}
	}
	if es := rep.EarlyStop; es != nil {
		fmt.Fprintf(a.stdout, "stopped early: %s cleared confidence %.2f; stopped %s, which had cost $%.4f; saved about $%.4f and %.1fs of agent time\n",
			es.Fork, es.Confidence, strings.Join(es.Stopped, ", "), es.SpentUSD, es.SavedUSD, es.SavedSeconds)
	}
	if v := rep.Verdict; v != nil {
		fmt.Fprintf(a.stdout, "verdict (%s judge, confidence %.2f): %s\n", v.Judge, v.Confidence, display.Text(v.Rationale))
	}
	if rep.JudgeError != "" {
		fmt.Fprintf(a.stdout, "judge failed: %s\n", display.Text(rep.JudgeError))
	}
	for _, c := range rep.Conflicts {
		fmt.Fprintf(a.stdout, "conflict: %s\n", display.Path(c))
	}
	fmt.Fprintf(a.stdout, "%s: %s\n", rep.Outcome, display.Text(rep.OutcomeDetail))
}
