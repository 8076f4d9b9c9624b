package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/internal/runenv"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/sandbox"
	"github.com/tinehq/tine/supervisor"
)

func newExec(a *app) *cobra.Command {
	var keep, tty, interactive bool
	c := &cobra.Command{
		Use:   "exec [-it] RUN -- CMD [ARG...]",
		Short: "Run a command with RUN's files at the workspace path",
		Long: `Runs CMD in a private mount namespace where RUN's files are mounted at the
workspace path. A working directory inside the workspace (or inside RUN's
view, see tine path) is kept, mapped to the workspace path; any other starts
at the workspace path. Standard streams and the exit status pass through;
126 means the run could not be entered, 127 that CMD was not found.

As root, or as a normal user through the system daemon (tine setup
daemon), CMD runs through RUN's supervisor, as the workspace's owner and
confined as RUN is (see tine ps). When RUN had none (it is stopped), the
one launched for CMD is stopped again once CMD ends and nothing else runs
in RUN, unless --keep is given. A normal user without the daemon gets a
sandbox of their own instead (a user namespace), confined as RUN's
supervisor would confine it (the state directory and other workspaces
hidden, seccomp; in a fork, Landlock, a home and /tmp of its own and a
network of its own held by its egress policy, which this command serves
from the host's network), except that a fork's home and /tmp layers last
for that one command.

-t gives CMD a terminal of its own (a pseudo-terminal, its controlling
terminal, leading a session inside the run): job control works, ^C and ^Z
reach its foreground job, and it follows the window size of your terminal,
which is in raw mode while attached. Standard input is always passed; -i is
accepted so that -it reads as it does for docker exec. See also tine shell.`,
		Example: `  tine exec source-1 -- make test
  tine exec app/source-2 -- sh -c 'echo hi > notes.txt'
  tine exec -it source-1 -- vi notes.txt`,
		Args: func(c *cobra.Command, args []string) error {
			if len(commandArgs(args)) == 0 {
				return usageErr(c, "exec needs RUN, then -- and a command")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			return a.exec(c, args[0], commandArgs(args), keep, tty)
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "as root: keep the supervisor this command launched (RUN had none) running afterwards")
	c.Flags().BoolVarP(&tty, "tty", "t", false, "give CMD a terminal of its own, attached to yours")
	c.Flags().BoolVarP(&interactive, "interactive", "i", false, "pass standard input (always done; for -it as in docker exec)")
	c.Flags().SetInterspersed(false)
	return c
}

// exec runs args inside run ref, on a terminal of its own with tty: through
// the daemon when it is to be used, through the run's supervisor as root,
// else in a sandbox.
func (a *app) exec(c *cobra.Command, ref string, args []string, keep, tty bool) error {
	var term *terminal
	if tty {
		var err error
		if term, err = openTerminal(); err != nil {
			return exitErr{code: sandbox.ExitCannotRun, err: err}
		}
		defer term.finish()
	}
	if a.remote() {
		return a.remoteExec(c.Context(), ref, args, keep, term)
	}
	if os.Geteuid() == 0 {
		return a.execSupervised(c, ref, args, keep, term)
	}
	var spec sandbox.Spec
	err := a.withEngine(c.Context(), func(e *engine.Engine) error {
		r, err := e.FindRun(c.Context(), ref)
		if err != nil {
			return err
		}
		if spec, err = a.execSpec(c.Context(), e, r, args); err != nil {
			return err
		}
		rt := runtime.Of(e)
		sb, err := rt.Unsupervised(c.Context(), r, spec.Env)
		if err != nil {
			return err
		}
		spec.Confine, spec.Hide, spec.Env, spec.Net = sb.Confine, sb.Hide, sb.Env, sb.Net
		if sb.HostNetWhy != "" { // say so: the host's loopback is open to it
			fmt.Fprintf(a.stderr, "tine: note: without the daemon, fork %s (%s) shares the host's network, unrestricted\n", r.Run.Name, sb.HostNetWhy)
		}
		name := r.Run.Name
		spec.NetFailed = func(why error) error {
			if err := sb.NetFailed(why); err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "tine: note: fork %s's network of its own could not be set up (%v): it shares the host's network, unrestricted\n", name, why)
			return nil
		}
		spec.Covered = func(c sandbox.Cover) { sb.Covered(c.Hidden, c.Others) }
		stopLogins := func() {}
		spec.Started = func(pid int) { term.started(); rt.AddSession(r, pid); sb.Started(); stopLogins = sb.WatchLogins(pid) }
		spec.Exited = func(pid int) { stopLogins(); rt.RemoveSession(r, pid); sb.Ended() }
		return nil
	})
	if err != nil {
		return err
	}
	spec.Terminal = term.slaveFile()
	code, err := sandbox.Run(spec)
	term.finish()
	if err != nil {
		return exitErr{code: code, err: err}
	}
	return exitErr{code: code}
}

// commandArgs returns the command after RUN and an optional "--" (which
// cobra keeps once flags stop being parsed at RUN).
func commandArgs(args []string) []string {
	if len(args) < 2 {
		return nil
	}
	if args[1] == "--" {
		return args[2:]
	}
	return args[1:]
}

// execSpec says how to enter run r: its view at the workspace path, and the
// working directory mapped into it.
func (a *app) execSpec(ctx context.Context, e *engine.Engine, r engine.Ref, args []string) (sandbox.Spec, error) {
	if !r.Run.Active() {
		return sandbox.Spec{}, stateErr(r.Run)
	}
	args, note := runtime.Of(e).ExecArgs(ctx, r, args)
	if note != "" {
		fmt.Fprintf(a.stderr, "tine: note: %s\n", display.Text(note))
	}
	view := e.Path(r.Workspace, r.Run)
	spec := sandbox.Spec{Workspace: r.Workspace.Path, Dir: r.Workspace.Path, Args: args, Env: os.Environ()}
	if view != r.Workspace.Path {
		spec.View = view
	}
	cwd, err := os.Getwd()
	if err != nil {
		return spec, nil
	}
	for _, root := range []string{r.Workspace.Path, view} {
		if rel, err := filepath.Rel(root, cwd); err == nil && filepath.IsLocal(rel) {
			spec.Dir = filepath.Join(r.Workspace.Path, rel)
			break
		}
	}
	spec.Env = withEnv(spec.Env, "PWD", spec.Dir)
	for _, kv := range runenv.Vars(r.Workspace, r.Run) {
		k, v, _ := strings.Cut(kv, "=")
		spec.Env = withEnv(spec.Env, k, v)
	}
	return spec, nil
}

func stateErr(r *tine.Run) error {
	return fmt.Errorf("run %s is %s: %w", r.Name, r.State, tine.ErrState)
}

// withEnv returns env with key set to value.
func withEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// execSupervised runs the command through RUN's supervisor (launching one
// when RUN has none), so it lives in RUN's namespaces and cgroup.
func (a *app) execSupervised(c *cobra.Command, ref string, args []string, keep bool, term *terminal) error {
	var cl *supervisor.Client
	var spec sandbox.Spec
	launched := false
	syncLogins := func() {} // a sign-in the command refreshed in a fork reaches its owner's home
	err := a.withEngine(c.Context(), func(e *engine.Engine) error {
		r, err := e.FindRun(c.Context(), ref)
		if err != nil {
			return err
		}
		if rt := runtime.Of(e); r.Run.Role == tine.RoleFork {
			syncLogins = func() { rt.SyncForkLogins(r) }
		}
		if spec, err = a.execSpec(c.Context(), e, r, args); err != nil {
			return err
		}
		spec.Env = runenv.For(r.Workspace, r.Run, spec.Env, os.Getuid())
		st, _ := runtime.Of(e).ProcState(r)
		launched = st != runtime.ProcRunning
		if _, cl, err = runtime.Of(e).Client(c.Context(), ref); err != nil {
			return exitErr{code: sandbox.ExitCannotRun, err: err}
		}
		return nil
	})
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	x := supervisor.Exec{Args: spec.Args, Env: spec.Env, Dir: spec.Dir, Tty: term != nil}
	code, err := cl.Exec(context.Background(), x, term.streams(), sigs, func(int) { term.started() })
	term.finish() // before anything more is printed
	syncLogins()
	if launched && !keep {
		_ = a.withEngine(context.Background(), func(e *engine.Engine) error {
			runtime.Of(e).StopIdle(context.Background(), ref)
			return nil
		})
	}
	if err != nil {
		if code == 0 {
			code = sandbox.ExitCannotRun
		}
		return exitErr{code: code, err: err}
	}
	return exitErr{code: code}
}
