package engine

import (
	"context"

	"github.com/tinehq/tine"
)

// liveForks carries the parent's processes into the forks by ptrace (or
// CRIU); until that lands here, every fork reruns its services.
func (e *Engine) liveForks(ctx context.Context, p Ref, forks []*tine.Run, mode string) []LiveReport {
	reports := make([]LiveReport, len(forks))
	for i, f := range forks {
		reports[i] = e.rerun(ctx, Ref{p.Workspace, f}, nil)
		reports[i].Mode = mode
	}
	return reports
}
