package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tinehq/tine/httpapi"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
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
			f := tine.EventFilter{After: after}
			if a.remote() {
				return a.printEvents(c.Context(), remoteEventSource(a.daemon(), firstArg(args)), f, follow, asJSON)
			}
			return a.withEngine(c.Context(), func(e *engine.Engine) error {
				if len(args) == 1 {
					w, err := e.FindWorkspace(c.Context(), args[0])
					if err != nil {
						return err
					}
					f.Workspace = w.ID
				}
				return a.printEvents(c.Context(), engineEvents{e}, f, follow, asJSON)
			})
		},
	}
	c.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new events")
	c.Flags().Int64Var(&after, "after", 0, "only events after this sequence number")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON Lines")
	return c
}

// eventSource is where tine events reads: the store, or the system daemon.
type eventSource interface {
	events(ctx context.Context, f tine.EventFilter) ([]*tine.Event, error)
	runName(ctx context.Context, id string) (string, bool) // WORKSPACE/NAME
}

// engineEvents reads the store.
type engineEvents struct{ e *engine.Engine }

func (s engineEvents) events(ctx context.Context, f tine.EventFilter) ([]*tine.Event, error) {
	return s.e.Events(ctx, f)
}

func (s engineEvents) runName(ctx context.Context, id string) (string, bool) {
	r, err := s.e.FindRun(ctx, id)
	if err != nil {
		return "", false
	}
	return r.Workspace.Name + "/" + r.Run.Name, true
}

// daemonEvents reads the events the system daemon shows its caller, of
// workspace ws (every one of theirs when "").
type daemonEvents struct {
	cl    *httpapi.Client
	ws    string
	names map[string]string // run id → WORKSPACE/NAME, of the caller's runs
}

func remoteEventSource(cl *httpapi.Client, ws string) *daemonEvents {
	return &daemonEvents{cl: cl, ws: ws}
}

func (s *daemonEvents) events(ctx context.Context, f tine.EventFilter) ([]*tine.Event, error) {
	evs, err := s.cl.Events(ctx, s.ws, f.After)
	return compactDetails(evs), err
}

func (s *daemonEvents) runName(ctx context.Context, id string) (string, bool) {
	if _, ok := s.names[id]; !ok { // a run made since: list them again
		if rows, err := s.cl.Runs(ctx, "", true); err == nil {
			s.names = map[string]string{}
			for _, r := range rows {
				s.names[r.Run.ID] = r.WorkspaceName + "/" + r.Run.Name
			}
		}
	}
	n, ok := s.names[id]
	return n, ok
}

// printEvents prints the events f selects, then, with follow, new ones as
// they come, polling the store.
func (a *app) printEvents(ctx context.Context, src eventSource, f tine.EventFilter, follow, asJSON bool) error {
	names := map[string]string{}
	for {
		evs, err := src.events(ctx, f)
		if err != nil {
			return err
		}
		for _, ev := range evs {
			a.printEvent(ctx, src, ev, names, asJSON)
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

func (a *app) printEvent(ctx context.Context, src eventSource, ev *tine.Event, names map[string]string, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(ev)
		fmt.Fprintln(a.stdout, string(b))
		return
	}
	run := ev.Run
	if run != "" {
		if n, ok := names[run]; ok {
			run = n
		} else if n, ok := src.runName(ctx, run); ok {
			names[ev.Run] = n
			run = n
		}
	}
	fmt.Fprintf(a.stdout, "%d\t%s\t%s\t%s\t%s\n", ev.Seq, ev.Time.Local().Format(time.DateTime), dash(run), display.Text(string(ev.Kind)), eventDetail(ev))
}

// eventDetail is an event's detail, compact JSON, as a line of text: the
// names and messages in it are a run's (a fork's file names in a merge, an
// approach), and JSON leaves DEL, C1 controls and bidirectional overrides
// as they are, so they are escaped (display.Text) — the merge of a file
// invoice<U+202E>fdp.sh reads as that, not as invoicehs.pdf.
func eventDetail(ev *tine.Event) string { return display.Text(string(ev.Detail)) }

// compactDetails makes the events' details compact as stored: the
// daemon's answers are indented.
func compactDetails(evs []*tine.Event) []*tine.Event {
	for _, ev := range evs {
		var b bytes.Buffer
		if json.Compact(&b, ev.Detail) == nil {
			ev.Detail = b.Bytes()
		}
	}
	return evs
}
