package runtime

import (
	"context"
	"os"
	"sync"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// liveMode resolves the requested mode for forks of p: by default forks of
// a running run rerun its services and forks of a stopped run stay
// stopped.
func (m *Manager) liveMode(p engine.Ref, mode string) (string, error) {
	switch mode {
	case "":
		if m.supervised(p) > 0 {
			return engine.LiveRerun, nil
		}
		return engine.LiveNone, nil
	case engine.LiveNone:
		return mode, nil
	case engine.LiveRerun, engine.LivePtrace, engine.LiveCRIU, engine.LiveAuto:
		if os.Geteuid() != 0 {
			return "", tine.Optionf("%s needs root: %w", tine.Opt("live", mode), tine.ErrPrivilege)
		}
		return mode, nil
	}
	return "", tine.Optionf("%s: use none, rerun, ptrace, criu or auto: %w", tine.Opt("live", mode), tine.ErrInvalid)
}

// startForks starts each fork's processes as mode says, waiting for their
// services' ready checks unless noWait. A fork that fails to start keeps
// its files; the failure is in its report.
func (m *Manager) startForks(ctx context.Context, p engine.Ref, forks []*tine.Run, mode string, noWait bool) []engine.LiveReport {
	if mode == engine.LiveNone {
		return nil
	}
	var reports []engine.LiveReport
	if mode == engine.LivePtrace || mode == engine.LiveCRIU || mode == engine.LiveAuto {
		reports = m.liveForks(ctx, p, forks, mode, noWait)
	} else {
		reports = m.rerunAll(ctx, p, forks, nil, noWait)
	}
	noteDisplays(reports)
	return reports
}

// rerunAll starts every fork with its services fresh, at once; refused,
// when not nil, says in each report why nothing was forked live.
func (m *Manager) rerunAll(ctx context.Context, p engine.Ref, forks []*tine.Run, refused map[string]string, noWait bool) []engine.LiveReport {
	reports := make([]engine.LiveReport, len(forks))
	var wg sync.WaitGroup
	for i, f := range forks {
		wg.Go(func() {
			reports[i] = m.rerun(ctx, engine.Ref{Workspace: p.Workspace, Run: f}, noWait)
			reports[i].Refused = refused
		})
	}
	wg.Wait()
	return reports
}

// rerun starts fork r with its services fresh.
func (m *Manager) rerun(ctx context.Context, r engine.Ref, noWait bool) engine.LiveReport {
	rep := engine.LiveReport{Run: r.Run.Name, Mode: engine.LiveRerun}
	res, err := m.start(ctx, r, StartOptions{Services: true, NoWait: noWait})
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
