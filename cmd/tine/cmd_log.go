package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
)

func newLog(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "log RUN",
		Short: "Show a run's events",
		Long:  `Shows the events recorded for RUN, oldest first: every state change and its reason.`,
		Example: `  tine log source-1
  tine log source --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if a.remote() {
				evs, err := a.remoteEvents(c.Context(), args[0])
				if err != nil {
					return err
				}
				return a.printRunLog(evs, asJSON)
			}
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				r, err := e.FindRun(c.Context(), args[0])
				if err != nil {
					return err
				}
				evs, err := e.Events(c.Context(), tine.EventFilter{Run: r.Run.ID})
				if err != nil {
					return err
				}
				return a.printRunLog(evs, asJSON)
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the events as JSON")
	return c
}

func (a *app) printRunLog(evs []*tine.Event, asJSON bool) error {
	if asJSON {
		if evs == nil {
			evs = []*tine.Event{}
		}
		return a.printJSON(evs)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	for _, ev := range evs {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ev.Time.Local().Format(time.DateTime), display.Text(string(ev.Kind)), eventDetail(ev))
	}
	return tw.Flush()
}
