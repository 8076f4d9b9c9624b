package forkrun

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"context"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/judge"
	"github.com/tinehq/tine/merge"
	"github.com/tinehq/tine/runtime"
)

// These tests run fork-runs on a fakeHost: no root, no supervisor, no
// mount. The agents are functions writing what a command agent prints.

// commandAgent is a command agent on PATH; the fake runs none of it.
var commandAgent = agent.Config{Kind: agent.CommandKind, Args: []string{"true"}}

func forkByName(t *testing.T, rep *Report, name string) *Fork {
	t.Helper()
	for _, f := range rep.Forks {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no fork %s in the report", name)
	return nil
}

func TestReadiness(t *testing.T) {
	pass, fail, two := &Test{Passed: true}, &Test{Exit: 1}, 2
	for _, c := range []struct {
		name  string
		f     Fork
		s     engine.ForkSummary
		ready bool
		why   string
	}{
		{"ready", Fork{State: Finished, Test: pass}, engine.ForkSummary{Changed: 1, Ready: true}, true, ""},
		{"no tests configured", Fork{State: Finished}, engine.ForkSummary{Changed: 1, Ready: true}, true, ""},
		{"killed", Fork{State: BudgetKilled, Reason: "over"}, engine.ForkSummary{Changed: 1, Ready: true}, false, "budget_killed: over"},
		{"still running", Fork{State: Running}, engine.ForkSummary{Changed: 1, Ready: true}, false, "not finished: running"},
		{"agent error", Fork{State: Finished, Agent: agent.Snapshot{ExitCode: &two}}, engine.ForkSummary{Changed: 1, Ready: true}, false, ""},
		{"no changes", Fork{State: Finished, Test: pass}, engine.ForkSummary{Ready: true}, false, NoChanges},
		{"tests failed", Fork{State: Finished, Test: fail}, engine.ForkSummary{Changed: 1, Ready: true}, false, "tests failed"},
		{"merge not clean", Fork{State: Finished, Test: pass}, engine.ForkSummary{Changed: 1, NotReady: "conflicts on a.txt"}, false, "conflicts on a.txt"},
	} {
		ready, why := Readiness(&c.f, c.s, agent.CommandKind)
		if ready != c.ready || (c.why != "" && why != c.why) || (!ready && why == "") {
			t.Errorf("%s: ready %v %q, want %v %q", c.name, ready, why, c.ready, c.why)
		}
	}
}

// TestRun_AutoMergesTheReadyWinner: the fork whose tests pass wins the
// heuristic and is merged through Choose; the other, whose tests fail, is
// not ready and is discarded.
func TestRun_AutoMergesTheReadyWinner(t *testing.T) {
	fr := newFakeRun(t, &fakeFork{changed: 2, testRC: 1, diff: "+a\n"}, &fakeFork{changed: 3, diff: "+b\n"})
	rep, err := fr.run(t, Options{Source: "ws/source", Prompt: "fix", N: 2, Agent: commandAgent,
		Mode: Auto, Test: "make test", Threshold: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != OutcomeMerged || rep.Winner != "source-2" {
		t.Fatalf("outcome %s (%s), winner %q: want source-2 merged", rep.Outcome, rep.OutcomeDetail, rep.Winner)
	}
	if !slices.Equal(fr.chosen, []string{"f1"}) || !slices.Equal(rep.Discarded, []string{"source-1"}) {
		t.Errorf("chose %v, discarded %v", fr.chosen, rep.Discarded)
	}
	loser := forkByName(t, rep, "source-1")
	if loser.Ready || loser.NotReady != "tests failed" || loser.Test == nil || loser.Test.Passed {
		t.Errorf("the failing fork: ready %v (%q), test %+v", loser.Ready, loser.NotReady, loser.Test)
	}
	if w := forkByName(t, rep, "source-2"); !w.Ready || w.FilesChanged != 3 || !w.MergeClean {
		t.Errorf("the winner: ready %v, changed %d, clean %v", w.Ready, w.FilesChanged, w.MergeClean)
	}
	if !slices.Contains(fr.events, tine.EventForkRunVerdict) || !slices.Contains(fr.events, tine.EventForkRunEnd) {
		t.Errorf("events %v", fr.events)
	}
}

// TestRun_ResolveOutcomes: what resolution does short of a merge, by
// mode, threshold and the merge's result.
func TestRun_ResolveOutcomes(t *testing.T) {
	for _, c := range []struct {
		name      string
		mode      MergeMode
		threshold float64
		conflict  bool
		outcome   string
		chosen    bool
	}{
		{"manual reports", Manual, 0.01, false, OutcomeReported, false},
		{"fallback awaits confirmation", AutoWithFallback, 0.01, false, OutcomeAwaitingChoice, false},
		{"below the threshold", Auto, 1, false, OutcomeAwaitingChoice, false},
		{"a conflict writes nothing", Auto, 0.01, true, OutcomeConflict, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			fr := newFakeRun(t, &fakeFork{changed: 1, diff: "+a\n"})
			if c.conflict {
				choose := fr.ChooseFunc
				fr.ChooseFunc = func(ctx context.Context, ref, run string, promote engine.ChooseOptions) (*engine.ChooseResult, error) {
					choose(ctx, ref, run, promote)
					return nil, fmt.Errorf("merging: %w", merge.ErrConflict)
				}
			}
			rep, err := fr.run(t, Options{Source: "ws/source", Prompt: "fix", N: 1, Agent: commandAgent, Mode: c.mode, Threshold: c.threshold})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Outcome != c.outcome || rep.Verdict == nil || rep.Winner != "source-1" {
				t.Errorf("outcome %s (%s), winner %q: want %s", rep.Outcome, rep.OutcomeDetail, rep.Winner, c.outcome)
			}
			if chose := len(fr.chosen) > 0; chose != c.chosen {
				t.Errorf("Choose called: %v, want %v", fr.chosen, c.chosen)
			}
			if len(rep.Discarded) != 0 {
				t.Errorf("discarded %v", rep.Discarded)
			}
		})
	}
}

// TestRun_NoWorkJudgesNothing: forks that changed nothing are not judged
// and nothing is chosen.
func TestRun_NoWorkJudgesNothing(t *testing.T) {
	fr := newFakeRun(t, &fakeFork{}, &fakeFork{})
	rep, err := fr.run(t, Options{Source: "ws/source", Prompt: "fix", N: 2, Agent: commandAgent, Mode: Auto})
	if !errors.Is(err, ErrNoWork) {
		t.Fatalf("error %v, want ErrNoWork", err)
	}
	if rep.Outcome != OutcomeNoWinner || rep.Verdict != nil || len(fr.chosen) > 0 {
		t.Errorf("outcome %s, verdict %+v, chosen %v", rep.Outcome, rep.Verdict, fr.chosen)
	}
	for _, f := range rep.Forks {
		if f.Ready || f.NotReady != NoChanges {
			t.Errorf("%s: ready %v %q", f.Name, f.Ready, f.NotReady)
		}
	}
}

// chargingAgent prints a charge of usd n times, then waits to be killed
// (a second at most) and says in killed whether it was.
func chargingAgent(usd float64, n int, killed *sync.Map) func(runtime.ExecOptions) *runtime.ExecResult {
	return func(o runtime.ExecOptions) *runtime.ExecResult {
		for i := range n {
			fmt.Fprintf(o.Stdout, "{\"tine_cost_usd\": %g}\nstep %d\n", usd, i)
		}
		select {
		case <-o.Kill:
			killed.Store(o.Args[0], true)
			return &runtime.ExecResult{Exit: -1, Killed: true}
		case <-time.After(time.Second):
			return &runtime.ExecResult{}
		}
	}
}

// TestRun_BudgetKillsTheAgent: a command agent's charges past the
// per-fork cap, or past the aggregate cap, kill it (its Kill channel is
// closed), and the fork ends budget_killed, unjudged.
func TestRun_BudgetKillsTheAgent(t *testing.T) {
	for _, c := range []struct {
		name              string
		budget, aggregate float64
		why               string
	}{
		{"per fork", 0.0025, 0, "per-fork budget exceeded"},
		{"aggregate", 1, 0.0025, "aggregate budget exceeded"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var killed sync.Map
			fr := newFakeRun(t, &fakeFork{changed: 1, agent: chargingAgent(0.001, 10, &killed)})
			rep, err := fr.run(t, Options{Source: "ws/source", Prompt: "spend", N: 1, Agent: commandAgent,
				Mode: Auto, Budget: c.budget, Aggregate: c.aggregate})
			if !errors.Is(err, ErrNoJudgeable) {
				t.Errorf("error %v, want ErrNoJudgeable", err)
			}
			f := rep.Forks[0]
			if f.State != BudgetKilled || !strings.Contains(f.Reason, c.why) {
				t.Errorf("fork %s (%s), want budget_killed %q", f.State, f.Reason, c.why)
			}
			if _, ok := killed.Load("true"); !ok {
				t.Error("the agent's Kill channel was never closed")
			}
			if f.CostUSD > 0.0025+1e-9 || f.CostUSD < 0.002-1e-9 {
				t.Errorf("charged $%v, want the $0.002 under the $0.0025 cap", f.CostUSD)
			}
			if rep.Verdict != nil || len(fr.chosen) > 0 || rep.Outcome != OutcomeNoWinner {
				t.Errorf("outcome %s, verdict %+v, chosen %v", rep.Outcome, rep.Verdict, fr.chosen)
			}
		})
	}
}

// scriptedJudge picks, on its nth call, picks[n] with full confidence.
type scriptedJudge struct {
	mu    sync.Mutex
	picks []string
	calls int
}

func (j *scriptedJudge) Judge(_ context.Context, _ string, cands []judge.Candidate) (*judge.Verdict, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	w := j.picks[j.calls%len(j.picks)]
	j.calls++
	scores := map[string]float64{}
	for _, c := range cands {
		scores[c.Run] = 0
	}
	scores[w] = 1
	return &judge.Verdict{Judge: "scripted", Winner: w, Confidence: 1, Scores: scores}, nil
}

// TestRun_VoteTakesTheMajority: vote mode asks the judge three times and
// merges the fork most rounds picked; without a majority nothing is
// merged.
func TestRun_VoteTakesTheMajority(t *testing.T) {
	forks := func() []*fakeFork {
		return []*fakeFork{{changed: 1, diff: "+a\n"}, {changed: 1, diff: "+b\n"}, {changed: 1, diff: "+c\n"}}
	}
	t.Run("majority", func(t *testing.T) {
		fr := newFakeRun(t, forks()...)
		j := &scriptedJudge{picks: []string{"f1", "f2", "f1"}}
		rep, err := fr.run(t, Options{Source: "ws/source", Prompt: "fix", N: 3, Agent: commandAgent, Mode: VoteMode, Judge: j, Threshold: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if j.calls != 3 || rep.Verdict == nil || rep.Verdict.Judge != "vote" || len(rep.Verdict.Rounds) != 3 {
			t.Fatalf("%d judge calls, verdict %+v", j.calls, rep.Verdict)
		}
		if rep.Winner != "source-2" || rep.Outcome != OutcomeMerged || !slices.Equal(fr.chosen, []string{"f1"}) {
			t.Errorf("winner %q, outcome %s (%s), chosen %v", rep.Winner, rep.Outcome, rep.OutcomeDetail, fr.chosen)
		}
	})
	t.Run("no majority", func(t *testing.T) {
		fr := newFakeRun(t, forks()...)
		j := &scriptedJudge{picks: []string{"f0", "f1", "f2"}}
		rep, err := fr.run(t, Options{Source: "ws/source", Prompt: "fix", N: 3, Agent: commandAgent, Mode: VoteMode, Judge: j, Threshold: 0.5})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Winner != "" || rep.Outcome != OutcomeNoWinner || len(fr.chosen) > 0 {
			t.Errorf("winner %q, outcome %s, chosen %v", rep.Winner, rep.Outcome, fr.chosen)
		}
	})
}

// TestRun_StopsForksThatKeepNoServices: each fork's supervisor is stopped
// once its agent and tests are done (the source's were not running, so no
// fork keeps services).
func TestRun_StopsForksThatKeepNoServices(t *testing.T) {
	fr := newFakeRun(t, &fakeFork{changed: 1}, &fakeFork{changed: 1})
	fr.ProcStateFunc = func(r engine.Ref) (string, int) {
		if r.Run.ID == "src" {
			return "stopped", 0
		}
		return runtime.ProcRunning, 1
	}
	if _, err := fr.run(t, Options{Source: "ws/source", Prompt: "fix", N: 2, Agent: commandAgent, Mode: Manual}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(fr.stopped)
	if !slices.Equal(slices.Compact(fr.stopped), []string{"f0", "f1"}) {
		t.Errorf("stopped %v, want both forks", fr.stopped)
	}
}

// TestStart_SourceMustBeLive: a run that is not live is not forked.
func TestStart_SourceMustBeLive(t *testing.T) {
	fr := newFakeRun(t, &fakeFork{})
	find := fr.FindRunFunc
	fr.FindRunFunc = func(ctx context.Context, ref string) (engine.Ref, error) {
		r, err := find(ctx, ref)
		if err == nil {
			c := *r.Run
			c.State = tine.StateDiscarded
			r.Run = &c
		}
		return r, err
	}
	fr.ForkFunc = func(context.Context, string, engine.ForkOptions) (*engine.ForkResult, error) {
		t.Error("a discarded run was forked")
		return nil, io.EOF
	}
	if _, err := start(context.Background(), fr, Options{Source: "ws/source", Prompt: "p", N: 1, Agent: commandAgent}); !errors.Is(err, tine.ErrState) {
		t.Errorf("error %v, want ErrState", err)
	}
}
