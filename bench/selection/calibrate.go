package selection

import (
	"fmt"
	"io"
	"strings"

	"github.com/tinehq/tine/judge"
)

// FitOn are the judges whose raw confidences the heuristic's calibration
// is fitted on: the heuristic over the evidence fork-run gathers, with and
// without the holdout (a fork-run has one or not).
var FitOn = []string{"heuristic, evidence without the holdout", "heuristic, evidence and the holdout"}

// calPoint is one verdict of a FitOn judge on one task.
type calPoint struct {
	task       int // index in the outcomes
	judge      string
	raw        float64
	right      bool
	ready      bool // its winner is ready to merge
	indistinct bool
}

// calPoints replays the FitOn judges on outs.
func calPoints(outs []*Outcome) []calPoint {
	var pts []calPoint
	for _, j := range judges {
		if !fitOn(j.name) {
			continue
		}
		for i, o := range outs {
			p := j.fn(o, judgeable(o.Report))
			if p.raw < 0 {
				continue
			}
			pts = append(pts, calPoint{task: i, judge: j.name, raw: p.raw, right: p.approach != "" && Correct(o.Task.Kind(p.approach)),
				ready: p.ready, indistinct: o.Task.Indistinct})
		}
	}
	return pts
}

func fitOn(name string) bool {
	for _, n := range FitOn {
		if n == name {
			return true
		}
	}
	return false
}

// Fit fits the heuristic's calibration on the FitOn judges' verdicts over
// outs; source says what outs are, for the calibration's Source.
func Fit(outs []*Outcome, source string) (judge.Calibration, error) {
	return fit(calPoints(outs), source, func(calPoint) bool { return true })
}

func fit(pts []calPoint, source string, in func(calPoint) bool) (judge.Calibration, error) {
	var raw []float64
	var right []bool
	for _, p := range pts {
		if in(p) {
			raw, right = append(raw, p.raw), append(right, p.right)
		}
	}
	return judge.Fit(source, raw, right)
}

// CalRow is one way of calibrating the heuristic, measured over the FitOn
// judges' verdicts: its expected calibration error (Bins bins) over all
// of them and over the verdicts without the holdout alone, and what it
// merges at each threshold (without the holdout).
type CalRow struct {
	Name              string
	ECE, ECENoHoldout float64
	At                []Merges // per threshold, in the order given
}

// Merges is what a calibration merges automatically at Threshold: how
// many, the wrong ones among them, and the indistinct tasks it abstained
// on, of Indistinct.
type Merges struct {
	Threshold                       float64
	Merges, Wrong                   int
	IndistinctAbstained, Indistinct int
}

// Calibrations measures the raw confidence, the calibration fitted on all
// tasks (measured on the tasks it was fitted on), and two held-out
// estimates: leave one task out (each task's verdicts mapped by a
// calibration fitted on the other tasks) and two halves (the odd tasks'
// by one fitted on the even ones, and the other way round).
func Calibrations(outs []*Outcome, thresholds ...float64) ([]CalRow, error) {
	if len(outs) < 2 {
		return nil, fmt.Errorf("calibration: %d tasks; want at least 2 to hold some out", len(outs))
	}
	pts := calPoints(outs)
	all, err := fit(pts, "", func(calPoint) bool { return true })
	if err != nil {
		return nil, err
	}
	loo := map[int]judge.Calibration{}
	half := map[int]judge.Calibration{}
	for i := range outs {
		if loo[i], err = fit(pts, "", func(p calPoint) bool { return p.task != i }); err != nil {
			return nil, err
		}
	}
	for h := range 2 {
		if half[h], err = fit(pts, "", func(p calPoint) bool { return p.task%2 != h }); err != nil {
			return nil, err
		}
	}
	rows := []CalRow{
		measure("raw confidence (before)", pts, thresholds, func(p calPoint) float64 { return p.raw }),
		measure("calibrated, fitted on all 36 tasks (in sample)", pts, thresholds, func(p calPoint) float64 { return all.Map(p.raw) }),
		measure("calibrated, leave one task out (held out)", pts, thresholds, func(p calPoint) float64 { c := loo[p.task]; return c.Map(p.raw) }),
		measure("calibrated, fitted on one half of the tasks, measured on the other (held out)", pts, thresholds,
			func(p calPoint) float64 { c := half[p.task%2]; return c.Map(p.raw) }),
	}
	rows[1].Name = fmt.Sprintf("calibrated, fitted on all %d tasks (in sample)", len(outs))
	return rows, nil
}

// measure is row name with each verdict's confidence conf(p).
func measure(name string, pts []calPoint, thresholds []float64, conf func(calPoint) float64) CalRow {
	r := CalRow{Name: name}
	for _, t := range thresholds {
		r.At = append(r.At, Merges{Threshold: t})
	}
	var cs, csNo []float64
	var rs, rsNo []bool
	for _, p := range pts {
		c := conf(p)
		cs, rs = append(cs, c), append(rs, p.right)
		if p.judge != FitOn[0] {
			continue
		}
		csNo, rsNo = append(csNo, c), append(rsNo, p.right)
		for i := range r.At {
			r.At[i].add(p, c)
		}
	}
	r.ECE, r.ECENoHoldout = calibration(cs, rs), calibration(csNo, rsNo)
	return r
}

func (m *Merges) add(p calPoint, conf float64) {
	merge := p.ready && conf >= m.Threshold
	if merge {
		m.Merges++
		if !p.right {
			m.Wrong++
		}
	}
	if p.indistinct {
		m.Indistinct++
		if !merge {
			m.IndistinctAbstained++
		}
	}
}

// PrintCalibrations writes rows as a Markdown table.
func PrintCalibrations(w io.Writer, rows []CalRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprint(w, "| heuristic's confidence | calibration error, with and without the holdout | without the holdout |")
	for _, m := range rows[0].At {
		fmt.Fprintf(w, " at %.2f: merges, wrong, abstained on indistinct |", m.Threshold)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "|---|---|---|"+strings.Repeat("---|", len(rows[0].At)))
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %.3f | %.3f |", r.Name, r.ECE, r.ECENoHoldout)
		for _, m := range r.At {
			fmt.Fprintf(w, " %d, %d, %d/%d |", m.Merges, m.Wrong, m.IndistinctAbstained, m.Indistinct)
		}
		fmt.Fprintln(w)
	}
}
