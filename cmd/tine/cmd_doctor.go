package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/livefork"
)

func newDoctor(a *app) *cobra.Command {
	var asJSON, purge, setAside, rebuild bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Check the store and the state directory, and say how to recover",
		Long: `Checks the state directory without changing it: whether its store is there,
readable and the one its workspaces were made with, which directories the
store has no record of, what commands that died left in runs (a run left
frozen, a fork point left mounted, a merge's staging; tine gc removes
them), and what the quarantine holds (directories tine moved aside instead
of deleting). It says what to do for each problem, and
which release of each agent (claude, codex) is on your PATH against the
range tine supports and CI tests (the oldest and the newest).

Every other command refuses (exit status 10) while the store is missing,
empty, damaged or not the workspaces' own; tine never starts a fresh store
over existing workspaces.

--set-aside moves the workspace directories the store cannot vouch for (and
an empty or damaged store file) into the quarantine, so tine can go on;
nothing is deleted. --purge deletes everything in the quarantine: the only
way tine deletes what the store had no record of.

--rebuild makes the store again from the manifests every workspace, run,
version and group directory carries (workspace.json, runs/RUN/run.json,
versions/VERSION.json, groups/GROUP/group.json): the damaged store is moved
into the quarantine, a fresh one gets the id the workspaces were made with,
their records go in, and the views are mounted again. It refuses (exit
status 5) when the store is fine. The event log, approvals and discarded
runs are not rebuilt.

Exit status: 0 when commands can use the store, 10 when they refuse.`,
		Example: `  tine doctor
  tine doctor --json
  tine doctor --set-aside
  tine doctor --rebuild
  tine doctor --purge`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if err := a.rootOnly(); err != nil {
				return err
			}
			if n := btoi(purge) + btoi(setAside) + btoi(rebuild); n > 1 {
				return usageErr(c, "--purge, --set-aside and --rebuild are separate steps; run one, then the other")
			}
			ctx := c.Context()
			opts, err := a.engineOptions()
			if err != nil {
				return err
			}
			switch {
			case purge:
				done, err := engine.Purge(ctx, a.home, opts...)
				for _, q := range done {
					fmt.Fprintf(a.stderr, "tine: purged %s (%s from %s, %s)\n", q.Name, q.Kind, q.From, size(q.Bytes))
				}
				if err != nil {
					return err
				}
			case setAside:
				moved, err := engine.SetAside(ctx, a.home, opts...)
				for _, q := range moved {
					fmt.Fprintf(a.stderr, "tine: moved %s aside to %s\n", q.From, q.Dir)
				}
				if err != nil {
					return err
				}
			case rebuild:
				rep, err := engine.Rebuild(ctx, a.home, opts...)
				if rep != nil && err == nil {
					printRebuild(a.stderr, rep)
				} else if rep != nil {
					for _, s := range rep.SetAside {
						fmt.Fprintf(a.stderr, "tine: moved %s aside to %s\n", s.From, s.Dir)
					}
				}
				if err != nil {
					return err
				}
			}
			r, err := engine.Diagnose(ctx, a.home, opts...)
			if err != nil {
				return err
			}
			agents := agent.CheckInstalled(ctx, os.Getenv("PATH"))
			live := livefork.Engines(ctx)
			if asJSON {
				err = a.printJSON(doctorReport{Diagnosis: r, Agents: agents, LiveFork: live})
			} else {
				printDiagnosis(a.stdout, r)
				printAgents(a.stdout, agents)
				printEngines(a.stdout, live)
			}
			if err == nil && !r.Store.Usable() {
				err = fmt.Errorf("%w: %s", tine.ErrStore, r.Store.Problem)
			}
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	c.Flags().BoolVar(&purge, "purge", false, "delete everything in the quarantine")
	c.Flags().BoolVar(&rebuild, "rebuild", false, "make a missing or damaged store again from the manifests in the state directory")
	c.Flags().BoolVar(&setAside, "set-aside", false, "move what a refused store cannot vouch for into the quarantine, so tine can go on")
	return c
}

// doctorReport is tine doctor --json: the state directory's diagnosis,
// the agents found on the caller's PATH and the live-fork engines.
type doctorReport struct {
	*engine.Diagnosis
	Agents   []agent.Installed `json:"agents"`
	LiveFork []livefork.Engine `json:"live_fork"`
}

// printAgents writes the agents' versions against the supported ranges.
func printAgents(w io.Writer, agents []agent.Installed) {
	fmt.Fprintln(w, "agents:")
	for _, in := range agents {
		fmt.Fprintf(w, "  %-6s %s\n", in.Kind, display.Text(in.Note))
	}
}

// printDiagnosis writes what tine doctor found, for people.
func printDiagnosis(w io.Writer, r *engine.Diagnosis) {
	c := r.Store
	fmt.Fprintf(w, "state directory %s\n", r.Home)
	fmt.Fprintf(w, "store: %s: %s", c.Path, c.State)
	if c.ID != "" {
		fmt.Fprintf(w, " (id %s, created %s)", c.ID, c.Created.Format("2006-01-02 15:04:05Z"))
	}
	fmt.Fprintln(w)
	if c.Problem != "" {
		fmt.Fprintf(w, "  %s\n", display.Text(c.Problem))
	}
	fmt.Fprintf(w, "workspace directories: %d\n", len(c.Dirs))
	if len(r.Unknown) > 0 {
		fmt.Fprintf(w, "unknown to the store: %d\n", len(r.Unknown))
		for _, d := range r.Unknown {
			fmt.Fprintf(w, "  %q\n", d)
		}
	}
	if len(r.Leftovers) > 0 {
		fmt.Fprintf(w, "left over by commands that died: %d\n", len(r.Leftovers))
		for _, l := range r.Leftovers {
			switch l.Kind {
			case "frozen":
				fmt.Fprintf(w, "  frozen  %q (its freezer, pid %d, is gone)\n", l.Path, l.Pid)
			default:
				fmt.Fprintf(w, "  %s  %q\n", l.Kind, l.Path)
			}
		}
	}
	fmt.Fprintf(w, "quarantine: %d entries\n", len(r.Quarantine))
	for _, q := range r.Quarantine {
		fmt.Fprintf(w, "  %s  %s  %s  from %q: %s\n", q.Name, q.Kind, size(q.Bytes), q.From, display.Text(q.Reason))
	}
	fmt.Fprintf(w, "trash: %d entries, %s\n", len(r.Trash), size(r.TrashBytes))
	for _, t := range r.Trash {
		fmt.Fprintf(w, "  %s  %s  %s\n", t.Name, t.Kind, size(t.Bytes))
	}
	if len(r.DisplayMissing) > 0 {
		fmt.Fprintf(w, "display programs missing: %d\n", len(r.DisplayMissing))
		for _, p := range r.DisplayMissing {
			fmt.Fprintf(w, "  %s (Debian package %s)\n", p.Name, p.Package)
		}
	}
	fmt.Fprintln(w, "what to do:")
	for _, s := range r.Advice {
		fmt.Fprintf(w, "  - %s\n", strings.TrimSpace(s))
	}
}

// printRebuild writes what tine doctor --rebuild did, for people.
// printEngines says which live-fork engines this host has, and why not.
func printEngines(w io.Writer, engines []livefork.Engine) {
	fmt.Fprintln(w, "live-fork engines:")
	for _, e := range engines {
		name := e.Name
		if e.Version != "" {
			name += " " + e.Version
		}
		if e.Available && e.Note != "" {
			fmt.Fprintf(w, "  %s: available, %s\n", name, display.Text(e.Note))
			continue
		}
		if e.Available {
			fmt.Fprintf(w, "  %s: available\n", name)
			continue
		}
		fmt.Fprintf(w, "  %s: unavailable: %s\n", name, display.Text(e.Why))
	}
}

func printRebuild(w io.Writer, rep *engine.RebuildResult) {
	for _, q := range rep.SetAside {
		fmt.Fprintf(w, "tine: moved the %s store %s aside to %s\n", rep.Was, q.From, q.Dir)
	}
	fmt.Fprintf(w, "tine: rebuilt the store (id %s) from the manifests in %s\n", rep.StoreID, rep.Home)
	for _, ws := range rep.Workspaces {
		fmt.Fprintf(w, "tine: rebuilt workspace %s (%s, %s): %d runs, %d versions, %d layers, %d groups\n",
			ws.Name, ws.Path, ws.Backend, ws.Runs, ws.Versions, ws.Layers, ws.Groups)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(w, "tine: not rebuilt: %s\n", display.Text(s))
	}
	fmt.Fprintf(w, "tine: note: %s\n", rep.NotRebuilt)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// size prints a byte count for people, in powers of 1024 ("1.5 MiB").
func size(n int64) string {
	return humanize.IBytes(uint64(max(n, 0)))
}
