package selection

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/judge"
)

// Result is one judge's figures over the benchmark.
type Result struct {
	Judge string
	Tasks int
	// Correct counts the tasks whose chosen winner is correct (expected
	// values for random choice); Decided those where the judge would have
	// merged automatically (its confidence cleared the threshold and the
	// winner was ready), DecidedCorrect the correct ones among them and
	// WrongMerges the rest.
	Correct, Decided, DecidedCorrect, WrongMerges float64
	// Indistinct and IndistinctAbstained count the tasks only the holdout
	// can decide, and those where the judge abstained.
	Indistinct, IndistinctAbstained int
	// Calibration is the expected calibration error of the judge's
	// confidence against its winner being correct, over ten equal bins;
	// -1 for judges without a confidence.
	// RawCalibration is the same for the heuristic's raw confidence
	// (before calibration); -1 for other judges.
	Calibration, RawCalibration float64
	conf, raw                   []float64 // per task: the confidence and the raw one (-1: none)
	right                       []bool    // and whether the winner was correct
}

// Accuracy is the share of tasks whose winner is correct.
func (r Result) Accuracy() float64 { return ratio(r.Correct, float64(r.Tasks)) }

// DecidedAccuracy is the share of correct winners among the tasks where
// the judge did not abstain.
func (r Result) DecidedAccuracy() float64 { return ratio(r.DecidedCorrect, r.Decided) }

// Abstention is the share of tasks where the judge did not merge.
func (r Result) Abstention() float64 { return 1 - ratio(r.Decided, float64(r.Tasks)) }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// pick is what a judge chose on one task: the winner's approach ("" for
// none) and whether it would have been merged automatically.
type pick struct {
	approach string
	merge    bool
	conf     float64 // the verdict's confidence; -1: the judge gives none
	raw      float64 // the heuristic's raw confidence; -1: none
	ready    bool    // the winner is ready to merge
}

// A chooser picks among a task's judgeable forks.
type chooser func(o *Outcome, forks []*forkrun.Fork) pick

// Judges are the choosers Score compares, by name, in order; random is
// added by Score itself, as an expectation.
var judges = []struct {
	name string
	fn   chooser
}{
	{"heuristic, evidence without the holdout", heuristicWith(noHoldout)},
	{"heuristic, no evidence (before)", heuristicWith(func(*evidence.Fork) *evidence.Fork { return nil })},
	{"smallest passing diff", smallestPassing},
	{"heuristic, evidence and the holdout", heuristicWith(func(e *evidence.Fork) *evidence.Fork { return e })},
	{"pairwise without the holdout, a model that picks the first shown", pairwiseWith(func(*Outcome) judge.Judge { return firstShown{} })},
	{"pairwise without the holdout, a model that knows the truth", pairwiseWith(func(o *Outcome) judge.Judge { return oracle{o} })},
}

// pairwiseWith is the pairwise judge, over the forks' evidence without
// the holdout, comparing with the model model(o) stands for: a stand-in
// in the process, since the benchmark measures the aggregation and the
// hard-evidence gates, not a language model.
func pairwiseWith(model func(*Outcome) judge.Judge) chooser {
	return func(o *Outcome, forks []*forkrun.Fork) pick {
		var cands []judge.Candidate
		byRun := map[string]*forkrun.Fork{}
		for _, f := range forks {
			c := forkrun.CandidateOf(f)
			c.Evidence = noHoldout(f.Evidence)
			cands = append(cands, c)
			byRun[f.Run] = f
		}
		v, err := judge.Pairwise{Compare: model(o)}.Judge(context.Background(), o.Task.Prompt, cands)
		if err != nil || byRun[v.Winner] == nil {
			return pick{conf: -1, raw: -1}
		}
		w := byRun[v.Winner]
		return pick{approach: w.Approach, merge: v.Clears(o.Report.Threshold) && w.Ready, conf: v.Confidence, raw: -1, ready: w.Ready}
	}
}

// firstShown is a model that always prefers the first candidate shown.
type firstShown struct{}

// Judge picks cands[0] with confidence 0.9.
func (firstShown) Judge(_ context.Context, _ string, cands []judge.Candidate) (*judge.Verdict, error) {
	return pairVerdict(cands, 0), nil
}

// oracle is a model that knows which candidates are correct: it prefers a
// correct one to a wrong one, and the first shown between two alike.
type oracle struct{ o *Outcome }

// Judge picks the correct one of cands, or the first when both or neither are.
func (m oracle) Judge(_ context.Context, _ string, cands []judge.Candidate) (*judge.Verdict, error) {
	if !Correct(m.o.Task.Kind(cands[0].Approach)) && Correct(m.o.Task.Kind(cands[1].Approach)) {
		return pairVerdict(cands, 1), nil
	}
	return pairVerdict(cands, 0), nil
}

func pairVerdict(cands []judge.Candidate, w int) *judge.Verdict {
	v := &judge.Verdict{Judge: "model", Winner: cands[w].Run, Confidence: 0.9, Scores: map[string]float64{}}
	for i := range cands {
		v.Scores[cands[i].Run] = 0.2
	}
	v.Scores[cands[w].Run] = 0.9
	return v
}

func noHoldout(e *evidence.Fork) *evidence.Fork {
	if e == nil {
		return nil
	}
	c := *e
	c.Holdout = nil
	return &c
}

// heuristicWith is the heuristic judge over the forks' evidence as ev
// changes it.
func heuristicWith(ev func(*evidence.Fork) *evidence.Fork) chooser {
	return func(o *Outcome, forks []*forkrun.Fork) pick {
		var cands []judge.Candidate
		byRun := map[string]*forkrun.Fork{}
		for _, f := range forks {
			c := forkrun.CandidateOf(f)
			c.Evidence = ev(f.Evidence)
			cands = append(cands, c)
			byRun[f.Run] = f
		}
		v, err := judge.Heuristic{}.Judge(context.Background(), o.Task.Prompt, cands)
		if err != nil || byRun[v.Winner] == nil {
			return pick{conf: -1, raw: -1}
		}
		w := byRun[v.Winner]
		return pick{approach: w.Approach, merge: v.Clears(o.Report.Threshold) && w.Ready, conf: v.Confidence, raw: v.RawConfidence, ready: w.Ready}
	}
}

// smallestPassing is "tests passed and smallest diff": the passing fork
// with the fewest lines changed (the first in fork order on a tie), always
// merged; none when no fork passed.
func smallestPassing(_ *Outcome, forks []*forkrun.Fork) pick {
	var best *forkrun.Fork
	for _, f := range forks {
		if f.Test == nil || !f.Test.Passed || f.FilesChanged == 0 {
			continue
		}
		if best == nil || f.LinesAdded+f.LinesDeleted < best.LinesAdded+best.LinesDeleted {
			best = f
		}
	}
	if best == nil {
		return pick{conf: -1, raw: -1}
	}
	return pick{approach: best.Approach, merge: true, conf: -1, raw: -1}
}

// judgeable are the forks a judge sees.
func judgeable(r *forkrun.Report) []*forkrun.Fork {
	var out []*forkrun.Fork
	for _, f := range r.Forks {
		if f.State.Judgeable() {
			out = append(out, f)
		}
	}
	return out
}

// Score replays every judge on the outcomes.
func Score(outs []*Outcome) []Result {
	var res []Result
	for _, j := range judges {
		r := Result{Judge: j.name}
		for _, o := range outs {
			p := j.fn(o, judgeable(o.Report))
			right := p.approach != "" && Correct(o.Task.Kind(p.approach))
			r.add(o, right, p.merge)
			r.conf, r.raw, r.right = append(r.conf, p.conf), append(r.raw, p.raw), append(r.right, right)
		}
		r.Calibration, r.RawCalibration = calibration(r.conf, r.right), calibration(r.raw, r.right)
		res = append(res, r)
	}
	rnd := Result{Judge: "random choice (expected)", Calibration: -1, RawCalibration: -1}
	for _, o := range outs {
		forks := judgeable(o.Report)
		good := 0
		for _, f := range forks {
			if Correct(o.Task.Kind(f.Approach)) {
				good++
			}
		}
		p := ratio(float64(good), float64(len(forks)))
		rnd.Tasks++
		rnd.Correct += p
		rnd.Decided++
		rnd.DecidedCorrect += p
		rnd.WrongMerges += 1 - p
		if o.Task.Indistinct {
			rnd.Indistinct++
		}
	}
	return append(res, rnd)
}

func (r *Result) add(o *Outcome, correct, merge bool) {
	r.Tasks++
	if correct {
		r.Correct++
	}
	if merge {
		r.Decided++
		if correct {
			r.DecidedCorrect++
		} else {
			r.WrongMerges++
		}
	}
	if o.Task.Indistinct {
		r.Indistinct++
		if !merge {
			r.IndistinctAbstained++
		}
	}
}

// Bins is how many bins of equal width the expected calibration error
// uses: [0, 0.1), [0.1, 0.2), ... [0.9, 1].
const Bins = 10

// calibration is the expected calibration error of confidences conf
// against outcomes right, over Bins bins of equal width: the mean, weighted
// by the bins' sizes, of |accuracy - mean confidence| in each bin; -1 when
// a confidence is missing or there is none.
func calibration(conf []float64, right []bool) float64 {
	var n, sumConf, sumRight [Bins]float64
	if len(conf) == 0 {
		return -1
	}
	for i, c := range conf {
		if c < 0 {
			return -1
		}
		b := min(int(c*Bins), Bins-1)
		n[b]++
		sumConf[b] += c
		if right[i] {
			sumRight[b]++
		}
	}
	ece := 0.0
	for b := range n {
		if n[b] > 0 {
			d := sumRight[b]/n[b] - sumConf[b]/n[b]
			ece += n[b] / float64(len(conf)) * max(d, -d)
		}
	}
	return ece
}

// Mislabelled lists the forks whose holdout outcome disagrees with their
// candidate's known quality: a broken task, not a judge's mistake.
func Mislabelled(outs []*Outcome) []string {
	var out []string
	for _, o := range outs {
		for _, f := range o.Report.Forks {
			h := (*evidence.Check)(nil)
			if f.Evidence != nil {
				h = f.Evidence.Holdout
			}
			kind := o.Task.Kind(f.Approach)
			if !h.Ran() || h.Passed != Correct(kind) {
				msg := fmt.Sprintf("%s %s (%s): state %s, holdout %s", o.Task.Name, f.Approach, kind, f.State, h.Word())
				if h != nil && h.Error != "" {
					msg += ": " + h.Error
				}
				out = append(out, msg)
			}
		}
	}
	sort.Strings(out)
	return out
}

// PrintTable writes the results as a Markdown table.
func PrintTable(w io.Writer, res []Result) {
	fmt.Fprintln(w, "| judge | accuracy | accuracy when it merges | abstention | wrong automatic merges | abstained on indistinct tasks | calibration error (raw → calibrated) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, r := range res {
		cal := "—"
		if r.Calibration >= 0 {
			cal = fmt.Sprintf("%.2f", r.Calibration)
		}
		if r.RawCalibration >= 0 {
			cal = fmt.Sprintf("%.2f → %s", r.RawCalibration, cal)
		}
		fmt.Fprintf(w, "| %s | %.0f%% (%.1f/%d) | %.0f%% (%.1f/%.1f) | %.0f%% | %.1f | %d/%d | %s |\n", r.Judge,
			100*r.Accuracy(), r.Correct, r.Tasks, 100*r.DecidedAccuracy(), r.DecidedCorrect, r.Decided,
			100*r.Abstention(), r.WrongMerges, r.IndistinctAbstained, r.Indistinct, cal)
	}
}
