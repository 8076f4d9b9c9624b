package mcp

import (
	"errors"
	"fmt"
	"net/url"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/buildinfo"
)

// MaxCopies bounds the forks one fork_run call makes: fewer than the
// engine allows, as an agent's parallel branches, not a batch job.
const MaxCopies = 16

// Options configure a server.
type Options struct {
	API     API    // the tine daemon
	Self    string // the run this server runs in (its id); "" on the host
	Version string // reported to clients; default the module's build version
	// Env is the caller's environment (tine mcp's own: the process the
	// client started), which a fork-run's agents, tests and checks start
	// from, as the CLI sends its own. Nil: the daemon's account of the
	// workspace's owner.
	Env []string
}

// instructions tell the client what the tools are for.
const instructions = `tine forks this workspace (a run) into copy-on-write forks, in a group, that each see their own copy of the files; the tools are tine's commands of the same names.
Fork to try approaches side by side (fork, or fork_run to run a command or an agent in every fork), look at them (compare, diff, fork_run_report, summary, cost), then keep one (choose, or merge) and drop the rest (discard).
fork_run with a prompt starts a fork-run in the daemon: an agent per fork, tests, a judge, then its merge mode; it answers at once, follow it with fork_run_report and stop it with cancel_fork_run.
From inside a run, merging, promoting, choosing and discarding are only requested: a person approves each with "tine approve ID".`

// NewServer returns an MCP server whose tools call the daemon through
// o.API. Serve it with Run on a transport (tine mcp: stdio).
func NewServer(o Options) *sdk.Server {
	if o.Version == "" {
		o.Version = Version()
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "tine", Title: "tine", Version: o.Version},
		&sdk.ServerOptions{Instructions: instructions})
	t := &tools{api: httpapi.Over(o.API), self: o.Self, env: o.Env, commands: map[string]*commandRun{}}
	t.addForkTools(s)
	t.addReadTools(s)
	t.addResolveTools(s)
	t.addEffectTools(s)
	t.addDesktopTools(s)
	t.addFleetTools(s)
	return s
}

// tools are the handlers, sharing the daemon and the caller's run.
type tools struct {
	api  *httpapi.Client // over Options.API
	self string
	env  []string // Options.Env

	mu       sync.Mutex
	commands map[string]*commandRun // fork_run commands running, by group id
}

// unreachable adds a hint to an error of a daemon that could not be reached.
func unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%w (is tine serve running?)", err)
	}
	return err
}

// runOrSelf is run, or the caller's own run when it runs inside one.
func (t *tools) runOrSelf(run string) (string, error) {
	switch {
	case run != "":
		return run, nil
	case t.self != "":
		return t.self, nil
	}
	return "", inputErr("run is required outside a run (an id, WORKSPACE/NAME or a name)")
}

// Version is the version the server reports (serverInfo.version) when
// Options.Version is empty.
func Version() string { return buildinfo.Read().Short() }
