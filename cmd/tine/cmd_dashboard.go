package main

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/layout"
)

func newDashboard(a *app) *cobra.Command {
	var asJSON, revoke bool
	c := &cobra.Command{
		Use:   "dashboard",
		Short: "Print the URL of your dashboard in the daemon",
		Long: `Asks the daemon that serves you for your dashboard and prints its URL,
ready to open in a browser: http://127.0.0.1:PORT/ui/?token=TOKEN (the
first visit keeps the token in a cookie and drops it from the address).

A normal user asks the system daemon, which knows them by SO_PEERCRED and
hands them a token of their own (made on first use, kept by the daemon,
readable only by root): with it the dashboard shows and acts on only their
workspaces and those granted to one of their groups, as their tine
commands do; another user's run is not found. --revoke makes the token
open nothing; the next tine dashboard makes another. Root (and the
daemon's own user) get the daemon's bearer token, which sees everything.

tine serve --system listens for the dashboard on a free loopback port by
itself (--listen ADDR chooses it); another tine serve only with --listen.
Exit status 7 when no daemon serves you or it serves no dashboard.`,
		Example: `  tine dashboard
  xdg-open "$(tine dashboard)"
  tine dashboard --json
  tine dashboard --revoke`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return a.dashboard(c.Context(), revoke, asJSON)
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	c.Flags().BoolVar(&revoke, "revoke", false, "make your dashboard token open nothing (the next tine dashboard makes another)")
	return c
}

func (a *app) dashboard(ctx context.Context, revoke, asJSON bool) error {
	cl, err := a.dashboardDaemon()
	if err != nil {
		return err
	}
	var link *httpapi.DashboardLink
	if revoke {
		link, err = cl.RevokeDashboard(ctx)
	} else {
		link, err = cl.Dashboard(ctx)
	}
	if err != nil {
		return err
	}
	switch {
	case asJSON:
		return a.printJSON(link)
	case revoke:
		fmt.Fprintf(a.stdout, "revoked the dashboard token of uid %d; tine dashboard makes another\n", link.UID)
	default:
		fmt.Fprintln(a.stdout, link.URL)
	}
	return nil
}

// dashboardDaemon is the daemon that serves the caller: the system daemon
// for a normal user, else the state directory's.
func (a *app) dashboardDaemon() (*httpapi.Client, error) {
	if a.remote() {
		if a.inRun {
			return nil, fmt.Errorf("a run has no dashboard; a person opens theirs with tine dashboard on the host: %w", tine.ErrUnsupported)
		}
		return a.daemon(), nil
	}
	home, err := filepath.Abs(a.home)
	if err != nil {
		return nil, err
	}
	sock := layout.New(home).Socket()
	if !daemonUp(sock) {
		return nil, fmt.Errorf("no tine daemon serves %s and no system daemon serves you: start tine serve --listen 127.0.0.1:PORT, or sudo tine setup daemon: %w",
			home, tine.ErrUnsupported)
	}
	return httpapi.NewClient(sock, nil), nil
}
