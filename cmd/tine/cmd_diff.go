package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/layer"
)

var kindLetter = map[layer.Kind]string{layer.Added: "A", layer.Modified: "M", layer.Deleted: "D", layer.TypeChanged: "T"}

func newDiff(a *app) *cobra.Command {
	var asJSON, stat, patch bool
	c := &cobra.Command{
		Use:   "diff RUN",
		Short: "List what RUN changed since its fork point",
		Long: `Lists the paths RUN added (A), modified (M), deleted (D) or changed the type
of (T) since its fork point (for the source: since tine init), with byte
counts. --stat prints the totals; --patch a unified diff of text files.`,
		Example: `  tine diff source-1
  tine diff source-1 --patch
  tine diff source-1 --stat --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if a.remote() {
				changes, err := a.remoteChanges(c.Context(), args[0], patch, a.stdout)
				if err != nil || patch {
					return err
				}
				return a.printDiff(changes, stat, asJSON)
			}
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				r, err := e.FindRun(c.Context(), args[0])
				if err != nil {
					return err
				}
				if patch {
					return a.printPatch(c.Context(), e, r)
				}
				changes, err := e.Changes(c.Context(), r)
				if err != nil {
					return err
				}
				return a.printDiff(changes, stat, asJSON)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the changes as JSON")
	c.Flags().BoolVar(&stat, "stat", false, "print totals")
	c.Flags().BoolVar(&patch, "patch", false, "print a unified diff of text files")
	c.MarkFlagsMutuallyExclusive("patch", "json")
	c.MarkFlagsMutuallyExclusive("patch", "stat")
	return c
}

// printPatch writes RUN's patch; on a terminal, control characters in the
// files' lines (which the fork controls) are shown escaped, not sent.
func (a *app) printPatch(ctx context.Context, e *engine.Engine, r engine.Ref) error {
	if !isTerminal(a.stdout) {
		return e.Patch(ctx, r, a.stdout)
	}
	var b strings.Builder
	err := e.Patch(ctx, r, &b)
	if _, werr := io.WriteString(a.stdout, terminalText(a.stdout, b.String())); err == nil {
		err = werr
	}
	return err
}

func (a *app) printDiff(changes []layer.Change, stat, asJSON bool) error {
	if changes == nil {
		changes = []layer.Change{}
	}
	s := layer.Summarize(changes)
	switch {
	case asJSON && stat:
		return a.printJSON(s)
	case asJSON:
		return a.printJSON(changes)
	}
	if !stat {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		for _, c := range changes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", kindLetter[c.Kind], display.Path(c.Path), c.Type, bytesNote(c))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if stat || len(changes) == 0 {
		fmt.Fprintf(a.stdout, "%d added, %d modified, %d deleted, %d type changed; %d bytes before, %d after\n",
			s.Added, s.Modified, s.Deleted, s.TypeChanged, s.BytesBefore, s.BytesAfter)
	}
	return nil
}

func bytesNote(c layer.Change) string {
	switch c.Kind {
	case layer.Added:
		return fmt.Sprintf("%d bytes", c.Size)
	case layer.Deleted:
		return fmt.Sprintf("%d bytes", c.OldSize)
	}
	return fmt.Sprintf("%d -> %d bytes", c.OldSize, c.Size)
}
