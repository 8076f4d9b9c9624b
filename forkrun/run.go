package forkrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/runtime"
)

// saveEvery bounds how often report.json is rewritten while forks run.
const saveEvery = 250 * time.Millisecond

// runner is one fork-run in progress.
type runner struct {
	e    Host
	o    Options
	pool *budget.Pool
	dir  layout.Group // the group's directory
	// sourceRunning: the source's processes ran at the fork, so forks
	// that declare services were started with them, and keep them.
	sourceRunning bool
	conv          *Conversation // what the forks continue; nil: new conversations
	pass          []string      // the agent's credentials, passed to it although secret (agentSecrets)

	emitMu sync.Mutex // serialises Progress calls
	mu     sync.Mutex // guards rep and the forks in it
	rep    *Report
	dirty  chan struct{}
	forks  map[string]*forkRun // by run id
	early  *EarlyStop          // what --stop-when-confident stopped; guarded by mu
}

// Run forks o.Source into o.N forks and runs the fork-run to its
// resolution. It returns the report, also when the fork-run failed after
// forking (then with the error), so that a person sees what exists. A
// merge conflict at resolution is not an error: the report's outcome says
// so and nothing was written.
func Run(ctx context.Context, e Host, o Options) (*Report, error) {
	h, err := Start(ctx, e, o)
	if err != nil {
		return nil, err
	}
	return h.Wait()
}

// Handle is a fork-run under way: its forks exist, its agents run.
type Handle struct {
	r    *runner
	done chan struct{}
	rep  *Report
	err  error
}

// Group is the id of the fork-run's group.
func (h *Handle) Group() string { return h.r.rep.Group }

// Report is a copy of the report as it stands.
func (h *Handle) Report() *Report {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	return h.r.rep.clone()
}

// StopForBudget stops every fork whose agent still runs or has yet to
// start, in state BudgetKilled with why: a budget beyond the fork-run's
// own (a fleet's batch of tasks) is spent. Forks past their agent (being
// tested, or ended) are left as they are.
func (h *Handle) StopForBudget(why string) {
	for _, fk := range h.r.forks { // fixed once the forks exist
		fk.stop(BudgetKilled, why)
	}
}

// Wait waits for the fork-run's end and returns what Run returns.
func (h *Handle) Wait() (*Report, error) {
	<-h.done
	return h.rep, h.err
}

// Start checks o, forks o.Source and starts the fork-run; it returns once
// the forks exist (or with the error that kept them from being made, when
// nothing was made). The fork-run goes on until ctx is cancelled or it
// ends: see [Handle.Wait].
func Start(ctx context.Context, e Host, o Options) (*Handle, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("fork-run needs root: agents run inside forks through their supervisors: %w", tine.ErrPrivilege)
	}
	return start(ctx, e, o)
}

// start is Start past its check for root, which the real Processes need
// and a fake does not.
func start(ctx context.Context, e Host, o Options) (*Handle, error) {
	var notes []string
	if o.Synthesize {
		addSynthesis(&o)
	}
	assigned, reduced, note := budget.Assign(o.N, o.Accounts)
	if note != "" {
		notes = append(notes, note)
		o.N = reduced
		if len(o.Approaches) > o.N {
			notes = append(notes, fmt.Sprintf("approaches beyond the first %d are not run", o.N))
			o.Approaches = o.Approaches[:o.N]
		}
		if o.Synthesize && o.N > 0 { // the synthesis fork stays the last
			o.Approaches[o.N-1] = SynthesisApproach
		}
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if o.Agent.Kind != agent.CommandKind && (o.Budget > 0 || o.Aggregate > 0) && o.Agent.Model != "" &&
		!agent.KnownModel(o.Agent.Kind, agent.DefaultPrices(o.Agent.Kind).With(o.Prices), o.Agent.Model) {
		notes = append(notes, unknownModelNote(o.Agent.Kind, agent.DefaultPrices(o.Agent.Kind).With(o.Prices), o.Agent.Model))
	}
	pool, err := budget.New(o.Budget, o.Aggregate)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, tine.ErrInvalid)
	}
	src, err := e.FindRun(ctx, o.Source)
	if err != nil {
		return nil, err
	}
	if !src.Run.Active() {
		return nil, fmt.Errorf("run %s is %s: %w", src.Run.Name, src.Run.State, tine.ErrState)
	}
	if err := checkHoldoutDir(o.HoldoutDir, src.Workspace); err != nil {
		return nil, err
	}
	if err := checkAgent(&o, src); err != nil {
		return nil, err
	}
	conv, note, err := chooseConversation(ctx, e, src, &o, assigned)
	if err != nil {
		return nil, err
	}
	if conv != nil {
		note = conv.describe(o.Agent.Kind)
	}
	if note != "" {
		notes = append(notes, note)
	}
	procs, _ := e.ProcState(src)
	running := procs == runtime.ProcRunning
	started := time.Now()
	fo := engine.ForkOptions{Copies: o.N, Approaches: o.Approaches, Live: o.Live}
	if o.HoldoutDir != "" {
		fo.Hide = []string{filepath.Clean(o.HoldoutDir)}
	}
	fr, err := e.Fork(ctx, src.Run.ID, fo)
	if err != nil {
		return nil, err
	}
	r := newRunner(e, o, pool, fr, assigned, notes, started)
	r.sourceRunning, r.conv, r.rep.Conversation = running, conv, conv
	agentEnv := agentEnviron(src, o.BaseEnv, o.AgentEnv)
	r.pass, r.rep.Withheld = agentSecrets(&r.o, agentEnv)
	r.rep.Notes = append(r.rep.Notes, hiddenCredentialNotes(&r.o, agentEnv, account.Getenv(agentEnv, "HOME"), src.Workspace.Path)...)
	if err := os.MkdirAll(r.dir.Dir(), 0o755); err != nil {
		return nil, err
	}
	r.rep.save(r.dir) // readable at once: the group exists
	h := &Handle{r: r, done: make(chan struct{})}
	go func() {
		defer close(h.done)
		h.rep, h.err = r.run(ctx)
	}()
	return h, nil
}

func newRunner(e Host, o Options, pool *budget.Pool, fr *engine.ForkResult, accounts []budget.Account, notes []string, started time.Time) *runner {
	rep := &Report{
		Workspace: fr.Group.Workspace, Group: fr.Group.ID, Source: fr.Parent.Name, SourceID: fr.Parent.ID,
		Prompt: o.Prompt, Agent: string(o.Agent.Kind), Mode: o.Mode, JudgeKind: o.JudgeKind, Threshold: o.Threshold,
		TestCmd: o.Test, Notes: notes, Outcome: OutcomeRunning, StartedAt: started.UTC(), Owner: self(),
	}
	r := &runner{e: e, o: o, pool: pool, rep: rep, dir: e.Layout().Group(fr.Group.Workspace, fr.Group.ID),
		dirty: make(chan struct{}, 1), forks: map[string]*forkRun{}}
	for i, run := range fr.Forks {
		f := &Fork{Index: i, Run: run.ID, Name: run.Name, Approach: run.Approach, State: Pending}
		fk := &forkRun{r: r, f: f, kill: make(chan struct{})}
		if accounts != nil {
			f.Account, fk.env = accounts[i].Name, accounts[i].Environ()
		}
		rep.Forks = append(rep.Forks, f)
		r.forks[run.ID] = fk
	}
	return r
}

func (r *runner) run(ctx context.Context) (*Report, error) {
	r.emit()
	quit, saved := make(chan struct{}), make(chan struct{})
	go r.saver(quit, saved)
	r.event(tine.EventForkRunStart, map[string]any{"group": r.rep.Group, "forks": len(r.rep.Forks), "agent": r.rep.Agent, "merge_mode": r.o.Mode,
		"withheld": r.rep.Withheld, "passed": envNames(r.pass)})
	ids := make([]string, len(r.rep.Forks))
	for i, f := range r.rep.Forks {
		ids[i] = f.Run
	}
	// Every fork's supervisor at once; a fork whose launch failed fails
	// on its own when its agent starts.
	r.e.Launch(ctx, r.rep.Workspace, ids)
	r.runForks(ctx)
	r.settleEarly()
	// What the forks changed is recorded even after an interrupt; nothing
	// is judged or resolved then.
	err := r.gather(context.WithoutCancel(ctx))
	if err == nil && ctx.Err() == nil {
		r.gatherEvidence(ctx)
	}
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("fork-run interrupted: %w", ctx.Err())
		r.setOutcome(OutcomeCanceled, "interrupted before the forks were judged; "+r.keptNote())
	case err == nil:
		err = r.resolve(ctx)
	}
	r.finish(err)
	close(quit)
	<-saved
	if serr := r.rep.save(r.dir); serr != nil && err == nil {
		err = serr
	}
	r.event(tine.EventForkRunEnd, map[string]any{"group": r.rep.Group, "outcome": r.rep.Outcome, "winner": r.rep.Winner,
		"total_usd": r.rep.TotalUSD(), "seconds": r.rep.Seconds})
	return r.rep.clone(), err
}

// runForks runs every fork's agent, at most o.Parallel at once, then its
// tests, and then the synthesis fork's (--synthesize), whose prompt holds
// what the others did; it returns once every fork is in a terminal state.
func (r *runner) runForks(ctx context.Context) {
	slots := make(chan struct{}, r.o.Parallel)
	var wg sync.WaitGroup
	synth := r.synthesisFork()
	for _, f := range r.rep.Forks {
		if fk := r.forks[f.Run]; fk != synth {
			wg.Go(func() { r.runOne(ctx, fk, slots) })
		}
	}
	wg.Wait()
	if synth != nil { // once the others ended, from what they did
		if ctx.Err() == nil && !r.stoppedEarly() {
			synth.prompt = r.synthesisPrompt(ctx, synth.f.Run)
		}
		r.runOne(ctx, synth, slots)
	}
}

// runOne runs fork fk's agent in one of slots, then its tests.
func (r *runner) runOne(ctx context.Context, fk *forkRun, slots chan struct{}) {
	defer r.stopFork(fk.f.Run)
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		fk.end(Canceled, "the fork-run was interrupted before this fork started")
		return
	}
	if r.stoppedEarly() {
		<-slots
		fk.end(StoppedEarly, "stopped early, before it started: another fork sufficed (--stop-when-confident)")
		return
	}
	ran := fk.runAgent(ctx)
	<-slots
	if ran {
		fk.runTest(ctx)
		r.stopIfConfident(ctx, fk)
	}
}

// stopFork stops fork run's supervisor once its agent and tests are done:
// it was started for them (by the fork, or by the first command run in
// it). A fork keeps it only when it runs services: the source's were
// running at the fork and the fork's tine.toml declares [[service]].
func (r *runner) stopFork(run string) {
	ctx := context.Background()
	ref, err := r.e.FindRun(ctx, run)
	if err != nil || !ref.Run.Active() || r.keepsServices(ref) {
		return
	}
	if st, _ := r.e.ProcState(ref); st == runtime.ProcRunning {
		r.e.Stop(ctx, run)
	}
}

// keepsServices reports whether fork ref runs services to be kept.
func (r *runner) keepsServices(ref engine.Ref) bool {
	if !r.sourceRunning {
		return false
	}
	cfg, err := config.Load(r.e.Path(ref.Workspace, ref.Run))
	return err == nil && len(cfg.Services) > 0
}

// saver rewrites report.json whenever the report changed, at most every
// saveEvery, until quit is closed; the final save is run's.
func (r *runner) saver(quit <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	for {
		select {
		case <-quit:
			return
		case <-r.dirty:
		}
		r.mu.Lock()
		c := r.rep.clone()
		r.mu.Unlock()
		c.save(r.dir)
		select {
		case <-quit:
			return
		case <-time.After(saveEvery):
		}
	}
}

// touch marks the report changed.
func (r *runner) touch() {
	select {
	case r.dirty <- struct{}{}:
	default:
	}
}

// update changes the report under the lock, then saves and reports it.
func (r *runner) update(f func()) {
	r.mu.Lock()
	f()
	r.rep.Budget = r.pool.Spent()
	for _, fs := range r.rep.Budget.Forks {
		if fk, ok := r.forks[fs.Fork]; ok {
			fk.f.CostUSD = fs.USD
		}
	}
	r.mu.Unlock()
	r.touch()
	r.emit()
}

func (r *runner) emit() {
	if r.o.Progress == nil {
		return
	}
	r.emitMu.Lock() // before the copy, so that no older copy is shown after a newer one
	defer r.emitMu.Unlock()
	r.mu.Lock()
	c := r.rep.clone()
	r.mu.Unlock()
	r.o.Progress(c)
}

// event appends an event to the workspace's log; failures are not fatal.
func (r *runner) event(kind tine.EventKind, detail any) {
	r.e.AppendEvent(context.Background(), r.rep.Workspace, "", kind, detail)
}

// finish records the end of the fork-run.
func (r *runner) finish(err error) {
	r.update(func() {
		now := time.Now()
		r.rep.FinishedAt, r.rep.Seconds = now.UTC(), now.Sub(r.rep.StartedAt).Seconds()
		if err != nil && r.rep.Outcome == OutcomeRunning {
			r.rep.Outcome, r.rep.OutcomeDetail = OutcomeFailed, err.Error()
		}
		if errors.Is(err, ErrNoJudgeable) {
			r.rep.Outcome = OutcomeNoWinner
		}
		if err != nil {
			r.rep.Error, r.rep.ErrorCode = err.Error(), errcode.Of(err).Code
		}
	})
}
