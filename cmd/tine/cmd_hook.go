package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/classify"
	"github.com/tinehq/tine/hook"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/store"
)

func newHook(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "hook claude|codex",
		Short: "Answer an agent's hook event (run by the agent)",
		Long: `Reads one hook event of Claude Code or Codex as JSON on stdin and answers in
that agent's format. Inside a tine run (TINE_RUN and TINE_ROLE set):
PreToolUse denies fork-worthy commands in a source with the tine fork-self
command to run instead, and external effects everywhere; PostToolUse records
the call as evidence (test runs flagged); UserPromptSubmit records a typed
choice ("approve ID", "merge RUN", "pick fork N") for approval; Stop records
the turn as stopped. Records go to the JSON-lines file TINE_EVIDENCE, if set.

Outside a run, a hook whose working directory (the event's cwd) is inside a
managed workspace on the host acts for that workspace's source run, and one
in a fork's view (tine path FORK) for that fork: an agent started on the
host gets the same decisions as inside the run. Anywhere else it answers
nothing. It always exits 0: an event it cannot read
is passed with a warning on stderr, since a failing hook would get in the
agent's way. tine setup installs it.`,
		Example: `  echo '{"hook_event_name":"Stop","session_id":"s"}' | tine hook claude
  tine hook codex --json-decision < event.json`,
		Args: hookArgs,
		RunE: func(c *cobra.Command, args []string) error {
			agent, _ := hook.ParseAgent(args[0])
			t0 := time.Now()
			env := hookEnv()
			env.Host = func(ctx context.Context, dir string) (hook.Env, bool) {
				return hostRun(ctx, a.home, dir)
			}
			ans := hook.HandleReader(c.Context(), agent, c.InOrStdin(), env)
			took := time.Since(t0)
			defer reportTiming(c.Context(), string(agent), string(ans.Response.Action), took)
			fmt.Fprint(a.stderr, ans.Output.Stderr)
			if asJSON {
				return a.printJSON(ans)
			}
			_, err := a.stdout.Write(ans.Output.Stdout)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json-decision", false, "print tine's neutral decision (event, verdict, records) as JSON instead of the agent's answer")
	// Exit status 2 means "block" to both agents: a bad command line must
	// not block the agent, so it fails with 1.
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return exitErr{exitError, fmt.Errorf("%w (see tine hook --help)", err)}
	})
	return c
}

// hookArgs wants one known agent, failing with status 1, not 2.
func hookArgs(c *cobra.Command, args []string) error {
	if len(args) != 1 {
		return exitErr{exitError, fmt.Errorf("hook takes 1 argument, claude or codex (see tine hook --help)")}
	}
	if _, err := hook.ParseAgent(args[0]); err != nil {
		return exitErr{exitError, err}
	}
	return nil
}

// hookEnv is the hook's environment; inside a run whose daemon is
// reachable, records also go to the daemon, which acts on turns and typed
// choices.
func hookEnv() hook.Env {
	env := hook.EnvFromOS()
	if !env.Inside() {
		return env
	}
	cl, run, err := insideClient()
	if err != nil {
		return env
	}
	d := daemonRecorder{cl: cl, run: run}
	if env.Recorder == nil {
		env.Recorder = d
	} else {
		env.Recorder = bothRecorders{env.Recorder, d}
	}
	return env
}

// hostRun finds the run whose files the host sees at dir: a managed
// workspace's directory (or below it) is its source run's, a fork's view
// under the state directory that fork's. It reads the store of home only
// when there is one, and never creates it; any failure means no run.
func hostRun(ctx context.Context, home, dir string) (hook.Env, bool) {
	w, r, err := runAt(ctx, home, dir)
	if err != nil || r == nil {
		return hook.Env{}, false
	}
	env := hook.Env{Run: w.Name + "/" + r.Name, Role: classify.Source}
	if r.Role == tine.RoleFork {
		env.Role = classify.Fork
	}
	if p := os.Getenv(hook.EnvEvidence); p != "" {
		env.Recorder = &hook.FileRecorder{Path: p, Run: env.Run}
	}
	return env, true
}

// runAt returns the workspace whose files the host sees at dir and the
// live run they are: the source for the workspace's own directory, a fork
// for its view under home. A directory of no workspace is (nil, nil, nil).
func runAt(ctx context.Context, home, dir string) (*tine.Workspace, *tine.Run, error) {
	st, err := store.Open(home)
	if err != nil || st == nil {
		return nil, nil, err
	}
	defer st.Close()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, nil, err
	}
	var ws *tine.Workspace
	var run *tine.Run
	err = st.View(ctx, func(tx tine.Tx) error {
		all, err := tx.Workspaces()
		if err != nil {
			return err
		}
		views := layout.New(home).Workspaces()
		if homeReal, err := filepath.EvalSymlinks(views); err == nil {
			views = homeReal
		}
		for _, w := range all {
			// A fork's view: HOME/workspaces/WS/runs/RUN/view.
			if rel, ok := below(real, layout.WorkspaceAt(filepath.Join(views, w.ID)).Runs()); ok {
				parts := strings.SplitN(rel, string(filepath.Separator), 3)
				if len(parts) >= 2 && parts[1] == "view" {
					if r, err := tx.Run(parts[0]); err == nil && r.Workspace == w.ID && r.Active() {
						ws, run = w, r
						return nil
					}
				}
			}
			// The workspace itself; the deepest one when they nest.
			if _, ok := below(real, w.Path); ok && (ws == nil || len(w.Path) > len(ws.Path)) {
				runs, err := tx.Runs(tine.RunFilter{Workspace: w.ID, State: tine.StateActive})
				if err != nil {
					return err
				}
				for _, r := range runs {
					if r.Role == tine.RoleSource {
						ws, run = w, r
					}
				}
			}
		}
		return nil
	})
	return ws, run, err
}

// below reports whether path is dir or inside it, and the rest of it.
func below(path, dir string) (string, bool) {
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// daemonRecorder reports records to the daemon with the run's capability.
type daemonRecorder struct {
	cl  *httpapi.Client
	run string
}

func (d daemonRecorder) Record(ctx context.Context, kind string, data any) error {
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return d.cl.Evidence(ctx, d.run, httpapi.EvidenceRequest{Kind: kind, Data: raw})
}

// bothRecorders records to two recorders, reporting either's failure.
type bothRecorders [2]hook.Recorder

func (b bothRecorders) Record(ctx context.Context, kind string, data any) error {
	return errors.Join(b[0].Record(ctx, kind, data), b[1].Record(ctx, kind, data))
}

// reportTiming tells the daemon, from inside a run, how long the decision
// took, for its hook-decision histogram. Failures are ignored: timing is
// never worth getting in the agent's way.
func reportTiming(ctx context.Context, agent, decision string, d time.Duration) {
	if hook.EnvFromOS().Run == "" {
		return
	}
	cl, _, err := insideClient()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	cl.HookTiming(ctx, httpapi.HookTiming{Agent: agent, Decision: decision, Seconds: d.Seconds()})
}
