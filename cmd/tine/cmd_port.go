package main

import (
	"fmt"
	"net"
	"strconv"

	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/supervisor"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

func newPort(a *app) *cobra.Command {
	var hostPort int
	var hostIP string
	var asJSON bool
	c := &cobra.Command{
		Use:   "port RUN [PORT]",
		Short: "Publish a run's port on the host, or list published ports",
		Long: `Publishes PORT of RUN on the host: RUN's supervisor accepts connections on
--host-ip:--host-port (a free port when 0) and forwards each to PORT inside RUN,
so servers of forks that all listen on the same port are each reachable. A
run with its own address is also reachable directly at ADDRESS:PORT from the
host. Ports stay published while RUN runs. Without PORT, lists them.`,
		Example: `  tine port source-1 3000
  tine port source-2 3000 --host-port 8002
  tine port source-1`,
		Args: func(c *cobra.Command, args []string) error {
			if len(args) < 1 || len(args) > 2 {
				return usageErr(c, "port needs RUN and at most one PORT")
			}
			return nil
		},
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				return a.listPorts(c, args[0], asJSON)
			}
			port, err := strconv.Atoi(args[1])
			if err != nil {
				return fmt.Errorf("port %q is not a number: %w", args[1], tine.ErrInvalid)
			}
			host := net.JoinHostPort(hostIP, strconv.Itoa(hostPort))
			var pub httpapi.Published
			err = a.remoteOr(c.Context(), func(cl *httpapi.Client) error {
				p, err := cl.Publish(c.Context(), remoteRef(c.Context(), cl, args[0]), httpapi.PublishRequest{Port: port, Host: host})
				pub = *p
				return err
			}, func(e *engine.Engine) (err error) {
				pub.HostAddr, err = runtime.Of(e).Publish(c.Context(), args[0], port, host)
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return a.printJSON(portJSON{Run: args[0], Ports: []supervisor.Port{{Port: port, HostAddr: pub.HostAddr}}})
			}
			fmt.Fprintf(a.stdout, "%s -> %s:%d\n", pub.HostAddr, args[0], port)
			return nil
		},
	}
	c.Flags().IntVar(&hostPort, "host-port", 0, "host port to listen on (0: a free one)")
	c.Flags().StringVar(&hostIP, "host-ip", "127.0.0.1", "host address to listen on")
	c.Flags().BoolVar(&asJSON, "json", false, "print the published ports as JSON")
	return c
}

// portJSON is tine port --json: RUN's published ports, and its own
// address when it has a network of its own.
type portJSON struct {
	Run   string            `json:"run"`
	Ports []supervisor.Port `json:"ports"`
	Addr  string            `json:"addr,omitempty"`
}

func (a *app) listPorts(c *cobra.Command, ref string, asJSON bool) error {
	ps, err := a.ps(c.Context(), ref)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(portJSON{Run: ps.Run.Name, Ports: append([]supervisor.Port{}, ps.Ports...), Addr: ps.Addr})
	}
	for _, p := range ps.Ports {
		fmt.Fprintf(a.stdout, "%s -> %s:%d\n", p.HostAddr, ps.Run.Name, p.Port)
	}
	if ps.Addr != "" {
		fmt.Fprintf(a.stdout, "%s is reachable from the host at %s\n", ps.Run.Name, ps.Addr)
	}
	return nil
}
