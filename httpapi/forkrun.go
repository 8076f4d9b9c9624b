package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/internal/account"
)

// The daemon runs fork-runs (POST /v1/runs/{ref}/fork-run, or
// Server.StartForkRun for the dashboard on the host) in the background, on
// a context of the server's own rather than the request's: the answer
// comes once the forks exist, and the fork-run goes on until it ends, its
// group is canceled (POST /v1/groups/{g}/cancel), or the server shuts down
// (Server.Shutdown). Its report, rewritten as the forks progress, is
// served by GET /v1/groups/{g}/report.

// ForkRunStarted is the answer (202) to POST /v1/runs/{ref}/fork-run, and
// what Server.StartForkRun returns.
type ForkRunStarted struct {
	// Queued: the run asked for a fork-run of itself during its agent's
	// turn; it starts when the turn stops (Group and Report are empty).
	Queued  bool   `json:"queued,omitempty"`
	Message string `json:"message,omitempty"`
	Group   string `json:"group"`
	// Report is the report as it stood when the forks were made.
	Report *forkrun.Report `json:"report"`
	// Warnings are the problems of tine.toml that tine worked around, and
	// what it changed in the request (file:line: message).
	Warnings []string `json:"warnings"`
}

// ForkRunCanceled is the answer (202) to POST /v1/groups/{g}/cancel.
type ForkRunCanceled struct {
	Group   string          `json:"group"`
	Report  *forkrun.Report `json:"report"` // as it stood when canceled; nil for commands
	Message string          `json:"message"`
	// Killed are the forks whose fork_run command (ExecRequest.Group) it
	// killed, when no fork-run of the group ran in the daemon.
	Killed []KilledCommand `json:"killed,omitempty"`
}

// KilledCommand is a fork whose group's command a cancel killed.
type KilledCommand struct {
	Run  string `json:"run"` // its id
	Name string `json:"name"`
}

// forkRuns are the fork-runs this server started and that have not ended.
type forkRuns struct {
	ctx    context.Context // lives as long as the server
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	running map[string]*runningForkRun   // by group id
	queued  map[string][]forkrun.Options // by source run id: asked for mid-turn
	// commands are the commands running for a group in its forks
	// (ExecRequest.Group: MCP's fork_run), by group id.
	commands map[string]map[*groupCommand]bool
	wg       sync.WaitGroup
}

// groupCommand is a command running in a fork for its group, and what
// kills it.
type groupCommand struct {
	fork   KilledCommand
	cancel context.CancelFunc
}

// runningForkRun is one fork-run under way and what cancels it.
type runningForkRun struct {
	h      *forkrun.Handle
	cancel context.CancelFunc
}

func newForkRuns() *forkRuns {
	ctx, cancel := context.WithCancel(context.Background())
	return &forkRuns{ctx: ctx, cancel: cancel, running: map[string]*runningForkRun{}, queued: map[string][]forkrun.Options{},
		commands: map[string]map[*groupCommand]bool{}}
}

// addCommand records a command running in fork for group, which cancel
// kills, until the returned function is called.
func (f *forkRuns) addCommand(group string, fork KilledCommand, cancel context.CancelFunc) (done func()) {
	c := &groupCommand{fork: fork, cancel: cancel}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.commands[group] == nil {
		f.commands[group] = map[*groupCommand]bool{}
	}
	f.commands[group][c] = true
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.commands[group], c)
		if len(f.commands[group]) == 0 {
			delete(f.commands, group)
		}
	}
}

// cancelCommands kills the commands running for group and returns their
// forks.
func (f *forkRuns) cancelCommands(group string) []KilledCommand {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []KilledCommand
	for c := range f.commands[group] {
		c.cancel()
		out = append(out, c.fork)
	}
	slices.SortFunc(out, func(a, b KilledCommand) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// hasCommands reports whether commands run for group.
func (f *forkRuns) hasCommands(group string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.commands[group]) > 0
}

// start starts a fork-run of o and keeps its handle until it ends.
func (f *forkRuns) start(host forkrun.Host, o forkrun.Options) (*forkrun.Handle, error) {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, fmt.Errorf("the daemon is shutting down and starts no fork-run: %w", tine.ErrState)
	}
	f.wg.Add(1)
	f.mu.Unlock()
	ctx, cancel := context.WithCancel(f.ctx)
	h, err := forkrun.Start(ctx, host, o)
	if err != nil {
		cancel()
		f.wg.Done()
		return nil, err
	}
	f.mu.Lock()
	f.running[h.Group()] = &runningForkRun{h: h, cancel: cancel}
	f.mu.Unlock()
	go func() {
		defer f.wg.Done()
		h.Wait()
		cancel()
		f.mu.Lock()
		delete(f.running, h.Group())
		f.mu.Unlock()
	}()
	return h, nil
}

// queue keeps a fork-run of run, asked for during its agent's turn, until
// the turn stops.
func (f *forkRuns) queue(run string, o forkrun.Options) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued[run] = append(f.queued[run], o)
}

// startQueued starts the fork-runs queued for run, now that its turn
// stopped, and says what it did.
func (f *forkRuns) startQueued(host forkrun.Host, run string) string {
	f.mu.Lock()
	todo := f.queued[run]
	delete(f.queued, run)
	f.mu.Unlock()
	var msgs []string
	for _, o := range todo {
		h, err := f.start(host, o)
		if err != nil {
			msgs = append(msgs, "the fork-run asked for during the turn could not start: "+err.Error())
			continue
		}
		rep := h.Report()
		msgs = append(msgs, fmt.Sprintf("tine started fork-run %s of %s: %d fork(s)", h.Group(), rep.Source, len(rep.Forks)))
	}
	return strings.Join(msgs, "; ")
}

// get returns the fork-run of group g if it runs here.
func (f *forkRuns) get(g string) *runningForkRun {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[g]
}

// shutdown refuses new fork-runs, cancels the running ones and waits for
// them to end, or for ctx.
func (f *forkRuns) shutdown(ctx context.Context) error {
	f.mu.Lock()
	f.closed = true
	n := len(f.running)
	f.mu.Unlock()
	f.cancel()
	done := make(chan struct{})
	go func() {
		f.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d fork-run(s) did not end in time after being canceled: %w", n, ctx.Err())
	}
}

// Shutdown cancels the fork-runs this server started and waits for them to
// end, or for ctx: their agents are killed, their forks kept (state
// canceled) and their reports saved. It starts no fork-run afterwards.
// Call it when the HTTP server stops.
func (s *Server) Shutdown(ctx context.Context) error { return s.forkRuns.shutdown(ctx) }

func (s *Server) forkRun(w http.ResponseWriter, r *http.Request) {
	var req forkrun.Request
	if !decodeOrFail(w, r, &req) {
		return
	}
	actor, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionFork)
	if !ok {
		return
	}
	st, err := s.startForkRun(r.Context(), actor, r.PathValue("ref"), req)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, st)
}

// StartForkRun starts a fork-run of run ref for a person on the host, as
// POST /v1/runs/{ref}/fork-run does for a request without a run's
// capability: tine.toml (the run's copy) fills what req leaves out, and its
// merge mode and judge apply as written. The answer comes once the forks
// exist; the fork-run goes on in the background on the server's context,
// so GET /v1/groups/{g}/report follows it, POST /v1/groups/{g}/cancel
// cancels it, and Shutdown cancels it and waits for it. Errors wrap
// tine.ErrInvalid (a bad value), tine.ErrUnsupported (an agent's binary
// missing, fork-run disabled), tine.ErrNotFound (no run ref) or
// tine.ErrState (the server is shutting down).
func (s *Server) StartForkRun(ctx context.Context, ref string, req forkrun.Request) (*ForkRunStarted, error) {
	return s.startForkRun(ctx, nil, ref, req)
}

// startForkRun checks req and starts the fork-run of run ref that actor
// (nil for a person) asked for, or queues it while actor's own agent is in
// its turn.
func (s *Server) startForkRun(ctx context.Context, actor *engine.Ref, ref string, req forkrun.Request) (*ForkRunStarted, error) {
	if strings.TrimSpace(req.Prompt) == "" {
		return nil, fmt.Errorf("a fork-run needs \"prompt\": the task given to every fork's agent: %w", tine.ErrInvalid)
	}
	src, err := s.e.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	o, warnings, err := s.forkRunOptions(src, actor, req)
	if err != nil {
		return nil, err
	}
	if actor == nil && len(req.Env) > 0 {
		o.BaseEnv = callerEnv(src.Workspace, req.Env, peerUIDOf(ctx))
	}
	if actor != nil && actor.Run.ID == src.Run.ID && s.cp.InTurn(*actor) {
		// The agent's files are still moving: the fork-run starts, at a
		// stable point, when the turn stops. Its options were checked now.
		s.forkRuns.queue(src.Run.ID, o)
		return &ForkRunStarted{Queued: true, Warnings: warnings,
			Message: "tine starts this fork-run of " + src.Run.Name + " when this turn stops: say so and end the turn; its forks continue from there"}, nil
	}
	h, err := s.forkRuns.start(s.host(), o)
	if err != nil {
		return nil, err
	}
	return &ForkRunStarted{Group: h.Group(), Report: h.Report(), Warnings: warnings}, nil
}

// callerEnv is env, the environment of user uid who asked for a fork-run
// of workspace w, as the owner's (their identity, if uid is another's),
// without what points at a tine of its own: in the forks tine is the
// daemon's.
func callerEnv(w *tine.Workspace, env []string, uid int) []string {
	env = account.Unsetenv(env, "TINE_HOME", "TINE_DAEMON_SOCKET", "TINE_SOCKET", "TINE_CAPABILITY", "TINE_NO_DAEMON")
	return account.Lookup(w.UID, w.GID).Env(env, uid)
}

// forkRunOptions reads the source run's tine.toml and turns req into
// Options, with the config's warnings. The daemon's environment supplies
// the LLM judge's key, but only to a person: see insideLimits.
func (s *Server) forkRunOptions(src engine.Ref, actor *engine.Ref, req forkrun.Request) (forkrun.Options, []string, error) {
	cfg, err := forkrun.LoadConfig(s.e, src, "")
	if err != nil {
		return forkrun.Options{}, nil, err
	}
	warnings := []string{}
	for _, w := range cfg.Warnings {
		warnings = append(warnings, w.String())
	}
	getenv := os.Getenv
	if actor != nil {
		notes, err := insideLimits(cfg, &req)
		if err != nil {
			return forkrun.Options{}, nil, err
		}
		warnings = append(warnings, notes...)
		getenv = func(string) string { return "" }
	}
	o, err := forkrun.Configure(cfg, src, req, getenv)
	return o, warnings, err
}

// insideLimits applies the control plane's rules to a fork-run asked for
// from inside a run. Merging without a person (merge modes auto and vote)
// would resolve on the run's own authority, and the LLM judge would send
// the daemon's API key to wherever the run's own tine.toml says: both are
// refused when asked for, and replaced, with a note, when they come from
// tine.toml.
func insideLimits(cfg *config.Config, req *forkrun.Request) ([]string, error) {
	var notes []string
	mode, err := forkrun.ParseMergeMode(req.MergeMode)
	if err != nil {
		return nil, err
	}
	if req.MergeMode == "" {
		mode, _ = forkrun.ParseMergeMode(cfg.Fork.MergeMode)
	}
	if mode == forkrun.Auto || mode == forkrun.VoteMode {
		if req.MergeMode != "" {
			return nil, fmt.Errorf("merge mode %s merges without a person; from inside a run use auto_with_fallback or manual (a person confirms with tine choose): %w",
				mode, tine.ErrPrivilege)
		}
		req.MergeMode = string(forkrun.AutoWithFallback)
		notes = append(notes, fmt.Sprintf("tine.toml's merge_mode %s merges without a person; from inside a run the fork-run uses auto_with_fallback (a person confirms with tine choose)", mode))
	}
	if config.JudgeUsesModel(req.Judge) {
		return nil, fmt.Errorf("the %s judge uses the daemon's API key; from inside a run use the heuristic judge, or start the fork-run from the host: %w", req.Judge, tine.ErrPrivilege)
	}
	if req.Judge == "" && config.JudgeUsesModel(cfg.Fork.Judge) {
		req.Judge = config.JudgeHeuristic
		notes = append(notes, "tine.toml's judge "+cfg.Fork.Judge+" would use the daemon's API key; from inside a run the fork-run uses the heuristic judge")
	}
	return notes, nil
}

// group resolves group ref and checks that the acting run, if any, may do
// action to the group's parent.
func (s *Server) group(w http.ResponseWriter, r *http.Request, action tine.Action) (*tine.Group, bool) {
	g, err := s.groupOf(r.Context(), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return nil, false
	}
	if actorOf(r) != nil {
		if _, ok := s.allow(w, r, g.Parent, action); !ok {
			return nil, false
		}
	}
	return g, true
}

func (s *Server) forkRunReport(w http.ResponseWriter, r *http.Request) {
	g, ok := s.group(w, r, tine.ActionInspect)
	if !ok {
		return
	}
	if fr := s.forkRuns.get(g.ID); fr != nil {
		writeJSON(w, http.StatusOK, fr.h.Report())
		return
	}
	rep, err := forkrun.Load(s.e, g.Workspace, g.ID)
	handle(w, http.StatusOK, rep, err)
}

// cancelForkRun cancels a fork-run running in this daemon; whoever may
// start a fork-run of the group's parent may cancel it.
func (s *Server) cancelForkRun(w http.ResponseWriter, r *http.Request) {
	g, ok := s.group(w, r, tine.ActionFork)
	if !ok {
		return
	}
	fr := s.forkRuns.get(g.ID)
	if fr == nil {
		if killed := s.forkRuns.cancelCommands(g.ID); len(killed) > 0 {
			names := make([]string, len(killed))
			for i, k := range killed {
				names[i] = k.Name
			}
			writeJSON(w, http.StatusAccepted, ForkRunCanceled{Group: g.ID, Killed: killed,
				Message: "killed the group's command in " + strings.Join(names, ", ") + "; the forks are kept"})
			return
		}
		writeErr(w, fmt.Errorf("no fork-run of group %s runs in this daemon (it ended, or a tine fork-run command runs it: interrupt that): %w",
			g.ID, tine.ErrNotFound))
		return
	}
	fr.cancel()
	writeJSON(w, http.StatusAccepted, ForkRunCanceled{Group: g.ID, Report: fr.h.Report(),
		Message: "canceling: the agents are killed, the forks kept (state canceled); follow with GET /v1/groups/" + g.ID + "/report"})
}

// groupOf finds group ref: a group id; or a run: the group of a fork, or
// for any run the newest fork-run forked from it.
func (s *Server) groupOf(ctx context.Context, ref string) (*tine.Group, error) {
	g, _, err := s.e.Group(ctx, ref)
	if err == nil {
		return g, nil
	}
	run, rerr := s.e.FindRun(ctx, ref)
	if rerr != nil {
		return nil, err
	}
	var groups []*tine.Group
	if err := s.e.Store().View(ctx, func(tx tine.Tx) error {
		var err error
		groups, err = tx.Groups(run.Workspace.ID)
		return err
	}); err != nil {
		return nil, err
	}
	for i := len(groups) - 1; i >= 0; i-- {
		if groups[i].Parent == run.Run.ID && (s.forkRuns.get(groups[i].ID) != nil || s.forkRuns.hasCommands(groups[i].ID) || hasReport(s.e, groups[i])) {
			return groups[i], nil
		}
	}
	if run.Run.Group != "" {
		g, _, err := s.e.Group(ctx, run.Run.Group)
		return g, err
	}
	return nil, fmt.Errorf("no fork-run of %s and it is in no group: %w", run.Run.Name, tine.ErrNotFound)
}

// host is what the fork-runs this server starts run on.
func (s *Server) host() forkrun.Host { return forkrun.NewHost(s.e) }

func hasReport(e *engine.Engine, g *tine.Group) bool {
	return grouprec.Open(e.Layout().Group(g.Workspace, g.ID)).HasReport()
}
