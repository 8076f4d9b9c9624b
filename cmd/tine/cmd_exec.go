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
	"github.com/tinehq/tine/sandbox"
	"github.com/tinehq/tine/supervisor"
)

func newExec(a *app) *cobra.Command {
	var keep bool
	c := &cobra.Command{
		Use:   "exec RUN -- CMD [ARG...]",
		Short: "Run a command with RUN's files at the workspace path",
		Long: `Runs CMD in a private mount namespace where RUN's files are mounted at the
workspace path. A working directory inside the workspace (or inside RUN's
view, see tine path) is kept, mapped to the workspace path; any other starts
at the workspace path. Standard streams and the exit status pass through;
126 means the run could not be entered, 127 that CMD was not found.

As root, CMD runs through RUN's supervisor. When RUN had none (it is
stopped), the one launched for CMD is stopped again once CMD ends and
nothing else runs in RUN, unless --keep is given.`,
		Example: `  tine exec source-1 -- make test
  tine exec app/source-2 -- sh -c 'echo hi > notes.txt'`,
		Args: func(c *cobra.Command, args []string) error {
			if len(commandArgs(args)) == 0 {
				return usageErr(c, "exec needs RUN, then -- and a command")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if a.remote() {
				return a.remoteExec(c.Context(), args[0], commandArgs(args), keep)
			}
			if os.Geteuid() == 0 {
				return a.execSupervised(c, args[0], commandArgs(args), keep)
			}
			var spec sandbox.Spec
			err := a.withEngine(c.Context(), func(e *engine.Engine) error {
				r, err := e.FindRun(c.Context(), args[0])
				if err != nil {
					return err
				}
				spec, err = execSpec(e, r, commandArgs(args))
				spec.Started = func(pid int) { e.AddSession(r, pid) }
				spec.Exited = func(pid int) { e.RemoveSession(r, pid) }
				return err
			})
			if err != nil {
				return err
			}
			code, err := sandbox.Run(spec)
			if err != nil {
				return exitErr{code: code, err: err}
			}
			return exitErr{code: code}
		},
	}
	c.Flags().BoolVar(&keep, "keep", false, "as root: keep the supervisor this command launched (RUN had none) running afterwards")
	c.Flags().SetInterspersed(false)
	return c
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
func execSpec(e *engine.Engine, r engine.Ref, args []string) (sandbox.Spec, error) {
	if !r.Run.Live() {
		return sandbox.Spec{}, stateErr(r.Run)
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
	for _, kv := range engine.RunEnv(r) {
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
func (a *app) execSupervised(c *cobra.Command, ref string, args []string, keep bool) error {
	var cl *supervisor.Client
	var spec sandbox.Spec
	launched := false
	err := a.withEngine(c.Context(), func(e *engine.Engine) error {
		r, err := e.FindRun(c.Context(), ref)
		if err != nil {
			return err
		}
		if spec, err = execSpec(e, r, args); err != nil {
			return err
		}
		spec.Env = engine.ExecEnv(r, spec.Env, os.Getuid())
		st, _ := e.ProcState(r)
		launched = st != engine.ProcRunning
		if _, cl, err = e.Client(c.Context(), ref); err != nil {
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
	x := supervisor.Exec{Args: args, Env: spec.Env, Dir: spec.Dir}
	code, err := cl.Exec(context.Background(), x, [3]*os.File{os.Stdin, os.Stdout, os.Stderr}, sigs, nil)
	if launched && !keep {
		_ = a.withEngine(context.Background(), func(e *engine.Engine) error {
			e.StopIdle(context.Background(), ref)
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
