package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/hook"
	"github.com/tinehq/tine/httpapi"
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

Outside a run it answers nothing. It always exits 0: an event it cannot read
is passed with a warning on stderr, since a failing hook would get in the
agent's way. tine setup installs it.`,
		Example: `  echo '{"hook_event_name":"Stop","session_id":"s"}' | tine hook claude
  tine hook codex --json-decision < event.json`,
		Args: hookArgs,
		RunE: func(c *cobra.Command, args []string) error {
			agent, _ := hook.ParseAgent(args[0])
			t0 := time.Now()
			ans := hook.HandleReader(c.Context(), agent, c.InOrStdin(), hookEnv())
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
	_, err = d.cl.Do(ctx, "POST", "/v1/runs/"+d.run+"/evidence", httpapi.EvidenceRequest{Kind: kind, Data: raw}, nil)
	return err
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
	cl.Do(ctx, "POST", "/v1/hooks/timing", httpapi.HookTiming{Agent: agent, Decision: decision, Seconds: d.Seconds()}, nil)
}
