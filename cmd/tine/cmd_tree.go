package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/tinehq/tine/httpapi"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

func newTree(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "tree [WORKSPACE]",
		Short: "Show lineage and versions as a tree",
		Long: `Shows each workspace's runs with the versions they recorded (init, fork
points, checkpoints, saved states) and, under each fork point, the forks made
from it. A run's current base is marked with *. Discarded runs stay in the
tree: lineage is kept forever.`,
		Example: `  tine tree
  tine tree app --json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			var states []engine.WorkspaceRecords
			err := a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				if len(args) == 0 {
					var err error
					states, err = cl.Workspaces(c.Context())
					return err
				}
				st, err := cl.Workspace(c.Context(), args[0])
				states = []engine.WorkspaceRecords{*st}
				return err
			}, func(e *engine.Engine) (err error) {
				states, err = e.Records(c.Context(), firstArg(args))
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(states)
			}
			for _, s := range states {
				printTree(a.stdout, s)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the workspaces' records as JSON")
	return c
}

// printTree draws one workspace: runs, the versions each recorded, and the
// forks made from each fork point.
func printTree(w io.Writer, s engine.WorkspaceRecords) {
	t := &treePrinter{w: w, s: s, versions: map[string][]*tine.Version{}, forks: map[string][]*tine.Run{}}
	for _, v := range s.Versions {
		if v.Kind != tine.VersionSealed { // the daemon's stepping stones (--json lists them)
			t.versions[v.Run] = append(t.versions[v.Run], v)
		}
	}
	for _, r := range s.Runs {
		if r.Role != tine.RoleSource {
			t.forks[r.Origin] = append(t.forks[r.Origin], r)
		}
	}
	fmt.Fprintf(w, "%s (%s) %s [%s]\n", s.Workspace.Name, s.Workspace.ID, s.Workspace.Path, s.Workspace.Backend)
	for _, r := range s.Runs {
		if r.Role == tine.RoleSource {
			t.run(r, "")
		}
	}
}

type treePrinter struct {
	w        io.Writer
	s        engine.WorkspaceRecords
	versions map[string][]*tine.Version // by run
	forks    map[string][]*tine.Run     // by origin version
}

func (t *treePrinter) run(r *tine.Run, indent string) {
	fmt.Fprintf(t.w, "%s%s (%s) %s %s%s%s\n", indent, r.Name, r.ID, r.Role, r.State, resolved(r), quoted(r.Approach))
	vs := t.versions[r.ID]
	for i, v := range vs {
		branch, next := "├── ", "│   "
		if i == len(vs)-1 {
			branch, next = "└── ", "    "
		}
		mark := ""
		if v.ID == r.Base && r.Active() {
			mark = " *"
		}
		fmt.Fprintf(t.w, "%s%s%s %s%s %d layer(s)%s\n", indent, branch, v.ID, v.Kind, quoted(v.Label), len(v.Layers), mark)
		for _, f := range t.forks[v.ID] {
			t.run(f, indent+next+"  ")
		}
	}
	if r.Active() && r.Base != r.Origin && !hasVersion(vs, r.Base) {
		fmt.Fprintf(t.w, "%s    base %s *\n", indent, r.Base)
	}
}

func hasVersion(vs []*tine.Version, id string) bool {
	for _, v := range vs {
		if v.ID == id {
			return true
		}
	}
	return false
}

func quoted(s string) string {
	if s == "" {
		return ""
	}
	return fmt.Sprintf(" %q", strings.TrimSpace(s))
}

// resolved notes how a run's work came back, if it did.
func resolved(r *tine.Run) string {
	if r.Resolution == tine.ResolutionNone {
		return ""
	}
	return ", " + string(r.Resolution)
}
