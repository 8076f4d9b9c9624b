package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/runtime"
)

// ops are the commands that change state. The engine does them itself; when
// tine serve is up they go to the daemon instead, so one process writes and
// every change passes the same gate. Names are resolved here first (the
// daemon's current directory is not the user's).
type ops interface {
	Fork(ctx context.Context, ref string, o engine.ForkOptions) (*engine.ForkResult, error)
	Checkpoint(ctx context.Context, ref, label string) (*tine.Version, error)
	Rollback(ctx context.Context, ref, to string) (*engine.RollbackResult, error)
	Discard(ctx context.Context, ref string, force bool) ([]*tine.Run, error)
	Merge(ctx context.Context, ref string, o engine.MergeOptions) (*engine.MergeResult, error)
	Promote(ctx context.Context, ref string, drop bool) (*engine.PromoteResult, error)
	Choose(ctx context.Context, ref, run string, o engine.ChooseOptions) (*engine.ChooseResult, error)
	Start(ctx context.Context, ref string, o runtime.StartOptions) (*runtime.StartResult, error)
	Stop(ctx context.Context, ref string) (*tine.Run, error)
	Combine(ctx context.Context, ref string, takes []engine.Take, dryRun bool) (*engine.CombineResult, error)
	RunCell(ctx context.Context, ref string, o runtime.CellOptions) (*runtime.Cell, error)
	PromoteCell(ctx context.Context, ref string, paths []string, dryRun bool) (*engine.MergeResult, error)
	ReplayCell(ctx context.Context, ref string) (*runtime.Cell, error)
}

var _ ops = localOps{}

// localOps are the ops done in this process: the engine's, and its
// runtime's for processes.
type localOps struct {
	*engine.Engine
	rt *runtime.Manager
}

func (l localOps) Start(ctx context.Context, ref string, o runtime.StartOptions) (*runtime.StartResult, error) {
	return l.rt.Start(ctx, ref, o)
}

func (l localOps) Stop(ctx context.Context, ref string) (*tine.Run, error) {
	return l.rt.Stop(ctx, ref)
}

func (l localOps) RunCell(ctx context.Context, ref string, o runtime.CellOptions) (*runtime.Cell, error) {
	return l.rt.RunCell(ctx, ref, o)
}

func (l localOps) PromoteCell(ctx context.Context, ref string, paths []string, dryRun bool) (*engine.MergeResult, error) {
	return l.rt.PromoteCell(ctx, ref, paths, dryRun)
}

func (l localOps) ReplayCell(ctx context.Context, ref string) (*runtime.Cell, error) {
	return l.rt.ReplayCell(ctx, ref)
}

// withOps runs fn with the daemon's ops when it answers on its socket
// (unless TINE_NO_DAEMON is set), else with the engine's.
//
// A normal user working through the system daemon (remote) gets the
// daemon's ops and no engine.
func (a *app) withOps(ctx context.Context, fn func(ops, *engine.Engine) error) error {
	if a.remote() {
		return fn(daemonOps{cl: a.daemon()}, nil)
	}
	if sock := layout.New(a.home).Socket(); os.Getenv("TINE_NO_DAEMON") == "" && daemonUp(sock) {
		// The daemon sweeps: the engine here only resolves references
		// and reads the store.
		return a.withEngine(ctx, func(e *engine.Engine) error {
			return fn(daemonOps{cl: httpapi.NewClient(sock, nil), e: e, warn: a.stderr}, e)
		}, engine.WithoutSweep())
	}
	return a.withEngine(ctx, func(e *engine.Engine) error {
		return fn(localOps{e, runtime.Of(e)}, e)
	})
}

// daemonSocket is where the system daemon (tine serve --system) listens
// for every local user: $TINE_DAEMON_SOCKET, else httpapi.SystemSocket.
func daemonSocket() string {
	if p := os.Getenv("TINE_DAEMON_SOCKET"); p != "" {
		return p
	}
	return httpapi.SystemSocket
}

func daemonUp(sock string) bool {
	c, err := net.DialTimeout("unix", sock, 200*time.Millisecond)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// daemonOps sends ops to tine serve, with run references resolved to ids.
type daemonOps struct {
	cl   *httpapi.Client
	e    *engine.Engine
	warn io.Writer // where the engine's warnings go too
}

// id resolves a run reference as the engine would here; a reference that
// names no run (a group) is sent as it is.
func (d daemonOps) id(ctx context.Context, ref string) string {
	if d.e == nil {
		return remoteRef(ctx, d.cl, ref)
	}
	if r, err := d.e.FindRun(ctx, ref); err == nil {
		return r.Run.ID
	}
	return ref
}

func (d daemonOps) Fork(ctx context.Context, ref string, o engine.ForkOptions) (*engine.ForkResult, error) {
	id := d.id(ctx, ref)
	req := httpapi.ForkRequest{Copies: o.Copies, Name: o.Name, Approaches: o.Approaches, Live: o.Live, NoWait: o.NoWait, Request: tine.NewID("req"), AllowSecrets: o.AllowSecrets}
	res, p, err := d.cl.Fork(httpapi.Interruptible(ctx), id, req)
	if p != nil {
		return nil, filed(p, "fork", ref)
	}
	var lost *httpapi.NoAnswerError
	if errors.As(err, &lost) && d.e != nil {
		return d.forkLanded(ctx, id, req.Request, err)
	}
	return orNil(res, err)
}

// landedWait bounds how long a client that lost its answer waits for a
// daemon that still runs to record its fork.
const landedWait = 10 * time.Second

// forkLanded finds out, from the store, whether the fork whose answer was
// lost (err) happened: the daemon may have been killed after recording it.
// A daemon that is gone records nothing more, so its absence settles it;
// one still up gets landedWait to finish.
func (d daemonOps) forkLanded(ctx context.Context, parent, request string, err error) (*engine.ForkResult, error) {
	deadline := time.Now().Add(landedWait)
	for {
		up := daemonUp(d.e.Layout().Socket())
		res, ferr := d.e.ForkLanded(ctx, parent, request)
		switch {
		case ferr == nil:
			fmt.Fprintf(d.warn, "tine: warning: the daemon stopped before answering, but the fork was recorded (%s); "+
				"processes of a running parent were not started in the forks: tine start starts them\n", res.Group.ID)
			return res, nil
		case !errors.Is(ferr, tine.ErrNotFound):
			return nil, fmt.Errorf("%w; and finding out whether the fork was recorded: %w", err, ferr)
		case !up:
			return nil, fmt.Errorf("%w: the daemon stopped before recording the fork; nothing was forked", err)
		case time.Now().After(deadline) || ctx.Err() != nil:
			return nil, fmt.Errorf("%w: the daemon did not answer and has not recorded the fork yet; see tine ls", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (d daemonOps) Checkpoint(ctx context.Context, ref, label string) (*tine.Version, error) {
	return orNil(d.cl.Checkpoint(ctx, d.id(ctx, ref), httpapi.CheckpointRequest{Label: label}))
}

func (d daemonOps) Rollback(ctx context.Context, ref, to string) (*engine.RollbackResult, error) {
	res, p, err := d.cl.Rollback(ctx, d.id(ctx, ref), httpapi.RollbackRequest{To: to})
	if p != nil {
		return nil, filed(p, "rollback", ref)
	}
	return orNil(res, err)
}

func (d daemonOps) Discard(ctx context.Context, ref string, force bool) ([]*tine.Run, error) {
	res, p, err := d.cl.Discard(httpapi.Interruptible(ctx), d.id(ctx, ref), httpapi.DiscardRequest{Force: force})
	if p != nil {
		return nil, filed(p, "discard", ref)
	}
	return res.Discarded, err
}

func (d daemonOps) Merge(ctx context.Context, ref string, o engine.MergeOptions) (*engine.MergeResult, error) {
	into := o.Into
	if into != "" {
		into = d.id(ctx, into)
	}
	res, p, err := d.cl.Merge(httpapi.Interruptible(ctx), d.id(ctx, ref), httpapi.MergeRequest{Into: into, Scope: o.Scope, Paths: o.Paths,
		DryRun: o.DryRun, TextMerge: o.TextMerge, Force: o.Force, NoCommits: o.NoCommits, IncludeGitInternals: o.IncludeGitInternals})
	if p != nil {
		return nil, filed(p, "merge", ref)
	}
	if res.Plan == nil { // no plan came back (an error before planning)
		return nil, err
	}
	return res, err
}

func (d daemonOps) Promote(ctx context.Context, ref string, drop bool) (*engine.PromoteResult, error) {
	res, p, err := d.cl.Promote(ctx, d.id(ctx, ref), httpapi.PromoteRequest{DropSourceChanges: drop})
	if p != nil {
		return nil, filed(p, "promote", ref)
	}
	return orNil(res, err)
}

func (d daemonOps) Choose(ctx context.Context, ref, run string, o engine.ChooseOptions) (*engine.ChooseResult, error) {
	req := httpapi.ChooseRequest{Run: run, Promote: o.Promote, NoCommits: o.NoCommits, DiscardAll: run == ""}
	if run != "" {
		req.Run = d.id(ctx, run)
	}
	res, p, err := d.cl.Choose(ctx, ref, req)
	if p != nil {
		return nil, filed(p, "choose", ref)
	}
	return orNil(res, err)
}

func (d daemonOps) Start(ctx context.Context, ref string, o runtime.StartOptions) (*runtime.StartResult, error) {
	res, err := d.cl.Start(ctx, d.id(ctx, ref), httpapi.StartRequest{Services: &o.Services, Display: o.Display})
	if res.Run == nil {
		return nil, err
	}
	return res, err
}

func (d daemonOps) Stop(ctx context.Context, ref string) (*tine.Run, error) {
	return orNil(d.cl.Stop(ctx, d.id(ctx, ref)))
}

func (d daemonOps) Combine(ctx context.Context, ref string, takes []engine.Take, dryRun bool) (*engine.CombineResult, error) {
	// ref is a group, and the takes name forks within it: sent as they are.
	res, err := d.cl.Combine(ctx, ref, httpapi.CombineRequest{Takes: takes, DryRun: dryRun})
	if res.Plan == nil { // no plan came back (an error before planning)
		return nil, err
	}
	return res, err
}

func (d daemonOps) RunCell(ctx context.Context, ref string, o runtime.CellOptions) (*runtime.Cell, error) {
	return orNil(d.cl.RunCell(ctx, d.id(ctx, ref), o))
}

func (d daemonOps) PromoteCell(ctx context.Context, ref string, paths []string, dryRun bool) (*engine.MergeResult, error) {
	res, err := d.cl.PromoteCell(ctx, d.id(ctx, ref), httpapi.CellPromoteRequest{Paths: paths, DryRun: dryRun})
	if res.Plan == nil {
		return nil, err
	}
	return res, err
}

func (d daemonOps) ReplayCell(ctx context.Context, ref string) (*runtime.Cell, error) {
	id := d.id(ctx, ref)
	old, err := d.cl.Cell(ctx, id)
	if err != nil {
		return nil, err
	}
	return orNil(d.cl.ReplayCell(ctx, id, old.Options.TTL))
}

// filed is the outcome of an action asked from inside a run that the
// daemon did not do but filed for a person to approve (or queued until
// the agent's turn stops): nothing happened yet, so it is not a success.
// Its message says what was filed, as what, and for whom; its exit status
// is exitFiled.
func filed(p *httpapi.Pending, what, ref string) error {
	if p.Queued {
		return exitErr{code: exitFiled, err: fmt.Errorf("%s of %s was not done yet: it is queued until the agent's turn stops; %s", what, ref, p.Message)}
	}
	a := p.Approval
	return exitErr{code: exitFiled, err: fmt.Errorf("%s of %s was not done: it is filed as request %s for a person of workspace %s to approve "+
		"(tine pending lists it; tine approve %s, run by them, does it)", what, ref, a.ID, a.Workspace, a.ID)}
}

// orNil returns v, or nil with the error.
func orNil[T any](v *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return v, nil
}
