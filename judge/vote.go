package judge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/tinehq/tine"
)

// DefaultRounds is how many rounds Vote asks for when told zero or fewer.
const DefaultRounds = 3

// Vote asks j rounds times (DefaultRounds when rounds <= 0) and returns the
// majority's verdict, with Judge "vote" and every round's verdict in
// Rounds. The rounds run concurrently, each seeing the candidates rotated
// by one more place, so that a judge favouring a position cannot carry a
// majority by position alone.
//
// The winner is the run more than half of the rounds picked; its
// confidence is the share of rounds that picked it times their mean
// confidence. Without a majority the verdict has no winner and confidence
// 0, which is not an error. Scores are each run's mean score over the
// rounds. Any round's error is returned, and stops the other rounds.
func Vote(ctx context.Context, j Judge, rounds int, task string, cands []Candidate) (*Verdict, error) {
	if err := checkCandidates(cands); err != nil {
		return nil, err
	}
	if j == nil {
		return nil, fmt.Errorf("judge: vote: no judge: %w", tine.ErrInvalid)
	}
	if rounds <= 0 {
		rounds = DefaultRounds
	}
	vs, err := runRounds(ctx, j, rounds, task, cands)
	if err != nil {
		return nil, err
	}
	return tally(vs, cands), nil
}

// runRounds asks j rounds times at once and returns the verdicts in round
// order, or the first error.
func runRounds(ctx context.Context, j Judge, rounds int, task string, cands []Candidate) ([]*Verdict, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
		vs    = make([]*Verdict, rounds)
	)
	for i := range rounds {
		wg.Go(func() {
			v, err := j.Judge(ctx, task, rotate(cands, i))
			if err == nil {
				err = checkRound(v, cands)
			}
			if err != nil {
				once.Do(func() {
					first = fmt.Errorf("judge: vote: round %d of %d: %w", i+1, rounds, err)
					cancel()
				})
				return
			}
			vs[i] = v
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return vs, nil
}

// rotate returns a copy of cands starting at place k.
func rotate(cands []Candidate, k int) []Candidate {
	k %= len(cands)
	return append(append(make([]Candidate, 0, len(cands)), cands[k:]...), cands[:k]...)
}

// checkRound rejects a verdict a vote cannot count.
func checkRound(v *Verdict, cands []Candidate) error {
	switch {
	case v == nil:
		return errors.New("judge returned no verdict")
	case !unit(v.Confidence):
		return fmt.Errorf("confidence %v is not in [0, 1]", v.Confidence)
	case v.Winner == "":
		return nil
	}
	for i := range cands {
		if cands[i].Run == v.Winner {
			return nil
		}
	}
	return fmt.Errorf("winner %q is not a candidate", v.Winner)
}

// tally counts the rounds' votes into one verdict.
func tally(vs []*Verdict, cands []Candidate) *Verdict {
	names := make(map[string]string, len(cands))
	for i := range cands {
		names[cands[i].Run] = cands[i].label()
	}
	votes := map[string]int{}
	for _, v := range vs {
		if v.Winner != "" {
			votes[v.Winner]++
		}
	}
	out := &Verdict{Judge: "vote", Scores: meanScores(vs, cands), Rounds: vs}
	best := leader(votes)
	if best == "" || 2*votes[best] <= len(vs) {
		out.Rationale = fmt.Sprintf("No majority in %d rounds (%s), so no winner.", len(vs), votesText(votes, len(vs), names))
		return out
	}
	var sum, top float64
	var why string
	for i, v := range vs {
		if v.Winner == best {
			sum += v.Confidence
			if v.Confidence > top || why == "" {
				top, why = v.Confidence, fmt.Sprintf("Round %d: %s", i+1, v.Rationale)
			}
		}
	}
	mean := sum / float64(votes[best])
	out.Winner = best
	out.Confidence = round4(float64(votes[best]) / float64(len(vs)) * mean)
	out.Rationale = fmt.Sprintf("%d of %d rounds picked %s (mean confidence %.2f). %s",
		votes[best], len(vs), names[best], mean, why)
	return out
}

// leader returns the run with the most votes, the first by run id on a tie.
func leader(votes map[string]int) string {
	best := ""
	for run, n := range votes {
		if n > votes[best] || (n == votes[best] && run < best) {
			best = run
		}
	}
	return best
}

// meanScores averages each candidate's score over the rounds that scored it.
func meanScores(vs []*Verdict, cands []Candidate) map[string]float64 {
	scores := make(map[string]float64, len(cands))
	for i := range cands {
		run := cands[i].Run
		var sum float64
		n := 0
		for _, v := range vs {
			if s, ok := v.Scores[run]; ok && !math.IsNaN(s) {
				sum, n = sum+s, n+1
			}
		}
		if n > 0 {
			scores[run] = round4(sum / float64(n))
		}
	}
	return scores
}

// votesText lists the votes as "src-1 1, src-2 1, 1 without a winner".
func votesText(votes map[string]int, rounds int, names map[string]string) string {
	runs := make([]string, 0, len(votes))
	counted := 0
	for run, n := range votes {
		runs = append(runs, run)
		counted += n
	}
	sort.Strings(runs)
	parts := make([]string, 0, len(runs)+1)
	for _, run := range runs {
		parts = append(parts, fmt.Sprintf("%s %d", names[run], votes[run]))
	}
	if counted < rounds {
		parts = append(parts, fmt.Sprintf("%d without a winner", rounds-counted))
	}
	return strings.Join(parts, ", ")
}
