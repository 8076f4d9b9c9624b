package judge

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/tinehq/tine"
)

// DefaultPairParallel is how many comparisons Pairwise runs at once when
// told zero or fewer.
const DefaultPairParallel = 4

// Pairwise is a Judge that has another judge (an LLM) compare the
// candidates two at a time, every pair in both orders, and ranks them by
// the comparisons they won. Its verdicts have Judge "pairwise" and every
// comparison's verdict in Rounds.
//
// Hard evidence gates the ranking before any comparison: a candidate that
// changed nothing, whose tests failed or timed out, whose holdout or
// regression command failed, or that fails a rival's trusted valid tests
// ranks below every candidate without such evidence, and is not compared
// with them, so no text in a diff can outvote it. Only when every
// candidate is gated are they all compared, and then the winner's
// confidence is bounded by its (poor) absolute evidence. When one
// candidate alone passes the gates it wins on the heuristic's verdict,
// without asking the model.
//
// A pair counts for a candidate only when the model picks it in both
// orders; a model that prefers whichever candidate it is shown first
// (or second) splits every pair and decides nothing: the ranking is then
// the heuristic's, with the heuristic's confidence at most, and the
// verdict says the model could not tell. The package documentation gives
// the confidence.
type Pairwise struct {
	// Compare judges two candidates at a time; required.
	Compare Judge
	// Parallel bounds the comparisons under way at once.
	Parallel int
}

var _ Judge = Pairwise{}

// comparison is one ordered pair of the field and the verdict on it.
type comparison struct {
	first, second *assessed
	v             *Verdict
}

// Judge gates cands on their hard evidence, compares the rest in pairs and
// returns the ranking's verdict. Any comparison's error is returned, and
// stops the others.
func (p Pairwise) Judge(ctx context.Context, task string, cands []Candidate) (*Verdict, error) {
	if err := checkCandidates(cands); err != nil {
		return nil, err
	}
	if p.Compare == nil {
		return nil, fmt.Errorf("judge: pairwise: no judge to compare with: %w", tine.ErrInvalid)
	}
	as, tr := assess(cands, weight), trustOf(cands)
	var field, gated []*assessed
	why := map[*assessed][]string{}
	for _, a := range as {
		if g := gates(a, tr); len(g) > 0 {
			gated, why[a] = append(gated, a), g
		} else {
			field = append(field, a)
		}
	}
	if len(field) == 1 {
		return p.alone(ctx, task, cands, field[0], gated, why)
	}
	if len(field) == 0 {
		field, gated = as, nil
	}
	cs, err := p.compareAll(ctx, task, field)
	if err != nil {
		return nil, err
	}
	v := rank(field, gated, why, cs)
	h, err := Heuristic{}.Judge(ctx, task, cands)
	if err != nil {
		return nil, err
	}
	if h.Winner == v.Winner && h.Confidence > v.Confidence {
		v.Confidence = h.Confidence
		v.Rationale += fmt.Sprintf(" The evidence alone names the same winner with confidence %.2f: %s", h.Confidence, h.Rationale)
		if h.CannotTell == "" {
			v.CannotTell = ""
		}
	}
	return v, nil
}

// alone is the verdict when w alone passes the gates: the heuristic's,
// which needs no comparison.
func (p Pairwise) alone(ctx context.Context, task string, cands []Candidate, w *assessed, gated []*assessed, why map[*assessed][]string) (*Verdict, error) {
	v, err := Heuristic{}.Judge(ctx, task, cands)
	if err != nil {
		return nil, err
	}
	v.Judge = "pairwise"
	if v.Winner != w.c.Run { // a gated candidate outscored it: the gate decides
		v.Winner, v.Confidence, v.CannotTell = w.c.Run, 0, ""
		for _, a := range gated {
			v.Scores[a.c.Run] = round4(0.49 * a.score)
		}
		v.Scores[w.c.Run] = round4(max(w.score, 0.5))
		v.Rationale = "The heuristic's leader has hard evidence against it; confidence 0. " + v.Rationale
	}
	if len(gated) > 0 {
		v.Rationale = fmt.Sprintf("Only %s passes the hard evidence (%s), so no comparison was asked for. %s",
			w.c.label(), gatedText(gated, why), v.Rationale)
	}
	return v, nil
}

// gates returns the hard evidence against a, in words: what no model's
// preference may outweigh.
func gates(a *assessed, tr trust) []string {
	var g []string
	if !a.changed {
		g = append(g, "changed nothing")
	}
	if a.tests == testsFailed || a.tests == testsTimedOut {
		g = append(g, "tests "+testWord[a.tests])
	}
	ev := a.c.Evidence
	if ev == nil {
		return g
	}
	if ev.Holdout.Ran() && !ev.Holdout.Passed {
		g = append(g, "holdout "+ev.Holdout.Word())
	}
	if ev.Regression.Ran() && !ev.Regression.Passed {
		g = append(g, "regression "+ev.Regression.Word())
	}
	var failed []string
	for _, r := range ev.CrossFailed {
		if tr.counts(r) {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		g = append(g, "fails the valid tests of "+joinAnd(failed))
	}
	return g
}

// compareAll asks p.Compare about every ordered pair of field at once, at most
// Parallel at a time, and returns the comparisons, or the first error.
func (p Pairwise) compareAll(ctx context.Context, task string, field []*assessed) ([]comparison, error) {
	var cs []comparison
	for i, a := range field {
		for _, b := range field[i+1:] {
			cs = append(cs, comparison{first: a, second: b}, comparison{first: b, second: a})
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		slots = make(chan struct{}, cmpOrDefault(p.Parallel, DefaultPairParallel))
	)
	for i := range cs {
		c := &cs[i]
		wg.Go(func() {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
			case <-ctx.Done():
				return
			}
			pair := []Candidate{*c.first.c, *c.second.c}
			v, err := p.Compare.Judge(ctx, task, pair)
			if err == nil {
				err = checkRound(v, pair)
			}
			if err != nil {
				once.Do(func() {
					first = fmt.Errorf("judge: pairwise: %s against %s: %w", c.first.c.label(), c.second.c.label(), err)
					cancel()
				})
				return
			}
			c.v = v
		})
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	if first != nil {
		return nil, first
	}
	return cs, nil
}

func cmpOrDefault(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// tournament is what the comparisons say of the field.
type tournament struct {
	wins  map[*assessed]int
	split int // pairs whose two orders disagreed
	pairs int
}

func tally2(cs []comparison) tournament {
	t := tournament{wins: map[*assessed]int{}, pairs: len(cs) / 2}
	for i := 0; i+1 < len(cs); i += 2 {
		a, b := cs[i].winner(), cs[i+1].winner()
		if a != nil {
			t.wins[a]++
		}
		if b != nil {
			t.wins[b]++
		}
		if a != b {
			t.split++
		}
	}
	return t
}

// winner is the candidate c's verdict picked, nil for none.
func (c *comparison) winner() *assessed {
	switch c.v.Winner {
	case c.first.c.Run:
		return c.first
	case c.second.c.Run:
		return c.second
	}
	return nil
}

// headToHead returns how many of the two comparisons of w and r w won, and
// the mean confidence of those it won.
func headToHead(cs []comparison, w, r *assessed) (won int, conf float64) {
	for i := range cs {
		c := &cs[i]
		if (c.first == w && c.second == r) || (c.first == r && c.second == w) {
			if c.winner() == w {
				won, conf = won+1, conf+c.v.Confidence
			}
		}
	}
	if won > 0 {
		conf /= float64(won)
	}
	return won, conf
}

// rank orders field by comparisons won (then by the heuristic's order,
// which field is in), puts gated below, and returns the verdict.
func rank(field, gated []*assessed, why map[*assessed][]string, cs []comparison) *Verdict {
	t := tally2(cs)
	ranked := append([]*assessed(nil), field...)
	sort.SliceStable(ranked, func(i, j int) bool { return t.wins[ranked[i]] > t.wins[ranked[j]] })
	w, r := ranked[0], ranked[1]
	played := 2 * (len(field) - 1)
	v := &Verdict{Judge: "pairwise", Winner: w.c.Run, Scores: map[string]float64{}}
	for _, a := range field {
		v.Scores[a.c.Run] = round4(0.5 + 0.5*float64(t.wins[a])/float64(played))
	}
	for _, a := range gated {
		v.Scores[a.c.Run] = round4(0.49 * a.score)
	}
	for i := range cs {
		v.Rounds = append(v.Rounds, cs[i].v)
	}
	won, conf := headToHead(cs, w, r)
	var b strings.Builder
	fmt.Fprintf(&b, "Pairwise, every pair in both orders: %s won %d of %d comparisons, %s %d.",
		w.c.label(), t.wins[w], played, r.c.label(), t.wins[r])
	switch {
	case t.wins[w] == t.wins[r]:
		v.CannotTell = fmt.Sprintf("Cannot tell %s from %s: they won as many comparisons", w.c.label(), r.c.label())
	case won < 2:
		v.CannotTell = fmt.Sprintf("Cannot tell %s from %s: the model's choice between them changed with the order they were shown in", w.c.label(), r.c.label())
	default:
		share := conf * float64(t.wins[w]) / float64(played)
		v.Confidence = round4(math.Min(share, w.abs))
		fmt.Fprintf(&b, " %s beat %s in both orders (mean confidence %.2f): %s", w.c.label(), r.c.label(), conf, bestReason(cs, w))
		if w.abs < share {
			fmt.Fprintf(&b, " Confidence is limited to %.2f by its own evidence.", w.abs)
		}
	}
	if t.split == t.pairs {
		v.CannotTell = "In every pair the model's choice followed the order the candidates were shown in, so its preferences say nothing"
	}
	if v.CannotTell != "" {
		v.CannotTell += "; a holdout test (--holdout-test or [fork] holdout_command) or a regression command ([fork] regression_command) would tell."
		fmt.Fprintf(&b, " %s", v.CannotTell)
	}
	if len(gated) > 0 {
		fmt.Fprintf(&b, " Not compared, for hard evidence against them: %s.", gatedText(gated, why))
	}
	v.Rationale = b.String()
	return v
}

// bestReason is the rationale of the most confident comparison w won.
func bestReason(cs []comparison, w *assessed) string {
	var best *Verdict
	for i := range cs {
		if cs[i].winner() == w && (best == nil || cs[i].v.Confidence > best.Confidence) {
			best = cs[i].v
		}
	}
	if best == nil {
		return ""
	}
	return clean(best.Rationale, maxRationaleBytes)
}

// gatedText lists the gated candidates with the evidence against each.
func gatedText(gated []*assessed, why map[*assessed][]string) string {
	parts := make([]string, len(gated))
	for i, a := range gated {
		parts[i] = a.c.label() + ": " + strings.Join(why[a], ", ")
	}
	return strings.Join(parts, "; ")
}
