package forkrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/runtime"
)

// stderrTail bounds the agent's stderr kept in the report.
const stderrTail = 4 << 10

// snapshotEvery bounds how often the agent's output is copied into the
// report while it streams.
const snapshotEvery = 250 * time.Millisecond

// forkRun is one fork's agent and tests.
type forkRun struct {
	r   *runner
	f   *Fork
	env []string // the account's variables
	// prompt, when set, is the task this fork's agent gets instead of
	// Options.Prompt (the synthesis fork's).
	prompt string

	shown time.Time // when the report last took the agent's evidence

	killOnce sync.Once
	kill     chan struct{} // closed to stop the agent
	killWhy  State
	killMsg  string
}

// stop asks for the fork's agent to be killed, once; the first reason
// wins.
func (fk *forkRun) stop(state State, why string) {
	fk.killOnce.Do(func() {
		fk.r.mu.Lock()
		fk.killWhy, fk.killMsg = state, why
		fk.r.mu.Unlock()
		close(fk.kill)
	})
}

// end puts the fork in a terminal state.
func (fk *forkRun) end(s State, reason string) {
	fk.r.update(func() {
		fk.f.State, fk.f.Reason = s, reason
		if fk.f.FinishedAt.IsZero() {
			fk.f.FinishedAt = time.Now().UTC()
		}
	})
}

// runAgent runs the fork's agent to its end and reports whether it ran to
// its end by itself (and the fork is to be tested).
func (fk *forkRun) runAgent(ctx context.Context) bool {
	o := &fk.r.o
	session, dir := "", ""
	if fk.r.conv != nil {
		session, dir = fk.r.conv.Session, fk.r.conv.Dir
	}
	cfg := o.Agent
	cfg.Confined = fk.r.e.ConfinesWrites(ctx, fk.f.Run)
	prompt := o.Prompt
	if fk.prompt != "" {
		prompt = fk.prompt
	}
	argv, err := agent.Command(cfg, prompt, fk.f.Approach, session)
	if err != nil {
		fk.end(Failed, err.Error())
		return false
	}
	parser, err := fk.r.parser()
	if err != nil {
		fk.end(Failed, err.Error())
		return false
	}
	logPath := fk.r.dir.AgentLog(fk.f.Run)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		fk.end(Failed, err.Error())
		return false
	}
	defer logf.Close()
	ev := agent.NewEvidence(0, 0)
	start := time.Now()
	ev.Start(start)
	fk.r.update(func() {
		fk.f.State, fk.f.StartedAt, fk.f.AgentLog = Running, start.UTC(), logPath
	})
	cleanup := fk.sandboxLeftovers(ctx)
	defer cleanup()
	pr, pw := io.Pipe()
	consumed := make(chan error, 1)
	go func() {
		consumed <- fk.consume(pr, parser, ev)
	}()
	env := append(agent.Env(prompt, fk.f.Approach, fk.f.Name, fk.f.Index), o.AgentEnv...)
	res, err := fk.r.e.ExecWith(ctx, fk.f.Run, runtime.ExecOptions{
		Args: argv, Env: append(append(env, fk.r.pass...), fk.env...), Base: o.BaseEnv, Dir: dir,
		Stdout: io.MultiWriter(logf, pw), Stderr: logf,
		Timeout: o.AgentTimeout, Kill: fk.kill,
	})
	pw.Close()
	<-consumed
	end := time.Now()
	fk.r.e.SyncLoginsOf(ctx, fk.f.Run) // a sign-in the agent refreshed reaches its owner's home
	code, stderr := -1, ""
	if res != nil {
		code, stderr = res.Exit, lastBytes(res.Stderr, stderrTail)
	}
	ev.Finish(end, code)
	snap := ev.Snapshot()
	fk.settle(snap)
	state, reason := fk.outcome(ctx, res, err)
	if state == BudgetKilled && endedByItself(snap, res) {
		// The budget's stop came too late: the agent had finished.
		state, reason = Finished, ""
	}
	if state == Finished {
		// Finished only when the agent exited 0 with a result that is
		// not an error.
		if why := snap.Failure(agent.HasResultLine(o.Agent.Kind)); why != "" {
			state, reason = Failed, withStderr(why, snap, stderr)
		}
	}
	if state == Failed {
		reason = withheldHint(reason, reason+"\n"+stderr+"\n"+snap.ResultText, fk.r.rep.Withheld)
	}
	fk.r.update(func() {
		fk.f.Agent, fk.f.AgentStderr = snap, stderr
		if state != Finished {
			fk.f.State, fk.f.Reason, fk.f.FinishedAt = state, reason, end.UTC()
		}
	})
	return state == Finished
}

// parser parses the agent's output. An agent that continues a
// conversation is charged only past the running totals the session had
// reached, which its own totals include (codex's turn.completed, claude's
// total_cost_usd).
func (r *runner) parser() (agent.Parser, error) {
	kind, c := r.o.Agent.Kind, r.conv
	switch {
	case c != nil && kind == agent.Codex && c.BaseTokens != nil:
		return agent.NewCodexForkParser(*c.BaseTokens, r.priceOptions()...), nil
	case c != nil && kind == agent.Claude:
		return agent.NewClaudeForkParser(c.BaseUSD, r.priceOptions()...), nil
	}
	return agent.NewParser(kind, r.priceOptions()...)
}

// priceOptions are the parser options that price the agent's usage: the
// built-in prices with [prices] over them, the configured model, and a
// note in the report for a model priced by the unknown-model rule.
func (r *runner) priceOptions() []agent.Option {
	o := &r.o
	opts := []agent.Option{agent.WithModel(o.Agent.Model), agent.WithUnknownModel(r.unknownModel)}
	if t := agent.DefaultPrices(o.Agent.Kind); t != nil {
		opts = append(opts, agent.WithPrices(t.With(o.Prices)))
	}
	return opts
}

// unknownModel notes, once per model, that model's usage is charged at
// the most expensive known rate.
func (r *runner) unknownModel(model string) {
	note := unknownModelNote(r.o.Agent.Kind, agent.DefaultPrices(r.o.Agent.Kind).With(r.o.Prices), model)
	r.update(func() {
		if !slices.Contains(r.rep.Notes, note) {
			r.rep.Notes = append(r.rep.Notes, note)
		}
	})
}

// unknownModelNote says how model, which has no price, is charged.
func unknownModelNote(kind agent.Kind, t agent.PriceTable, model string) string {
	mx := t.Max()
	final := "its estimate stands: the agent reports no cost of its own"
	if kind == agent.Claude {
		final = "the agent's own total_cost_usd replaces the estimate at its end"
	}
	return fmt.Sprintf("model %q has no known price: its usage is charged at the most expensive known rate ($%g input, $%g output per million tokens) so that budgets hold; %s (set its price in [prices] of tine.toml)",
		model, mx.InputPerMTok, mx.OutputPerMTok, final)
}

// outcome says what became of the agent process: it ran to its end by
// itself (Finished, to be checked against its evidence), or why not.
func (fk *forkRun) outcome(ctx context.Context, res *runtime.ExecResult, err error) (State, string) {
	fk.r.mu.Lock()
	why, msg := fk.killWhy, fk.killMsg
	fk.r.mu.Unlock()
	if why == "" && (err != nil || res == nil || res.Exit != 0) {
		if gone := fk.gone(); gone != "" {
			return Canceled, gone + " while its agent ran"
		}
	}
	switch {
	case why != "":
		return why, msg
	case res != nil && res.TimedOut:
		return TimedOut, fmt.Sprintf("the agent ran past its timeout of %s and was killed", fk.r.o.AgentTimeout)
	case ctx.Err() != nil:
		return Canceled, "the fork-run was interrupted"
	case err != nil:
		return Failed, err.Error()
	case res.Exit == 127 || res.Exit == 126:
		return Failed, fmt.Sprintf("the agent could not be started (exit %d): %s", res.Exit, firstLine(res.Stderr))
	}
	return Finished, ""
}

// endedByItself reports whether the agent ran to its own end, however a
// stop asked meanwhile: it gave its result line and exited 0, unkilled.
func endedByItself(s agent.Snapshot, res *runtime.ExecResult) bool {
	return s.Result != "" && res != nil && res.Exit == 0 && !res.Killed && !res.TimedOut
}

// consume parses the agent's stdout into evidence, charging the budget
// pool as cost arrives.
func (fk *forkRun) consume(r io.Reader, p agent.Parser, ev *agent.Evidence) error {
	defer io.Copy(io.Discard, r) // never block the writer
	return agent.ConsumeFunc(r, p, ev, func(e agent.Event) { fk.onEvent(e, ev) })
}

// onEvent acts on one event after the evidence took it: cost goes to the
// pool, and a change of tool calls or cost is reported.
func (fk *forkRun) onEvent(e agent.Event, ev *agent.Evidence) {
	if e.Kind != agent.EventCost {
		// Tool calls show at once; output at most every snapshotEvery.
		if e.Kind == agent.EventToolCall || time.Since(fk.shown) >= snapshotEvery {
			fk.shown = time.Now()
			snap := ev.Snapshot()
			fk.r.update(func() { fk.f.Agent = snap })
		}
		return
	}
	pool, id := fk.r.pool, fk.f.Run
	if fk.r.o.Agent.Kind == agent.CommandKind && !e.Final {
		if err := pool.Charge(id, e.CostUSD); err != nil && (errors.Is(err, budget.ErrForkCap) || errors.Is(err, budget.ErrAggregateCap)) {
			fk.stop(BudgetKilled, err.Error())
		}
	} else if running, _ := ev.Cost(); e.Final {
		// The agent's own total, given as it ends: the money is spent and
		// nothing is left to stop, so the fork is settled, not killed.
		pool.Finish(id, running)
	} else if victim, ok := pool.Observe(id, running); ok {
		fk.r.stopForBudget(victim)
	}
	snap := ev.Snapshot()
	fk.r.update(func() { fk.f.Agent = snap })
}

// settle records the agent's final cost in the pool. The agent has ended:
// a final cost over a cap is spent, and stops nothing.
func (fk *forkRun) settle(s agent.Snapshot) {
	if s.CostFinal {
		fk.r.pool.Finish(fk.f.Run, s.CostUSD)
		return
	}
	fk.r.pool.Finish(fk.f.Run, fk.r.pool.SpentBy(fk.f.Run)) // estimates or charges stand
}

// stopForBudget stops the fork the pool chose to stop.
func (r *runner) stopForBudget(victim string) {
	fk, ok := r.forks[victim]
	if !ok {
		return
	}
	rep, spent := r.pool.Spent(), r.pool.SpentBy(victim)
	why := fmt.Sprintf("stopped at $%.4f: all forks together reached $%.4f, over the aggregate budget of $%s (the most expensive fork in flight is stopped first)",
		spent, rep.TotalUSD, strconv.FormatFloat(rep.AggregateCap, 'f', -1, 64))
	if rep.PerForkCap > 0 && spent > rep.PerForkCap {
		why = fmt.Sprintf("stopped at $%.4f, over its budget of $%s", spent, strconv.FormatFloat(rep.PerForkCap, 'f', -1, 64))
	}
	fk.stop(BudgetKilled, why)
}

// runTest runs the test command in the fork, if there is one, and puts
// the fork in its final state.
func (fk *forkRun) runTest(ctx context.Context) {
	o := &fk.r.o
	if o.Test == "" {
		fk.end(Finished, "")
		return
	}
	fk.r.update(func() { fk.f.State = Testing })
	logPath := fk.r.dir.TestLog(fk.f.Run)
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		fk.end(Failed, err.Error())
		return
	}
	defer logf.Close()
	res, err := fk.r.e.ExecWith(ctx, fk.f.Run, runtime.ExecOptions{
		Args: []string{"sh", "-c", o.Test}, Stdout: logf, Stderr: logf, Timeout: o.TestTimeout, Base: o.BaseEnv,
	})
	if err != nil {
		if ctx.Err() != nil {
			fk.end(Canceled, "the fork-run was interrupted during tests")
			return
		}
		if gone := fk.gone(); gone != "" {
			fk.end(Canceled, gone+" during its tests")
			return
		}
		fk.end(Failed, "test command: "+err.Error())
		return
	}
	t := &Test{Command: o.Test, Exit: res.Exit, Passed: res.Exit == 0 && !res.TimedOut && !res.Killed,
		TimedOut: res.TimedOut, Seconds: res.Seconds, Output: lastBytes(res.Stdout+res.Stderr, 8<<10)}
	if ctx.Err() != nil {
		fk.end(Canceled, "the fork-run was interrupted during tests")
		return
	}
	fk.r.update(func() { fk.f.Test = t })
	fk.end(Finished, "")
}

// withStderr adds the first line of the agent's stderr to why when the
// agent's own result said nothing: where a refused flag or a crash shows.
func withStderr(why string, s agent.Snapshot, stderr string) string {
	if s.ResultText != "" {
		return why
	}
	if l := firstLine(stderr); l != "" {
		return why + ": " + clip(l, 300)
	}
	return why
}

// lastBytes returns the end of s, at most n bytes.
func lastBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// firstLine returns the first non-empty line of s.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// gone says what became of fk's run when it is no longer live ("the fork
// was discarded"): someone discarded or merged it while the fork-run ran,
// which ended its agent or tests. "" while it is live.
func (fk *forkRun) gone() string {
	ref, err := fk.r.e.FindRun(context.Background(), fk.f.Run)
	if err != nil || ref.Run.Active() {
		return ""
	}
	return fmt.Sprintf("the fork was %s", ref.Run.State)
}
