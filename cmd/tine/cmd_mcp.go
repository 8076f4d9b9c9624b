package main

import (
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/mcp"
)

func newMCP(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp",
		Short: "Serve tine's tools to an agent over MCP (stdio)",
		Long: `Speaks the Model Context Protocol on stdin and stdout. The tools are tine's
commands of the same names: fork, fork_run (with command: run it in every
fork; with prompt: a fork-run the daemon runs, tests and judges),
fork_run_report, cancel_fork_run, list_runs (ls), compare, diff, cost,
summary, ps, merge (and promote), choose, discard, rollback and effect;
submit_tasks and list_tasks (tine submit, tine tasks) where the daemon's
store is PostgreSQL's.
Each tool is a request to tine serve, which must be running; fork-runs and
fork_run's commands run in tine mcp's own environment, as tine's commands
send theirs.

Inside a run (TINE_SOCKET and TINE_CAPABILITY set) every request is signed
with the run's capability: the run may act on itself and its direct forks,
and merging, promoting, choosing and discarding wait for a person's
tine approve. On the host it talks to $TINE_HOME/ctl/tine.sock unsigned;
a normal user the system daemon serves (no TINE_HOME) talks to it, as
their other commands do.

A line on stdin that is not a JSON-RPC message gets a JSON-RPC error reply
(-32700 or -32600) and the server goes on. Once started it works from /,
so that it pins no run's mount (a rollback of the workspace it was
started in works while it runs). The server reports tine's version
(serverInfo.version): the module version, or devel+COMMIT for a build from a
checkout.`,
		Example: `  claude mcp add tine -- tine mcp
  tine exec source -- tine mcp`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			o, err := a.mcpOptions()
			if err != nil {
				return err
			}
			// A server that lives as long as its client must not pin a
			// run's mount (a rollback of the source would fail with
			// EBUSY): every path is resolved, then it leaves its directory.
			if err := os.Chdir("/"); err != nil {
				return err
			}
			return mcp.NewServer(o).Run(c.Context(), &mcp.LineTransport{In: c.InOrStdin(), Out: a.stdout})
		},
	}
}

// mcpOptions chooses the daemon and the caller's run: inside a run, its
// socket and capability; on the host, the state directory's socket. The
// paths are made absolute.
func (a *app) mcpOptions() (mcp.Options, error) {
	capPath, sock := os.Getenv("TINE_CAPABILITY"), os.Getenv("TINE_SOCKET")
	if capPath != "" && sock != "" {
		var err error
		if capPath, err = filepath.Abs(capPath); err != nil {
			return mcp.Options{}, err
		}
		if sock, err = filepath.Abs(sock); err != nil {
			return mcp.Options{}, err
		}
		c, err := capability.ReadFile(capPath)
		if err != nil {
			return mcp.Options{}, err
		}
		return mcp.Options{API: mcp.NewClient(sock, capPath), Self: c.Run}, nil // a run's agents get the run's environment
	}
	// A normal user's daemon is the system daemon, as for their other
	// commands; it runs their forks' processes as them.
	if a.remote() && !a.inRun {
		return mcp.Options{API: mcp.NewClient(daemonSocket(), ""), Env: os.Environ()}, nil
	}
	// engine.Engine.SocketPath, without opening the store the daemon holds.
	home, err := filepath.Abs(a.home)
	if err != nil {
		return mcp.Options{}, err
	}
	sock = layout.New(home).Socket()
	return mcp.Options{API: mcp.NewClient(sock, ""), Env: os.Environ()}, nil // the caller's, as the CLI sends its own
}
