package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

func newEvents(a *app) *cobra.Command {
	var follow, asJSON bool
	var after int64
	c := &cobra.Command{
		Use:   "events [WORKSPACE]",
		Short: "Print the event log, and follow it",
		Long: `Prints the event log of every workspace, or of WORKSPACE, oldest first: every
state change with its reason (forks, merges, approvals, starts, evidence).
--follow keeps printing new events as they are recorded, until interrupted;
--after N starts after sequence number N. --json prints one JSON object per
line (JSON Lines), for tools to follow.`,
		Example: `  tine events --follow
  tine events app --after 120 --json`,
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				f := tine.EventFilter{After: after}
				if len(args) == 1 {
					w, err := e.FindWorkspace(c.Context(), args[0])
					if err != nil {
						return err
					}
					f.Workspace = w.ID
				}
				return a.printEvents(c.Context(), e, f, follow, asJSON)
			})
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	c.Flags().Int64Var(&after, "after", 0, "only events after this sequence number")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON Lines")
	return c
}

// printEvents prints the events f selects, then, with follow, new ones as
// they come, polling the store.
func (a *app) printEvents(ctx context.Context, e *engine.Engine, f tine.EventFilter, follow, asJSON bool) error {
	names := map[string]string{}
	for {
		evs, err := e.Events(ctx, f)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			a.printEvent(ctx, e, ev, names, asJSON)
			f.After = ev.Seq
		}
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (a *app) printEvent(ctx context.Context, e *engine.Engine, ev *tine.Event, names map[string]string, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(ev)
		fmt.Fprintln(a.stdout, string(b))
		return
	}
	run := ev.Run
	if run != "" {
		if n, ok := names[run]; ok {
			run = n
		} else if r, err := e.FindRun(ctx, run); err == nil {
			names[ev.Run] = r.Workspace.Name + "/" + r.Run.Name
			run = names[ev.Run]
		}
	}
	fmt.Fprintf(a.stdout, "%d\t%s\t%s\t%s\t%s\n", ev.Seq, ev.Time.Local().Format(time.DateTime), dash(run), ev.Kind, string(ev.Detail))
}
