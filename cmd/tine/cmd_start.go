package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/runtime"
)

func newStart(a *app) *cobra.Command {
	var asJSON, withDisplay bool
	c := &cobra.Command{
		Use:   "start RUN",
		Short: "Start a run's supervisor and its services",
		Long: `Starts RUN's supervisor — the first process of RUN's own mount, pid, uts
and ipc namespaces (and network namespace with [network] isolate), in its own
cgroup — and the services declared in the tine.toml of RUN's files, waiting
until each is ready. Starting a running run starts only the services that are
not running; starting a run whose supervisor died recovers it. Needs root.

With --display (or [display] enabled = true in tine.toml, or a service with
display = true), RUN gets a display of its own: an X server (TigerVNC's Xvnc)
with a VNC port and a window manager, in RUN's namespaces, DISPLAY=:0 in every
process of RUN, started before the services. RUN keeps it, and its forks get
one each. See tine screen and tine input.`,
		Example: `  tine start source
  tine start source --display
  tine start app/source-2 --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withOps(c.Context(), func(op ops, e *engine.Engine) error {
				res, err := op.Start(c.Context(), args[0], runtime.StartOptions{Services: true, Display: withDisplay})
				if res == nil {
					return err
				}
				if asJSON {
					if perr := a.printJSON(res); perr != nil {
						return perr
					}
					return err
				}
				a.printStart(res)
				return err
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&withDisplay, "display", false, "give the run a display of its own (X server, VNC, window manager)")
	return c
}

func (a *app) printStart(res *runtime.StartResult) {
	how := "started"
	switch {
	case res.Recovered:
		how = "recovered (its supervisor had died)"
	case !res.Launched:
		how = "already running"
	}
	addr := ""
	if res.Run.Addr != "" {
		addr = ", address " + res.Run.Addr
	}
	fmt.Fprintf(a.stdout, "%s %s (supervisor pid %d%s)\n", res.Run.Name, how, res.Pid, addr)
	for _, s := range res.Services {
		fmt.Fprintf(a.stdout, "  %-12s %-8s pid %-6d log %s\n", s.Name, s.State, s.Pid, display.Path(s.Log))
	}
}
