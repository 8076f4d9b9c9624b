package engine

import (
	"context"
	"os"
	"sync"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/supervisor"
)

// Live-state modes of a fork: what becomes of the parent's processes.
const (
	LiveNone   = "none"   // forks start stopped
	LiveRerun  = "rerun"  // each fork starts its services fresh
	LivePtrace = "ptrace" // each eligible process is forked live; the rest rerun
	LiveCRIU   = "criu"   // whole trees checkpointed and restored, where criu works
)

// LiveReport says how one fork's processes were started.
type LiveReport struct {
	Run       string            `json:"run"`
	Mode      string            `json:"mode"`
	Started   bool              `json:"started"`
	Addr      string            `json:"addr,omitempty"`
	Forked    []LiveProcess     `json:"forked,omitempty"`    // processes carried over live
	Restarted []string          `json:"restarted,omitempty"` // services started fresh
	Refused   map[string]string `json:"refused,omitempty"`   // process → why it was not forked live
	// Services are the fork's supervised services as they were when the
	// fork returned: ready, or still starting (ForkOptions.NoWait), or failed.
	Services []supervisor.ServiceStatus `json:"services,omitempty"`
	Error    string                     `json:"error,omitempty"`
}

// LiveProcess is a process carried into a fork by a live fork.
type LiveProcess struct {
	Service string  `json:"service,omitempty"`
	Pid     int     `json:"pid"`   // the parent's process
	Child   int     `json:"child"` // its copy in the fork
	PauseMS float64 `json:"pause_ms"`
}

// liveMode resolves the requested mode for forks of p: by default forks of
// a running run rerun its services and forks of a stopped run stay
// stopped.
func (e *Engine) liveMode(p Ref, mode string) (string, error) {
	switch mode {
	case "":
		if e.supervised(p) > 0 {
			return LiveRerun, nil
		}
		return LiveNone, nil
	case LiveNone:
		return mode, nil
	case LiveRerun, LivePtrace, LiveCRIU:
		if os.Geteuid() != 0 {
			return "", tine.Optionf("%s needs root: %w", tine.Opt("live", mode), tine.ErrPrivilege)
		}
		return mode, nil
	}
	return "", tine.Optionf("%s: use none, rerun, ptrace or criu: %w", tine.Opt("live", mode), tine.ErrInvalid)
}

// startForks starts each fork's processes as mode says, waiting for their
// services' ready checks unless noWait. A fork that fails to start keeps
// its files; the failure is in its report.
func (e *Engine) startForks(ctx context.Context, p Ref, forks []*tine.Run, mode string, noWait bool) []LiveReport {
	if mode == LiveNone {
		return nil
	}
	reports := make([]LiveReport, len(forks))
	if mode == LivePtrace || mode == LiveCRIU {
		return e.liveForks(ctx, p, forks, mode, noWait)
	}
	var wg sync.WaitGroup
	for i, f := range forks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reports[i] = e.rerun(ctx, Ref{p.Workspace, f}, nil, noWait)
		}()
	}
	wg.Wait()
	return reports
}

// rerun starts fork r with its services fresh, but those in skip.
func (e *Engine) rerun(ctx context.Context, r Ref, skip map[string]bool, noWait bool) LiveReport {
	rep := LiveReport{Run: r.Run.Name, Mode: LiveRerun}
	res, err := e.start(ctx, r, StartOptions{Services: true, Skip: skip, NoWait: noWait})
	if res != nil {
		rep.Started, rep.Services = true, res.Services
		for _, s := range res.Services {
			rep.Restarted = append(rep.Restarted, s.Name)
		}
	}
	rep.Addr = r.Run.Addr
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}
