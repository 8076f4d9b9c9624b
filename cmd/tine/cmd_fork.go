package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/supervisor"
)

func newFork(a *app) *cobra.Command {
	var o engine.ForkOptions
	var asJSON, wait bool
	c := &cobra.Command{
		Use:   "fork RUN",
		Short: "Fork a run into N copy-on-write runs in one group",
		Long: `Records RUN's current files as a version (the fork point) and makes --copies
forks of it, one group, each with a private writable view at the same
workspace path. The i-th fork gets the i-th --approach. RUN keeps running
untouched. Forks are named PREFIX-1, PREFIX-2, ... (PREFIX defaults to RUN's
name); a single fork with --name gets exactly that name.

Forks of a running RUN start its services (--live); tine fork returns once
their processes run and says, per fork, which services are ready and which
are still starting (their ready checks go on: see tine ps). --wait waits
until every ready check has passed or failed (each up to its ready timeout).`,
		Example: `  tine fork source --copies 3 --approach "rewrite" --approach "patch" --approach "minimal"
  tine fork app/source --name try-sqlite --json
  tine fork web/source -n 2 --wait`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.NoWait = !wait
			ctx, stop := interruptible(c.Context())
			defer stop()
			return a.withOps(ctx, func(op ops, e *engine.Engine) error {
				res, err := op.Fork(a.progress(ctx, "forking "+args[0], asJSON), args[0], o)
				a.progressDone()
				if err == nil {
					err = a.printForked(res, asJSON)
				}
				return interrupted(ctx, err, err == nil, forkOutcome(args[0], res))
			})
		},
	}
	c.Flags().IntVarP(&o.Copies, "copies", "n", 1, "number of forks")
	c.Flags().StringVar(&o.Name, "name", "", "name prefix of the forks")
	c.Flags().StringArrayVar(&o.Approaches, "approach", nil, "approach of the next fork (repeatable)")
	c.Flags().BoolVar(&o.AllowSecrets, "allow-secrets", false, "let a live fork (ptrace, criu) copy processes whose environment holds secrets of [secrets]")
	c.Flags().StringVar(&o.Live, "live", "", "what the parent's processes become in each fork: none, rerun (start services fresh), ptrace (fork processes live), criu (checkpoint and restore whole trees) or auto (each service as its [[service]] live says: ptrace for a single-threaded process, else CRIU, else rerun); default rerun when RUN is running, else none")
	c.Flags().BoolVar(&wait, "wait", false, "wait until the forks' services pass their ready checks")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

// printForked prints what a fork made.
func (a *app) printForked(res *engine.ForkResult, asJSON bool) error {
	if asJSON {
		return a.printJSON(res)
	}
	fmt.Fprintf(a.stdout, "forked %s at version %s into group %s:\n", res.Parent.Name, res.Version.ID, res.Group.ID)
	for _, f := range res.Forks {
		fmt.Fprintf(a.stdout, "  %s\t%s\t%s\n", f.Name, f.ID, display.Text(f.Approach))
	}
	a.printSeal(res.Parent.Name, res.Seal)
	a.printLive(res.Live)
	return nil
}

// forkOutcome says what an interrupted fork of run ref did.
func forkOutcome(ref string, res *engine.ForkResult) outcome {
	o := outcome{before: "no fork was made", after: "the fork was made", watch: "tine ls shows whether " + ref + " was forked"}
	if res != nil {
		names := make([]string, len(res.Forks))
		for i, f := range res.Forks {
			names[i] = f.Name
		}
		o.after += ": " + strings.Join(names, ", ")
	}
	return o
}

// printLive says how each fork's processes were started.
func (a *app) printLive(reps []engine.LiveReport) {
	for _, r := range reps {
		fmt.Fprintf(a.stdout, "  %s: ", r.Run)
		switch {
		case !r.Started:
			fmt.Fprintf(a.stdout, "not started: %s\n", display.Text(r.Error))
			continue
		case r.Addr != "":
			fmt.Fprintf(a.stdout, "running at %s", r.Addr)
		default:
			fmt.Fprint(a.stdout, "running")
		}
		for _, p := range r.Forked {
			if p.Service == "" {
				fmt.Fprintf(a.stdout, "; forked live pid %d -> %d (parent paused %.1f ms)", p.Pid, p.Child, p.PauseMS)
			}
		}
		if len(r.Restarted) > 0 && len(r.Choices) == 0 {
			fmt.Fprintf(a.stdout, "; restarted %s", strings.Join(r.Restarted, ", "))
		}
		switch r.Display {
		case engine.LiveRerun:
			fmt.Fprint(a.stdout, "; display restarted from the fork's files")
		case engine.LiveCRIU:
			fmt.Fprint(a.stdout, "; display forked live by CRIU")
		}
		fmt.Fprintln(a.stdout)
		for _, c := range r.Choices {
			fmt.Fprintf(a.stdout, "    %s\n", liveChoiceLine(c))
		}
		for proc, why := range r.Refused {
			if !strings.HasPrefix(proc, "pid ") && len(r.Choices) > 0 {
				continue // a service: its choice said it
			}
			fmt.Fprintf(a.stdout, "    not forked live: %s: %s\n", display.Text(proc), display.Text(why))
		}
		if line := servicesLine(r.Services); line != "" {
			fmt.Fprintf(a.stdout, "    services: %s\n", line)
		}
		if r.Error != "" {
			fmt.Fprintf(a.stdout, "    error: %s\n", display.Text(r.Error))
		}
	}
}

// liveChoiceLine says how a live fork carried a service: "web: forked
// live by CRIU in 84 ms (pause 41.0 ms): 5 threads", "db: restarted:
// live = "restart" in tine.toml".
func liveChoiceLine(c engine.LiveChoice) string {
	var how string
	switch c.Engine {
	case engine.LiveCRIU:
		how = fmt.Sprintf("forked live by CRIU in %.0f ms (pause %.1f ms)", c.TookMS, c.PauseMS)
	case engine.LivePtrace:
		how = fmt.Sprintf("forked live by ptrace (pause %.1f ms)", c.PauseMS)
	default:
		how = "restarted"
	}
	if c.Why != "" {
		how += ": " + c.Why
	}
	return display.Text(c.Service) + ": " + display.Text(how)
}

// servicesLine says each service's state, "web ready, api starting", with
// a hint when some are still starting.
func servicesLine(sts []supervisor.ServiceStatus) string {
	var parts []string
	starting := false
	for _, s := range sts {
		parts = append(parts, s.Name+" "+s.State)
		starting = starting || s.State == supervisor.StateStarting
	}
	line := strings.Join(parts, ", ")
	if starting {
		line += " (ready checks go on: see tine ps, or fork with --wait)"
	}
	return line
}

// slowSeal is how long a seal by copy of an idle parent may take before
// tine fork says what it cost.
const slowSeal = 100 // ms

// printSeal says what sealing the parent cost when it was sealed by copy
// because something held it, or slowly: "source busy (pid 4121 bash has
// its cwd in it): copied 412 changed files (3.1 MiB) in 85 ms".
func (a *app) printSeal(parent string, s *engine.SealReport) {
	if s == nil || (!s.Busy && s.MS < slowSeal) {
		return
	}
	why := display.Text(parent) + " sealed by copy"
	if s.Busy {
		who := []string{"its view is in use"}
		if s.Running {
			who = []string{"its commands run in it"}
		}
		if len(s.Holders) > 0 {
			who = nil
		}
		for _, h := range s.Holders {
			if h.Pid == os.Getpid() { // found by the daemon: this command's own cwd
				h.Command = "tine (this command)"
			}
			who = append(who, h.String())
		}
		why = display.Text(parent) + " busy (" + strings.Join(who, "; ") + ")"
	}
	what := fmt.Sprintf("copied %d changed files (%s)", s.Files, size(s.Bytes))
	switch {
	case s.Unchanged: // nothing copied: no time worth saying
		since := "its last seal"
		if s.Presealed {
			since = "its seal in the background"
		}
		fmt.Fprintf(a.stdout, "  %s: nothing changed since %s, nothing copied\n", why, since)
		return
	case s.Whole:
		what = fmt.Sprintf("copied its whole delta, %d files (%s),", s.Files, size(s.Bytes))
	case s.Presealed:
		what = fmt.Sprintf("copied %d files changed since its seal in the background (%s)", s.Files, size(s.Bytes))
	}
	fmt.Fprintf(a.stdout, "  %s: %s in %s\n", why, what, msString(s.MS))
}

// msString prints a duration in milliseconds for people.
func msString(ms float64) string {
	if ms >= 1000 {
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
