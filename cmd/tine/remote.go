package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/sandbox"
)

// A normal user whose state directory is not chosen (no TINE_HOME, no
// --home) works through the system daemon when it answers: their
// workspaces live in its store, owned by them, and the commands below send
// their requests to it (the user cannot open root's store). Names are
// resolved from the workspaces the daemon shows them.

// remote reports whether this command goes through the system daemon, or
// inside a run through the run's (which serves it as the run, in its
// lineage's scope: docs/agents.md).
func (a *app) remote() bool {
	a.remoteOnce.Do(func() {
		if a.homeSet || os.Getenv("TINE_HOME") != "" || os.Getenv("TINE_NO_DAEMON") != "" {
			return
		}
		if sock := os.Getenv("TINE_SOCKET"); sock != "" && inRun() {
			a.isRemote = daemonUp(sock)
			a.inRun = a.isRemote
			return
		}
		a.isRemote = os.Geteuid() != 0 && daemonUp(daemonSocket())
	})
	return a.isRemote
}

// rootOnly refuses, for a normal user working through the system daemon,
// a command that works on the daemon's whole store (tine gc, tine
// doctor): it holds every user's workspaces, which theirs must not see.
func (a *app) rootOnly() error {
	if !a.remote() {
		return nil
	}
	if a.inRun {
		return a.insideRun()
	}
	return fmt.Errorf("tine %s works on the tine daemon's whole store, every user's: run it as root (sudo tine %s); TINE_HOME=DIR tine %s works on a state directory of your own: %w",
		a.cmd, a.cmd, a.cmd, tine.ErrPrivilege)
}

// servedAlready refuses tine serve for a normal user the system daemon
// serves (no state directory of their own chosen): it would start a
// second, empty daemon. It says where their workspaces are instead.
func (a *app) servedAlready(ctx context.Context) error {
	if !a.remote() || a.inRun {
		return nil
	}
	where := "none yet (tine init makes one)"
	if states, err := a.daemon().Workspaces(ctx); err == nil && len(states) > 0 {
		var names []string
		for i, st := range states {
			if i == 5 {
				names = append(names, fmt.Sprintf("and %d more", len(states)-i))
				break
			}
			names = append(names, st.Workspace.Name+" ("+display.Path(st.Workspace.Path)+")")
		}
		where = strings.Join(names, ", ")
	}
	return fmt.Errorf("the system tine daemon serves you already on %s, with your workspaces: %s; your tine commands go to it (tine ls) and tine dashboard prints the URL of your dashboard there; TINE_HOME=DIR tine serve runs a daemon of your own over another state directory: %w",
		display.Path(daemonSocket()), where, tine.ErrExists)
}

// remoteOr runs remote with the system daemon's client when this command
// goes through it, else local with an open engine.
func (a *app) remoteOr(ctx context.Context, remote func(*httpapi.Client) error, local func(*engine.Engine) error) error {
	if a.remote() {
		return remote(a.daemon())
	}
	return a.withEngine(ctx, local)
}

// daemon is the system daemon's client, or inside a run the run's daemon
// signing with its capability.
func (a *app) daemon() *httpapi.Client {
	if a.remote() && a.inRun {
		if cl, _, err := insideClient(); err == nil {
			return cl
		}
		// Unreadable capability: unsigned, which the daemon refuses from a
		// run, saying why.
		return httpapi.NewClient(os.Getenv("TINE_SOCKET"), nil)
	}
	return httpapi.NewClient(daemonSocket(), nil)
}

// needsDaemon adds to err, which says a command needs privileges, the one
// command that starts the system daemon, for a normal user without one.
// Inside a run the daemon is the run's own (TINE_SOCKET; the system socket
// is hidden there): when it answers, its refusal is the whole story.
func needsDaemon(err error) error {
	if err == nil || os.Geteuid() == 0 || !errors.Is(err, tine.ErrPrivilege) || daemonUp(daemonSocket()) {
		return err
	}
	if s := os.Getenv("TINE_SOCKET"); s != "" && daemonUp(s) {
		return err
	}
	return fmt.Errorf("%w; the tine daemon runs it for you: start it with 'sudo tine setup daemon'", err)
}

// remoteRef turns a bare run name into WORKSPACE/NAME, the workspace being
// the one (of the caller's) holding the current directory, as the engine
// resolves it locally; a path (the source of the workspace there) goes
// made absolute, ids and WORKSPACE/NAME as they are.
func remoteRef(ctx context.Context, cl *httpapi.Client, ref string) string {
	if engine.IsPathRef(ref) {
		if abs, err := filepath.Abs(ref); err == nil {
			return abs
		}
	}
	if strings.Contains(ref, "/") || tine.LooksLikeID(tine.PrefixRun, ref) {
		return ref
	}
	if w := os.Getenv("TINE_WORKSPACE"); w != "" && inRun() {
		return w + "/" + ref // inside a run: its workspace's (the workspace view is people's)
	}
	if w := remoteWorkspaceOfCwd(ctx, cl); w != nil {
		return w.Name + "/" + ref
	}
	return ref
}

func remoteWorkspaceOfCwd(ctx context.Context, cl *httpapi.Client) *tine.Workspace {
	cwd, err := os.Getwd()
	if err != nil {
		return nil
	}
	states, err := cl.Workspaces(ctx)
	if err != nil {
		return nil
	}
	for _, st := range states {
		if rel, err := filepath.Rel(st.Workspace.Path, cwd); err == nil && filepath.IsLocal(rel) || rel == "." {
			return st.Workspace
		}
	}
	return nil
}

// remoteInit is tine init through the daemon.
func (a *app) remoteInit(ctx context.Context, o engine.InitOptions) (engine.Ref, error) {
	path := o.Path
	if path == "" {
		path = "."
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return engine.Ref{}, err
	}
	ref, err := a.daemon().Init(ctx, httpapi.InitRequest{Path: abs, Backend: o.Backend, Name: o.Name, Net: o.Net, Groups: o.Groups})
	return *ref, err
}

// remoteRelease is tine release through the daemon.
func (a *app) remoteRelease(ctx context.Context, ref string, force bool) (*engine.Released, error) {
	if abs, err := filepath.Abs(ref); err == nil {
		if fi, err := os.Stat(ref); err == nil && fi.IsDir() {
			ref = abs // a path: the daemon's directory is not ours
		}
	}
	return orNil(a.daemon().Release(httpapi.Interruptible(ctx), ref, httpapi.ReleaseRequest{Force: force}))
}

// remoteRuns lists the caller's runs as tine ls does.
func (a *app) remoteRuns(ctx context.Context, ws string, all bool) ([]runRow, error) {
	got, err := a.daemon().Runs(ctx, ws, true)
	if err != nil {
		return nil, err
	}
	names := map[string]string{}
	for _, r := range got {
		names[r.Run.ID] = r.Run.Name
	}
	rows := []runRow{}
	for _, r := range got {
		if all || r.Run.Active() {
			rows = append(rows, runRow{WorkspaceName: r.WorkspaceName, Run: r.Run, ParentName: names[r.Run.Parent], Path: r.Path, Processes: r.Processes})
		}
	}
	return rows, nil
}

// remoteChanges is tine diff through the daemon; with patch, the patch
// goes to w.
func (a *app) remoteChanges(ctx context.Context, ref string, patch bool, w io.Writer) ([]layer.Change, error) {
	cl := a.daemon()
	ref = remoteRef(ctx, cl, ref)
	if patch {
		text, _, err := cl.Patch(ctx, ref, 64<<20)
		if err == nil {
			_, err = io.WriteString(w, terminalText(w, text))
		}
		return nil, err
	}
	res, err := cl.Diff(ctx, ref)
	return res.Changes, err
}

// ps is run ref's runtime.PS, through the system daemon for a normal user.
func (a *app) ps(ctx context.Context, ref string) (ps *runtime.PS, err error) {
	err = a.remoteOr(ctx, func(cl *httpapi.Client) error {
		ps, err = cl.PS(ctx, remoteRef(ctx, cl, ref))
		return err
	}, func(e *engine.Engine) (err error) {
		ps, err = runtime.Of(e).PS(ctx, ref)
		return err
	})
	return ps, err
}

// remoteEvents is tine log through the daemon.
func (a *app) remoteEvents(ctx context.Context, ref string) ([]*tine.Event, error) {
	cl := a.daemon()
	evs, err := cl.RunEvents(ctx, remoteRef(ctx, cl, ref))
	return compactDetails(evs), err
}

// remoteExec is tine exec through the daemon: this process's standard
// streams are handed to the run's supervisor (httpapi.AttachRequest), the
// signals tine exec forwards are sent on, and the command's exit status
// is returned.
func (a *app) remoteExec(ctx context.Context, ref string, args []string, keep bool, term *terminal) error {
	cl := a.daemon()
	cwd, _ := os.Getwd()
	body, _ := json.Marshal(httpapi.AttachRequest{Args: args, Env: os.Environ(), Cwd: cwd, Keep: keep, Tty: term != nil})
	c, err := net.Dial("unix", daemonSocket())
	if err != nil {
		return exitErr{code: sandbox.ExitCannotRun, err: fmt.Errorf("the tine daemon: %w", err)}
	}
	conn := c.(*net.UnixConn)
	defer conn.Close()
	req, _ := http.NewRequest("POST", "http://tine"+httpapi.AttachPath(remoteRef(ctx, cl, ref)), strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	if err := req.Write(conn); err != nil {
		return exitErr{code: sandbox.ExitCannotRun, err: err}
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		return exitErr{code: sandbox.ExitCannotRun, err: fmt.Errorf("the tine daemon: %w", err)}
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		return httpapi.AnswerError(resp.Status, b)
	}
	streams := term.streams()
	rights := syscall.UnixRights(int(streams[0].Fd()), int(streams[1].Fd()), int(streams[2].Fd()))
	if _, _, err := conn.WriteMsgUnix([]byte{0}, rights, nil); err != nil {
		return exitErr{code: sandbox.ExitCannotRun, err: err}
	}
	term.started()      // the daemon has its own copies now
	defer term.finish() // before tine prints anything more
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			if n, ok := s.(syscall.Signal); ok {
				fmt.Fprintf(conn, "{\"signal\":%d}\n", int(n))
			}
		}
	}()
	dec := json.NewDecoder(br)
	for {
		var line httpapi.AttachLine
		if err := dec.Decode(&line); err != nil {
			return exitErr{code: sandbox.ExitCannotRun, err: fmt.Errorf("the tine daemon went away while the command ran: %w", err)}
		}
		if line.Exit == nil {
			continue // {"pid":N}
		}
		if line.Error != "" {
			code := *line.Exit
			if code == 0 {
				code = sandbox.ExitCannotRun
			}
			return exitErr{code: code, err: errors.New(line.Error)}
		}
		return exitErr{code: *line.Exit}
	}
}

// remoteForkRun is tine fork-run through the daemon: the daemon runs it
// (its agents in the forks' supervisors, as the workspace's owner), and
// this command follows its report until it ends, printing what a local
// fork-run prints. Ctrl-C cancels it (agents killed, forks kept).
func (a *app) remoteForkRun(ctx context.Context, ref string, req forkrun.Request, asJSON bool) error {
	cl := a.daemon()
	req.Env = os.Environ() // the agents start from it, as they would here
	st, err := cl.ForkRun(ctx, remoteRef(ctx, cl, ref), req)
	if err != nil {
		return err
	}
	for _, w := range st.Warnings {
		fmt.Fprintf(a.stderr, "tine: warning: %s\n", display.Text(w))
	}
	var progress func(*forkrun.Report)
	if !asJSON {
		progress = newProgress(a.stdout).update
	}
	rep := st.Report
	for rep == nil || rep.FinishedAt.IsZero() {
		if rep != nil && progress != nil {
			progress(rep)
		}
		select {
		case <-ctx.Done():
			cl.CancelForkRun(context.Background(), st.Group)
			return exitErr{code: exitInterrupted, err: fmt.Errorf("fork-run %s canceled: its forks are kept", st.Group)}
		case <-time.After(300 * time.Millisecond):
		}
		next, err := cl.ForkRunReport(ctx, st.Group)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err == nil && ctx.Err() == nil {
			rep = next
		}
	}
	if progress != nil {
		progress(rep)
	}
	if asJSON {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else {
		a.printForkRun(rep)
	}
	switch rep.Outcome {
	case forkrun.OutcomeConflict:
		return exitErr{code: exitConflict}
	case forkrun.OutcomeCanceled:
		return exitErr{code: exitInterrupted}
	case forkrun.OutcomeFailed, forkrun.OutcomeAbandoned:
		return exitErr{code: exitError, err: errors.New(rep.OutcomeDetail)}
	}
	if rep.Error != "" { // as a fork-run in this process ends (a.forkRun)
		err := httpapi.CodedError(rep.Error, rep.ErrorCode)
		if asJSON {
			return exitErr{code: exitCode(err)}
		}
		return err
	}
	return nil
}
