package budget

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/tinehq/tine"
)

// Errors returned by Charge. Test for them with errors.Is.
var (
	// ErrForkCap means the charge would take the fork over the per-fork cap.
	ErrForkCap = errors.New("per-fork budget exceeded")
	// ErrAggregateCap means the charge would take all forks together over
	// the aggregate cap.
	ErrAggregateCap = errors.New("aggregate budget exceeded")
	// ErrKilled means the fork was already stopped for its budget.
	ErrKilled = errors.New("fork was stopped for its budget")
	// ErrFinished means the fork's spend was already settled by Finish.
	ErrFinished = errors.New("fork already finished")
)

// State is where a fork stands with respect to its budget.
type State string

// The states of a fork in a Pool.
const (
	// StateRunning means the fork may still spend.
	StateRunning State = "running"
	// StateFinished means the fork's spend was settled by Finish.
	StateFinished State = "finished"
	// StateKilled means the fork crossed a cap and must be stopped.
	StateKilled State = "budget_killed"
)

// Spending is a snapshot of a Pool, as shown by `tine cost GROUP`.
type Spending struct {
	Forks        []ForkSpend `json:"forks"` // sorted by Fork
	TotalUSD     float64     `json:"total_usd"`
	PerForkCap   float64     `json:"per_fork_cap_usd"`  // 0 means no cap
	AggregateCap float64     `json:"aggregate_cap_usd"` // 0 means no cap
}

// ForkSpend is one fork's line in a Spending.
type ForkSpend struct {
	Fork  string  `json:"fork"`
	USD   float64 `json:"usd"`
	State State   `json:"state"`
}

// forkEntry is the pool's record of one fork.
type forkEntry struct {
	spent int64 // nanodollars
	state State
}

// Pool meters the spend of a group of forks against a per-fork and an
// aggregate cap. It is safe for concurrent use; the zero value is not usable,
// call New.
type Pool struct {
	perForkUSD, aggregateUSD float64
	perFork, aggregate       int64 // nanodollars; 0 means no cap

	mu    sync.Mutex
	forks map[string]*forkEntry
	total int64
}

// New returns an empty Pool with the given caps in US dollars. A cap of 0
// (or +Inf) means no cap; a negative or NaN cap is an error wrapping
// tine.ErrInvalid.
func New(perFork, aggregate float64) (*Pool, error) {
	pf, err := capNanos("per-fork", perFork)
	if err != nil {
		return nil, err
	}
	ag, err := capNanos("aggregate", aggregate)
	if err != nil {
		return nil, err
	}
	return &Pool{
		perForkUSD:   fromNanos(pf),
		aggregateUSD: fromNanos(ag),
		perFork:      pf,
		aggregate:    ag,
		forks:        make(map[string]*forkEntry),
	}, nil
}

// capNanos validates a cap and converts it; a positive cap too small to
// represent becomes one nanodollar rather than "no cap".
func capNanos(name string, usd float64) (int64, error) {
	if math.IsNaN(usd) || usd < 0 {
		return 0, fmt.Errorf("budget: %s cap %v: must be 0 (no cap) or positive: %w", name, usd, tine.ErrInvalid)
	}
	if math.IsInf(usd, 1) {
		return 0, nil
	}
	n := toNanos(usd)
	if n == 0 && usd > 0 {
		n = 1
	}
	return n, nil
}

// Charge records a settled cost of usd for fork. A charge that would take
// the fork over the per-fork cap, or all forks together over the aggregate
// cap, is refused whole: nothing is recorded, the fork is marked
// StateKilled and the error wraps ErrForkCap or ErrAggregateCap (the
// per-fork cap is checked first). Reaching a cap exactly is allowed, and a
// zero charge (including NaN, ±Inf and negative amounts) is always accepted
// by a running fork, even when live estimates have already put the
// aggregate over its cap.
// Charges to a killed fork are refused with ErrKilled, to a finished one
// with ErrFinished; neither records anything.
func (p *Pool) Charge(fork string, usd float64) error {
	n := toNanos(usd)
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.entry(fork)
	switch f.state {
	case StateKilled:
		return fmt.Errorf("budget: fork %q: charge of %s refused: %w", fork, dollars(n), ErrKilled)
	case StateFinished:
		return fmt.Errorf("budget: fork %q: charge of %s refused: %w", fork, dollars(n), ErrFinished)
	}
	if err := p.check(fork, f, n); err != nil {
		f.state = StateKilled
		return err
	}
	f.spent = satAdd(f.spent, n)
	p.total = satAdd(p.total, n)
	return nil
}

// check reports whether adding n to fork f would cross a cap. A zero charge
// adds nothing and so crosses nothing.
func (p *Pool) check(fork string, f *forkEntry, n int64) error {
	if n == 0 {
		return nil
	}
	if over(satAdd(f.spent, n), p.perFork) {
		return fmt.Errorf("budget: fork %q: charge of %s would bring the fork to %s, over its cap of %s: %w",
			fork, dollars(n), dollars(satAdd(f.spent, n)), dollars(p.perFork), ErrForkCap)
	}
	if over(satAdd(p.total, n), p.aggregate) {
		return fmt.Errorf("budget: fork %q: charge of %s would bring all forks to %s, over the aggregate cap of %s: %w",
			fork, dollars(n), dollars(satAdd(p.total, n)), dollars(p.aggregate), ErrAggregateCap)
	}
	return nil
}

// Observe records a live estimate of what fork has spent so far, for agents
// whose cost is known only while they stream. The estimate is monotonic: a
// value lower than what is already recorded for the fork is ignored.
// Observations of a finished fork are ignored; those of a killed fork are
// still recorded, since that money was spent.
//
// When an observation raises the fork's spend, Observe picks at most one
// fork to stop, marks it StateKilled and returns it:
//   - the observed fork itself, if it is running and now over the per-fork cap;
//   - otherwise, if all forks together (killed ones included) are now over the
//     aggregate cap, the running fork with the highest spend; among forks with
//     equal spend the lexicographically smallest fork id is chosen.
//
// ok is false when no fork is to be stopped. An observation that does not
// raise the spend never stops anything, so repeating a value is harmless.
func (p *Pool) Observe(fork string, runningUSD float64) (victim string, ok bool) {
	n := toNanos(runningUSD)
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.entry(fork)
	if f.state == StateFinished || n <= f.spent {
		return "", false
	}
	p.total = satAdd(p.total-f.spent, n)
	f.spent = n
	if f.state == StateRunning && over(f.spent, p.perFork) {
		f.state = StateKilled
		return fork, true
	}
	if !over(p.total, p.aggregate) {
		return "", false
	}
	return p.killMostExpensive()
}

// killMostExpensive marks the running fork with the highest spend killed;
// ties go to the lexicographically smallest id.
func (p *Pool) killMostExpensive() (string, bool) {
	var (
		best   string
		bestF  *forkEntry
		seeded bool
	)
	for id, f := range p.forks {
		if f.state != StateRunning {
			continue
		}
		if !seeded || f.spent > bestF.spent || (f.spent == bestF.spent && id < best) {
			best, bestF, seeded = id, f, true
		}
	}
	if !seeded {
		return "", false
	}
	bestF.state = StateKilled
	return best, true
}

// Finish settles fork's spend: finalUSD replaces every charge and estimate
// recorded for it, even when lower. A running fork becomes StateFinished; a
// killed fork stays StateKilled. Finish enforces no cap — the money is
// already spent — but a later Charge or Observe sees the new aggregate.
func (p *Pool) Finish(fork string, finalUSD float64) {
	n := toNanos(finalUSD)
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.entry(fork)
	p.total = satAdd(p.total-f.spent, n)
	f.spent = n
	if f.state == StateRunning {
		f.state = StateFinished
	}
}

// SpentBy returns what fork has spent so far, as the pool counts it (0 for
// a fork it never saw).
func (p *Pool) SpentBy(fork string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, ok := p.forks[fork]; ok {
		return fromNanos(f.spent)
	}
	return 0
}

// Spent returns a snapshot of every fork's spend, sorted by fork id, with the
// total and the caps.
func (p *Pool) Spent() Spending {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Spending{
		Forks:        make([]ForkSpend, 0, len(p.forks)),
		TotalUSD:     fromNanos(p.total),
		PerForkCap:   p.perForkUSD,
		AggregateCap: p.aggregateUSD,
	}
	for id, f := range p.forks {
		r.Forks = append(r.Forks, ForkSpend{Fork: id, USD: fromNanos(f.spent), State: f.state})
	}
	sort.Slice(r.Forks, func(i, j int) bool { return r.Forks[i].Fork < r.Forks[j].Fork })
	return r
}

// entry returns fork's record, creating a running one. p.mu must be held.
func (p *Pool) entry(fork string) *forkEntry {
	f, ok := p.forks[fork]
	if !ok {
		f = &forkEntry{state: StateRunning}
		p.forks[fork] = f
	}
	return f
}
