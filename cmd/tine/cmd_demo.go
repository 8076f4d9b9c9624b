package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/display"
)

// The demo's three approaches; the scripted agent (tine demo-agent) acts
// on the words in them.
var demoApproaches = []string{
	"minimal: fix the bug in mul with the smallest change",
	"helper: route all arithmetic through one shared helper",
	"restructure: split the library into one module per operation",
}

const demoPrompt = "The test `mul 3 4` fails in test.sh. Fix calc.sh so that every test passes."

func newDemo(a *app) *cobra.Command {
	var dir string
	c := &cobra.Command{
		Use:   "demo",
		Short: "See fork-run at work on a sample repository",
		Long: `Creates a sample repository with a failing test (a tiny shell library), makes
it a tine workspace, and runs fork-run with three approaches using a small
built-in scripted agent: one fixes the bug with a one-line change, one
breaks another test, one rewrites the library at length. It shows the live
display, the comparison and the judge's verdict, merges the winner the way a
person confirms a recommendation (tine choose), runs the tests in the
source, and prints what happened. Needs root or the tine daemon, as
fork-run does. The
workspace stays, for you to explore: tine ls, tine summary, tine serve.`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return a.demo(c.Context(), dir)
		},
	}
	c.Flags().StringVar(&dir, "dir", "", "where to create the sample repository (default a new directory under /tmp)")
	return c
}

// demoStep prints a command line as a person would type it, then runs
// tine with those arguments, its output going straight to the terminal.
func (a *app) demoStep(ctx context.Context, args ...string) error {
	fmt.Fprintf(a.stdout, "\n$ tine %s\n", shellQuote(args))
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if !a.remote() { // this state directory; through the daemon, the daemon's
		args = append([]string{"--home", a.home}, args...)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
	return cmd.Run()
}

func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, s := range args {
		if s == "" || strings.ContainsAny(s, " \t\n'\"$`\\|&;<>()*?!#") {
			s = "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
		out[i] = s
	}
	return strings.Join(out, " ")
}

func (a *app) demo(ctx context.Context, dir string) error {
	if os.Geteuid() != 0 && !a.remote() {
		return fmt.Errorf("tine demo needs root or the tine daemon, as fork-run does (agents run inside forks through their supervisors): %w", tine.ErrPrivilege)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if dir == "" {
		parent, err := os.MkdirTemp("", "tine-demo-")
		if err != nil {
			return err
		}
		dir = filepath.Join(parent, "calc-"+strings.TrimPrefix(filepath.Base(parent), "tine-demo-"))
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "tine demo: a sample repository at %s whose test fails:\n", dir)
	if err := writeDemoRepo(ctx, dir); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n$ sh test.sh\n")
	runTests(ctx, dir, a)
	if err := a.demoStep(ctx, "init", dir); err != nil {
		return err
	}
	src := filepath.Base(dir) + "/source"
	args := []string{"fork-run", src, "--prompt", demoPrompt, "-n", "3"}
	for _, ap := range demoApproaches {
		args = append(args, "--approach", ap)
	}
	args = append(args, "--agent-cmd", exe+" demo-agent", "--test", "sh test.sh", "--test-timeout", "30s", "--budget", "0.10")
	if err := a.demoStep(ctx, args...); err != nil {
		return err
	}
	return a.demoResolve(ctx, dir, src)
}

// demoResolve confirms the judge's recommendation, as a person would, and
// shows the result.
func (a *app) demoResolve(ctx context.Context, dir, src string) error {
	rep, err := a.demoReport(ctx, src)
	if err != nil {
		return err
	}
	if rep.Winner == "" {
		return errors.New("demo: the judge recommended no fork; see the report above")
	}
	fmt.Fprintf(a.stdout, "\nThe judge recommends %s; in the default merge mode (auto_with_fallback) a person confirms:\n", rep.Winner)
	if err := a.demoStep(ctx, "choose", rep.Group, rep.Winner, "--merge"); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "\n$ sh test.sh   # in %s, the source, now with the winner merged\n", dir)
	passed := runTests(ctx, dir, a)
	if err := a.demoStep(ctx, "cost", rep.Group); err != nil {
		return err
	}
	a.demoSummary(rep, dir, passed)
	return nil
}

// demoReport is the report of the demo's fork-run of src: the newest
// fork-run group of src, or through the daemon the group of src's first
// fork (the demo's fork-run made it, and the daemon shows a user no
// store).
func (a *app) demoReport(ctx context.Context, src string) (rep *forkrun.Report, err error) {
	err = a.remoteOr(ctx, func(cl *httpapi.Client) error {
		s, err := cl.Summary(ctx, src+"-1")
		if err != nil {
			return err
		}
		rep, err = cl.ForkRunReport(ctx, s.Group)
		return err
	}, func(e *engine.Engine) error {
		r, err := e.FindRun(ctx, src)
		if err != nil {
			return err
		}
		rep, err = latestReport(ctx, e, r)
		return err
	})
	return rep, err
}

// latestReport is the report of the newest fork-run group of run r.
func latestReport(ctx context.Context, e *engine.Engine, r engine.Ref) (*forkrun.Report, error) {
	var groups []*tine.Group
	err := e.Store().View(ctx, func(tx tine.Tx) error {
		var err error
		groups, err = tx.Groups(r.Workspace.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	for i := len(groups) - 1; i >= 0; i-- {
		if groups[i].Parent == r.Run.ID {
			return forkrun.Load(e, r.Workspace.ID, groups[i].ID)
		}
	}
	return nil, fmt.Errorf("no fork-run of %s: %w", r.Run.Name, tine.ErrNotFound)
}

func (a *app) demoSummary(rep *forkrun.Report, dir string, passed bool) {
	w := a.stdout
	fmt.Fprintln(w, "\nWhat happened:")
	fmt.Fprintf(w, "  - %s was forked into %d copy-on-write forks; an agent ran in each, in parallel, with its own approach.\n", rep.Source, len(rep.Forks))
	for _, f := range rep.Forks {
		fmt.Fprintf(w, "  - %s (%s): %s, tests %s, %d file(s) +%d -%d, $%.4f\n", f.Name, display.Text(clipLine(f.Approach, 40)), f.State,
			forkrun.TestWord(f.Test), f.FilesChanged, f.LinesAdded, f.LinesDeleted, f.CostUSD)
	}
	if v := rep.Verdict; v != nil {
		fmt.Fprintf(w, "  - the %s judge picked %s (confidence %.2f): %s\n", v.Judge, rep.Winner, v.Confidence, display.Text(v.Rationale))
	}
	state := "pass"
	if !passed {
		state = "STILL FAIL"
	}
	fmt.Fprintf(w, "  - tine choose merged %s into the source and discarded the other forks; the source's tests now %s.\n", rep.Winner, state)
	fmt.Fprintln(w, "\nExplore:")
	fmt.Fprintf(w, "  tine ls; tine log %s/source; tine events\n", filepath.Base(dir))
	fmt.Fprintf(w, "  tine serve --listen 127.0.0.1:7070   # the dashboard at /ui/\n")
	fmt.Fprintf(w, "  tine release --unmerged %s   # when done\n", dir)
}

// runTests runs the sample's tests on the host in dir and reports whether
// they passed.
func runTests(ctx context.Context, dir string, a *app) bool {
	cmd := exec.CommandContext(ctx, "sh", "test.sh")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, a.stdout, a.stderr
	return cmd.Run() == nil
}
