package budget

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/tinehq/tine"
)

// op is one call on a Pool in a table-driven scenario.
type op struct {
	kind    string // "charge", "observe" or "finish"
	fork    string
	usd     float64
	wantErr error  // charge: nil or the sentinel expected
	victim  string // observe: the fork expected to be stopped, "" for none
}

func charge(fork string, usd float64, wantErr error) op {
	return op{kind: "charge", fork: fork, usd: usd, wantErr: wantErr}
}

func observe(fork string, usd float64, victim string) op {
	return op{kind: "observe", fork: fork, usd: usd, victim: victim}
}

func finish(fork string, usd float64) op { return op{kind: "finish", fork: fork, usd: usd} }

// apply runs o on p and checks its outcome.
func apply(t *testing.T, p *Pool, i int, o op) {
	t.Helper()
	switch o.kind {
	case "charge":
		before := p.Spent()
		err := p.Charge(o.fork, o.usd)
		if !errors.Is(err, o.wantErr) || (err == nil) != (o.wantErr == nil) {
			t.Fatalf("op %d: Charge(%q, %v) = %v, want %v", i, o.fork, o.usd, err, o.wantErr)
		}
		if err != nil && p.Spent().TotalUSD != before.TotalUSD {
			t.Fatalf("op %d: refused charge changed the total from %v to %v", i, before.TotalUSD, p.Spent().TotalUSD)
		}
	case "observe":
		v, ok := p.Observe(o.fork, o.usd)
		if v != o.victim || ok != (o.victim != "") {
			t.Fatalf("op %d: Observe(%q, %v) = %q, %v; want %q", i, o.fork, o.usd, v, ok, o.victim)
		}
	case "finish":
		p.Finish(o.fork, o.usd)
	default:
		t.Fatalf("op %d: unknown kind %q", i, o.kind)
	}
}

// spendOf returns fork's line in r.
func spendOf(t *testing.T, r Spending, fork string) ForkSpend {
	t.Helper()
	for _, f := range r.Forks {
		if f.Fork == fork {
			return f
		}
	}
	t.Fatalf("fork %q not in report %+v", fork, r)
	return ForkSpend{}
}

type scenario struct {
	name           string
	perFork, aggr  float64
	ops            []op
	wantTotal      float64
	wantStates     map[string]State
	wantForkSpends map[string]float64
}

func runScenarios(t *testing.T, tests []scenario) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.perFork, tt.aggr)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range tt.ops {
				apply(t, p, i, o)
			}
			r := p.Spent()
			if r.TotalUSD != tt.wantTotal {
				t.Errorf("total = %v, want %v", r.TotalUSD, tt.wantTotal)
			}
			for fork, want := range tt.wantStates {
				if got := spendOf(t, r, fork).State; got != want {
					t.Errorf("fork %q state = %q, want %q", fork, got, want)
				}
			}
			for fork, want := range tt.wantForkSpends {
				if got := spendOf(t, r, fork).USD; got != want {
					t.Errorf("fork %q spend = %v, want %v", fork, got, want)
				}
			}
		})
	}
}

func TestNew(t *testing.T) {
	tests := []struct {
		name             string
		perFork, aggr    float64
		wantErr          bool
		wantPF, wantAggr float64
	}{
		{"NoCaps", 0, 0, false, 0, 0},
		{"Both", 1.5, 4, false, 1.5, 4},
		{"NegativePerFork", -1, 0, true, 0, 0},
		{"NegativeAggregate", 0, -0.01, true, 0, 0},
		{"NaNPerFork", math.NaN(), 1, true, 0, 0},
		{"NaNAggregate", 1, math.NaN(), true, 0, 0},
		{"NegInf", math.Inf(-1), 0, true, 0, 0},
		{"PosInfIsNoCap", math.Inf(1), math.Inf(1), false, 0, 0},
		{"TinyCapStaysACap", 1e-12, 0, false, 1e-9, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.perFork, tt.aggr)
			if tt.wantErr {
				if !errors.Is(err, tine.ErrInvalid) {
					t.Fatalf("New = %v, want an error wrapping tine.ErrInvalid", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			r := p.Spent()
			if r.PerForkCap != tt.wantPF || r.AggregateCap != tt.wantAggr {
				t.Errorf("caps = %v, %v; want %v, %v", r.PerForkCap, r.AggregateCap, tt.wantPF, tt.wantAggr)
			}
		})
	}
}

func TestPool_Charge(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "UnderForkCap", perFork: 1, ops: []op{charge("a", 0.5, nil), charge("a", 0.49, nil)},
			wantTotal: 0.99, wantStates: map[string]State{"a": StateRunning}},
		{name: "ExactCentsAtForkCap", perFork: 0.30, ops: []op{charge("a", 0.10, nil), charge("a", 0.20, nil)},
			wantTotal: 0.30, wantStates: map[string]State{"a": StateRunning}},
		{name: "OneCentOverForkCap", perFork: 0.30, ops: []op{charge("a", 0.10, nil), charge("a", 0.21, ErrForkCap)},
			wantTotal: 0.10, wantStates: map[string]State{"a": StateKilled}},
		{name: "ForkCapIsPerFork", perFork: 1, ops: []op{charge("a", 1, nil), charge("b", 1, nil)},
			wantTotal: 2, wantStates: map[string]State{"a": StateRunning, "b": StateRunning}},
		{name: "ExactCentsAtAggregate", aggr: 0.60, ops: []op{
			charge("a", 0.10, nil), charge("b", 0.20, nil), charge("c", 0.30, nil)},
			wantTotal: 0.60, wantStates: map[string]State{"a": StateRunning, "b": StateRunning, "c": StateRunning}},
		{name: "OverAggregateKillsOnlyCharger", aggr: 0.60, ops: []op{
			charge("a", 0.30, nil), charge("b", 0.30, nil), charge("c", 0.01, ErrAggregateCap)},
			wantTotal: 0.60, wantStates: map[string]State{"a": StateRunning, "b": StateRunning, "c": StateKilled},
			wantForkSpends: map[string]float64{"c": 0}},
		{name: "BothCrossedReportsForkCap", perFork: 1, aggr: 1, ops: []op{charge("a", 2, ErrForkCap)},
			wantTotal: 0, wantStates: map[string]State{"a": StateKilled}},
		{name: "RefusedWholeNotPartially", perFork: 1, ops: []op{charge("a", 0.9, nil), charge("a", 0.2, ErrForkCap)},
			wantTotal: 0.9, wantForkSpends: map[string]float64{"a": 0.9}},
		{name: "KilledRefusesLaterCharges", perFork: 1, ops: []op{
			charge("a", 2, ErrForkCap), charge("a", 0.01, ErrKilled), charge("a", 0, ErrKilled)},
			wantTotal: 0, wantStates: map[string]State{"a": StateKilled}},
		{name: "FinishedRefusesWithoutKilling", ops: []op{finish("a", 1), charge("a", 0.5, ErrFinished)},
			wantTotal: 1, wantStates: map[string]State{"a": StateFinished}},
		{name: "NoCapsTakeAnything", ops: []op{charge("a", 1e6, nil), charge("b", 1e6, nil)}, wantTotal: 2e6},
		{name: "HugeChargeSaturates", aggr: 10, ops: []op{charge("a", 1e300, ErrAggregateCap), charge("b", 10, nil)},
			wantTotal: 10},
	})
}

func TestPool_ChargeOddAmountsCountAsZero(t *testing.T) {
	for _, usd := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, math.Copysign(0, -1), -1e-12, 0} {
		t.Run(strconv.FormatFloat(usd, 'g', -1, 64), func(t *testing.T) {
			p, _ := New(1, 1)
			if err := p.Charge("a", 1); err != nil {
				t.Fatal(err)
			}
			// Both caps are full: only an amount counted as zero fits.
			if err := p.Charge("a", usd); err != nil {
				t.Fatalf("Charge(%v) on a full pool = %v, want nil", usd, err)
			}
			if v, ok := p.Observe("b", usd); ok {
				t.Fatalf("Observe(%v) stopped %q", usd, v)
			}
			p.Finish("c", usd)
			if r := p.Spent(); r.TotalUSD != 1 || spendOf(t, r, "c").USD != 0 {
				t.Fatalf("report = %+v, want total 1 and c at 0", r)
			}
		})
	}
}

func TestPool_Observe(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "UnderCapsNoVictim", perFork: 5, aggr: 10, ops: []op{
			observe("a", 3, ""), observe("b", 4, ""), observe("a", 5, "")},
			wantTotal: 9, wantStates: map[string]State{"a": StateRunning, "b": StateRunning}},
		{name: "ExactlyAtAggregateNoVictim", aggr: 1, ops: []op{observe("a", 0.40, ""), observe("b", 0.60, "")},
			wantTotal: 1},
		{name: "AggregatePicksMostExpensiveNotObserver", aggr: 10, ops: []op{
			observe("a", 6, ""), observe("b", 3, ""), observe("c", 2, "a")},
			wantTotal: 11, wantStates: map[string]State{"a": StateKilled, "b": StateRunning, "c": StateRunning}},
		{name: "AggregateMayPickObserver", aggr: 10, ops: []op{
			observe("a", 2, ""), observe("b", 3, ""), observe("b", 9, "b")},
			wantTotal: 11, wantStates: map[string]State{"a": StateRunning, "b": StateKilled}},
		{name: "TieGoesToSmallestID", aggr: 10, ops: []op{
			observe("fork-2", 4, ""), observe("fork-10", 4, ""), observe("fork-1", 3, "fork-10")},
			wantStates: map[string]State{"fork-10": StateKilled, "fork-1": StateRunning, "fork-2": StateRunning},
			wantTotal:  11},
		{name: "KilledAndFinishedAreNotInFlight", perFork: 8, aggr: 10, ops: []op{
			charge("k", 9, ErrForkCap), observe("k", 7, ""), finish("f", 2),
			observe("a", 1, ""), observe("b", 0.5, "a")},
			wantTotal: 10.5, wantStates: map[string]State{"k": StateKilled, "f": StateFinished, "a": StateKilled, "b": StateRunning}},
		{name: "PerForkCrossingStopsObserver", perFork: 2, aggr: 100, ops: []op{
			observe("big", 50, "big"), observe("small", 2.01, "small")},
			wantTotal: 52.01, wantStates: map[string]State{"big": StateKilled, "small": StateKilled}},
		{name: "PerForkAtCapIsFine", perFork: 2, ops: []op{observe("a", 2, "")}, wantTotal: 2},
		{name: "LowerValuesIgnored", aggr: 10, ops: []op{
			observe("a", 5, ""), observe("a", 3, ""), observe("a", math.NaN(), ""), observe("a", -4, "")},
			wantTotal: 5, wantForkSpends: map[string]float64{"a": 5}},
		{name: "RepeatedValueStopsNothingMore", aggr: 10, ops: []op{
			observe("a", 6, ""), observe("b", 5, "a"), observe("b", 5, "")},
			wantTotal: 11, wantStates: map[string]State{"b": StateRunning}},
		{name: "EachRaiseOverCapStopsOneMore", aggr: 10, ops: []op{
			observe("a", 6, ""), observe("b", 5, "a"), observe("c", 1, "b"), observe("c", 2, "c")},
			wantTotal: 13, wantStates: map[string]State{"a": StateKilled, "b": StateKilled, "c": StateKilled}},
		{name: "NothingInFlightNoVictim", aggr: 1, ops: []op{
			finish("a", 0.5), charge("b", 2, ErrAggregateCap), observe("b", 3, "")},
			wantTotal: 3.5, wantStates: map[string]State{"b": StateKilled}},
		{name: "FinishedForkIgnoresObserve", aggr: 1, ops: []op{finish("a", 0.5), observe("a", 5, "")},
			wantTotal: 0.5, wantStates: map[string]State{"a": StateFinished}},
		{name: "LateReportOfKilledForkCounts", perFork: 5, aggr: 10, ops: []op{
			observe("a", 6, "a"), observe("b", 3, ""), observe("a", 8, "b")},
			wantTotal: 11, wantStates: map[string]State{"a": StateKilled, "b": StateKilled}},
		{name: "ObserveTopsUpCharges", perFork: 10, ops: []op{
			charge("a", 2, nil), observe("a", 1, ""), observe("a", 3, ""), charge("a", 1, nil)},
			wantTotal: 4, wantForkSpends: map[string]float64{"a": 4}},
	})
}

// TestPool_FreeingRoom pins down what stopping a fork frees: the victim's
// spend keeps counting toward the aggregate, the others keep running and
// may charge whatever still fits, and settling the victim lower frees the
// difference.
func TestPool_FreeingRoom(t *testing.T) {
	p, _ := New(0, 10)
	for i, o := range []op{
		observe("a", 6, ""), observe("b", 2, ""), observe("c", 1, ""), // total 9
		observe("a", 7.5, "a"), // total 10.5: a is the most expensive in flight
	} {
		apply(t, p, i, o)
	}
	// a's spend still counts: the aggregate is over, so b cannot charge a cent.
	if err := p.Charge("b", 0.01); !errors.Is(err, ErrAggregateCap) {
		t.Fatalf("Charge(b) after the kill = %v, want ErrAggregateCap", err)
	}
	// c was not stopped; a zero charge is fine.
	if err := p.Charge("c", 0); err != nil {
		t.Fatalf("Charge(c, 0) = %v", err)
	}
	// a's real final cost is lower than its estimate: room is freed for c.
	p.Finish("a", 6.5) // total 6.5 + 2 + 1 = 9.5
	if err := p.Charge("c", 0.50); err != nil {
		t.Fatalf("Charge(c, 0.50) into freed room = %v", err)
	}
	if err := p.Charge("c", 0.01); !errors.Is(err, ErrAggregateCap) {
		t.Fatalf("Charge(c, 0.01) past the cap = %v, want ErrAggregateCap", err)
	}
	r := p.Spent()
	if r.TotalUSD != 10 || spendOf(t, r, "a").State != StateKilled || spendOf(t, r, "b").State != StateKilled {
		t.Fatalf("report = %+v", r)
	}
}

func TestPool_Finish(t *testing.T) {
	runScenarios(t, []scenario{
		{name: "ReplacesHigherEstimate", ops: []op{observe("a", 5, ""), finish("a", 3.25)},
			wantTotal: 3.25, wantStates: map[string]State{"a": StateFinished}},
		{name: "ReplacesLowerEstimate", ops: []op{observe("a", 1, ""), finish("a", 1.75)},
			wantTotal: 1.75, wantForkSpends: map[string]float64{"a": 1.75}},
		{name: "ReplacesCharges", ops: []op{charge("a", 1, nil), charge("a", 1, nil), charge("b", 1, nil), finish("a", 0.5)},
			wantTotal: 1.5, wantForkSpends: map[string]float64{"a": 0.5, "b": 1}},
		{name: "EnforcesNoCap", perFork: 1, aggr: 1, ops: []op{finish("a", 3)},
			wantTotal: 3, wantStates: map[string]State{"a": StateFinished}},
		{name: "KilledStaysKilled", aggr: 1, ops: []op{observe("a", 2, "a"), finish("a", 1.5)},
			wantTotal: 1.5, wantStates: map[string]State{"a": StateKilled}},
		{name: "NaNFinalIsZero", ops: []op{observe("a", 2, ""), finish("a", math.NaN())},
			wantTotal: 0, wantStates: map[string]State{"a": StateFinished}},
		{name: "SecondFinishReplacesAgain", ops: []op{finish("a", 2), finish("a", 1)},
			wantTotal: 1, wantStates: map[string]State{"a": StateFinished}},
	})
}

func TestPool_SpentSorted(t *testing.T) {
	p, _ := New(2, 0)
	for _, f := range []string{"c", "a", "b"} {
		if err := p.Charge(f, 0.01); err != nil {
			t.Fatal(err)
		}
	}
	r := p.Spent()
	if len(r.Forks) != 3 || r.Forks[0].Fork != "a" || r.Forks[1].Fork != "b" || r.Forks[2].Fork != "c" {
		t.Fatalf("forks = %+v, want sorted a, b, c", r.Forks)
	}
	if r.TotalUSD != 0.03 || r.PerForkCap != 2 || r.AggregateCap != 0 {
		t.Fatalf("report = %+v", r)
	}
}

// TestPool_Concurrent charges from many goroutines at once; every goroutine
// charges until refused. The aggregate cap must never be exceeded and the
// total must equal the sum of accepted charges.
func TestPool_Concurrent(t *testing.T) {
	const (
		forks = 32
		aggr  = 5.00
	)
	p, _ := New(0.40, aggr)
	accepted := make([]int64, forks) // cents
	var wg sync.WaitGroup
	for i := range forks {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 1))
			id := "fork-" + strconv.Itoa(i)
			for {
				cents := 1 + rng.Int64N(7)
				if err := p.Charge(id, float64(cents)/100); err != nil {
					return
				}
				accepted[i] += cents
				if r := p.Spent(); r.TotalUSD > aggr {
					t.Errorf("total %v over the aggregate cap", r.TotalUSD)
				}
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			p.Observe("watcher", 0) // never raises: must not disturb anything
		}
	})
	wg.Wait()
	var sum int64
	for _, c := range accepted {
		sum += c
	}
	r := p.Spent()
	if r.TotalUSD > aggr || r.TotalUSD != float64(sum)/100 {
		t.Fatalf("total = %v, accepted sum = %d cents, cap %v", r.TotalUSD, sum, aggr)
	}
	if r.TotalUSD <= aggr-0.07 {
		t.Fatalf("total = %v: every fork stopped although room was left", r.TotalUSD)
	}
	for _, f := range r.Forks {
		if f.Fork != "watcher" && (f.State != StateKilled || f.USD > 0.40) {
			t.Errorf("fork %+v: want budget_killed within its 0.40 cap", f)
		}
	}
}

// TestPool_ConcurrentObserve streams estimates from many goroutines; each
// fork is stopped at most once and every victim was in flight.
func TestPool_ConcurrentObserve(t *testing.T) {
	p, _ := New(0, 10)
	var (
		mu      sync.Mutex
		victims = map[string]int{}
		wg      sync.WaitGroup
	)
	for i := range 16 {
		wg.Go(func() {
			id := "fork-" + strconv.Itoa(i)
			for step := 1; step <= 50; step++ {
				if v, ok := p.Observe(id, float64(step)*0.02*float64(i+1)); ok {
					mu.Lock()
					victims[v]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	for v, n := range victims {
		if n != 1 {
			t.Errorf("fork %q stopped %d times", v, n)
		}
	}
	for _, f := range p.Spent().Forks {
		if _, stopped := victims[f.Fork]; stopped != (f.State == StateKilled) {
			t.Errorf("fork %+v: stopped=%v disagrees with state", f, stopped)
		}
	}
}

func BenchmarkPool_Charge(b *testing.B) {
	p, _ := New(0, 0)
	ids := make([]string, 16)
	for i := range ids {
		ids[i] = "fork-" + strconv.Itoa(i)
	}
	for i := 0; b.Loop(); i++ {
		_ = p.Charge(ids[i%len(ids)], 0.001)
	}
}

func BenchmarkPool_Observe(b *testing.B) {
	p, _ := New(0, 1e9)
	ids := make([]string, 16)
	for i := range ids {
		ids[i] = "fork-" + strconv.Itoa(i)
	}
	for i := 0; b.Loop(); i++ {
		p.Observe(ids[i%len(ids)], float64(i)*0.001)
	}
}

func TestPool_SpentBy(t *testing.T) {
	p, err := New(1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Charge("a", 0.25); err != nil {
		t.Fatal(err)
	}
	p.Observe("b", 0.5)
	p.Charge("a", 2) // refused: not counted
	for fork, want := range map[string]float64{"a": 0.25, "b": 0.5, "never": 0} {
		if got := p.SpentBy(fork); got != want {
			t.Errorf("SpentBy(%q) = %v, want %v", fork, got, want)
		}
	}
}
