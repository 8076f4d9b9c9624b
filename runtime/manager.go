// Package runtime runs the processes of tine's runs: each live run's
// supervisor (the first process of its namespaces) in its own cgroup,
// optionally on the tine bridge with its own address and egress policy,
// confined by Landlock and seccomp; tine exec sessions; services and their
// logs; published ports; live forks by ptrace; and the garbage collection
// of what dead supervisors leave.
//
// The engine owns versions and files and reaches the runtime only through
// engine.Runtime (freeze, quiesce, start forks, stop); everything else here
// is called by the commands, the daemon and fork-run directly, through a
// Manager made by New and given to the engine with engine.WithRuntime.
package runtime

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/netns"
)

// Options configure a Manager. The zero value is what tine runs with.
type Options struct {
	// Net is the tine bridge every isolated run is attached to (default
	// netns.Config{NAT: true}).
	Net *netns.Config
	// StopGrace is how long a stopped run's processes get between SIGTERM
	// and SIGKILL (default 5 s).
	StopGrace time.Duration
	// AddrDir holds the host-wide claims of runs' addresses (default
	// /run/tine/addrs).
	AddrDir string
	// Warnings receives what the runtime could not do but went on without
	// (default os.Stderr).
	Warnings io.Writer
}

// DefaultAddrDir is where runs' address claims are kept by default. Every
// state directory on a host shares the tine bridge, so addresses are
// claimed host-wide: a file per address names the supervisor directory of
// the run using it. A claim is live while that supervisor is, or for
// claimFresh after it was made (the supervisor is being launched). The
// directory is on tmpfs, like the namespaces it describes.
const DefaultAddrDir = "/run/tine/addrs"

// Manager runs the processes of one engine's runs.
type Manager struct {
	eng       *engine.Engine
	lay       layout.Layout
	net       netns.Config
	stopGrace time.Duration
	addrDir   string
	warnings  io.Writer

	bridgeOnce sync.Once // the tine bridge is ensured once per manager
	bridgeErr  error

	vnc vncClients // the VNC clients of runs' displays bridged by this process
}

var _ engine.Runtime = (*Manager)(nil)

// New returns the runtime of engine e's runs.
func New(e *engine.Engine, o Options) *Manager {
	m := &Manager{eng: e, lay: e.Layout(), net: netns.Config{NAT: true}, stopGrace: 5 * time.Second,
		addrDir: DefaultAddrDir, warnings: os.Stderr}
	if o.Net != nil {
		m.net = *o.Net
	}
	if o.StopGrace > 0 {
		m.stopGrace = o.StopGrace
	}
	if o.AddrDir != "" {
		m.addrDir = o.AddrDir
	}
	if o.Warnings != nil {
		m.warnings = o.Warnings
	}
	return m
}

// With returns an engine.Open option that gives the engine a Manager made
// with o.
func With(o Options) engine.Option {
	return engine.WithRuntime(func(e *engine.Engine) engine.Runtime { return New(e, o) })
}

// Of returns the Manager of an engine opened With one, or a new Manager
// with the default options for an engine opened without.
func Of(e *engine.Engine) *Manager {
	if m, ok := e.Runtime().(*Manager); ok {
		return m
	}
	return New(e, Options{})
}

// Engine returns the engine whose runs m runs.
func (m *Manager) Engine() *engine.Engine { return m.eng }

func (m *Manager) warn(format string, args ...any) {
	fmt.Fprintf(m.warnings, "tine: warning: "+format+"\n", args...)
}

// say tells the user of something the runtime put right.
func (m *Manager) say(format string, args ...any) {
	fmt.Fprintf(m.warnings, "tine: "+format+"\n", args...)
}

func (m *Manager) supDir(r engine.Ref) string { return m.lay.Run(r.Workspace.ID, r.Run.ID).Sup() }

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
