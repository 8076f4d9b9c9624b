package main

import (
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/runtime"
)

func newPs(a *app) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "ps RUN",
		Short: "Show a run's supervisor, services and processes",
		Long: `Shows whether RUN's processes are running, stopped, or dead (recorded running
but its supervisor is gone: tine start recovers it), its services with their
state, its published ports, and every process of its cgroup with the service
it belongs to.`,
		Example: `  tine ps source
  tine ps source-1 --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			ps, err := a.ps(c.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(ps)
			}
			return a.printPS(ps)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func (a *app) printPS(ps *runtime.PS) error {
	fmt.Fprintf(a.stdout, "%s: %s", ps.Run.Name, ps.State)
	if ps.Supervisor > 0 {
		fmt.Fprintf(a.stdout, " (supervisor pid %d)", ps.Supervisor)
	}
	if ps.Addr != "" {
		fmt.Fprintf(a.stdout, ", address %s", ps.Addr)
	}
	if ps.Supervisor == 0 && len(ps.Processes) > 0 {
		fmt.Fprintf(a.stdout, ", %d command(s) in tine exec's sandbox", len(ps.Processes))
	}
	fmt.Fprintln(a.stdout)
	switch {
	case ps.Egress != nil:
		rules := make([]string, len(ps.Egress.Rules))
		for i, r := range ps.Egress.Rules {
			rules[i] = r.String()
		}
		fmt.Fprintf(a.stdout, "egress: only %s\n", display.Text(strings.Join(rules, ", ")))
	case ps.State == runtime.ProcRunning && ps.Addr == "":
		// Say so: a fork without a network of its own reaches whatever the
		// host does, which no egress policy limits.
		fmt.Fprintln(a.stdout, "network: the host's, unrestricted (a fork has its own, with an egress policy, unless [network] fork_network = \"host\"; isolate = true gives a source one)")
	case ps.State == runtime.ProcRunning:
		fmt.Fprintln(a.stdout, "egress: open (no policy)")
	}
	if len(ps.HostPorts) > 0 {
		fmt.Fprintf(a.stdout, "host ports: %s (the host's loopback, at the run's 127.0.0.1)\n", joinInts(ps.HostPorts))
	}
	printRefused(a.stdout, ps.Refused)
	if c := ps.Confinement; c != nil {
		fmt.Fprintf(a.stdout, "confined: %s\n", display.Text(confinementLine(c)))
	}
	if d := ps.DisplayIdle; d != nil {
		fmt.Fprintf(a.stdout, "display: stopped at %s, idle for %s (%s); tine screen, tine input or its dashboard tile starts it again\n",
			d.Stopped.Local().Format(time.TimeOnly), display.Text(d.After), display.Text(strings.Join(d.Services, ", ")))
	}
	if ps.State == runtime.ProcDead {
		fmt.Fprintf(a.stdout, "its supervisor died; tine start %s recovers it, tine stop %s cleans up\n", ps.Run.Name, ps.Run.Name)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if len(ps.Services) > 0 {
		fmt.Fprintln(tw, "SERVICE\tSTATE\tPID\tRESTARTS\tSINCE\tLOG")
		for _, s := range ps.Services {
			state := s.State
			if s.Exit != nil {
				state += fmt.Sprintf(" (%d)", *s.Exit)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\n", display.Text(s.Name), display.Text(state), s.Pid, s.Restarts, since(s.Started), display.Path(s.Log))
		}
		fmt.Fprintln(tw)
	}
	for _, a := range ps.Adopted {
		confined := "its origin's confinement alone"
		if a.Confinement != nil {
			confined = "the fork's " + confinementLine(a.Confinement) + ", on top of its origin's"
		}
		fmt.Fprintf(tw, "forked live: %s pid %d (from the parent's pid %d), confined by %s\n",
			display.Text(dash(a.Service)), a.Pid, a.Origin, display.Text(confined))
	}
	for _, c := range ps.Live {
		fmt.Fprintf(tw, "at fork: %s\n", liveChoiceLine(c))
	}
	for _, p := range ps.Ports {
		fmt.Fprintf(tw, "port %d published at %s\n", p.Port, p.HostAddr)
	}
	if len(ps.Processes) > 0 {
		fmt.Fprintln(tw, "PID\tNSPID\tSERVICE\tRSS\tSTATE\tCOMMAND")
		for _, p := range ps.Processes {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", p.Pid, p.NSPid, display.Text(dash(p.Service)), size(p.RSSBytes), p.State, display.Text(trunc(p.Command, 60)))
		}
	}
	return tw.Flush()
}

func since(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String()
}

func trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// printRefused lists what a run's egress policy refused, and when a
// command of the run ran in the host's network instead (runtime.NetKind).
func printRefused(w io.Writer, recs []egress.Record) {
	for _, r := range recs {
		if r.Kind == runtime.NetKind {
			fmt.Fprintf(w, "network: %s, at %s\n", display.Text(r.Note), r.Time.Local().Format(time.TimeOnly))
			continue
		}
		what := display.Text(r.Host)
		if r.Kind == "connect" {
			what = fmt.Sprintf("%s %s:%d", r.Proto, r.Addr, r.Port)
			if r.Host != "" {
				what += " (" + display.Text(r.Host) + ")"
			}
			if r.Note != "" {
				what += ": " + display.Text(r.Note)
			}
		} else {
			what = "name " + what
		}
		fmt.Fprintf(w, "refused: %s at %s\n", what, r.Time.Local().Format(time.TimeOnly))
	}
}

// confinementLine says in one line what a run is confined by.
func confinementLine(c *confine.Applied) string {
	var parts []string
	if len(c.Hidden) > 0 {
		parts = append(parts, fmt.Sprintf("%s hidden", strings.Join(c.Hidden, ", ")))
	}
	if c.OtherWorkspaces > 0 {
		parts = append(parts, fmt.Sprintf("%d other workspace(s) hidden", c.OtherWorkspaces))
	}
	if c.Landlock > 0 {
		parts = append(parts, fmt.Sprintf("landlock ABI %d, writes only to %d path(s)", c.Landlock, len(c.Writable)))
	}
	if c.Scoped {
		parts = append(parts, "signals and abstract sockets only within the run")
	}
	switch {
	case c.Seccomp && c.DenyMounts:
		parts = append(parts, fmt.Sprintf("seccomp (%d calls denied, mounts and setns among them)", c.Denied))
	case c.Seccomp:
		parts = append(parts, fmt.Sprintf("seccomp (%d calls denied)", c.Denied))
	}
	if c.Caps != 0 {
		parts = append(parts, fmt.Sprintf("%d capabilities kept", bits.OnesCount64(c.Caps)))
	}
	for _, u := range c.Unavailable {
		parts = append(parts, "no "+u)
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, "; ")
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}
