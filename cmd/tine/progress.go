package main

import (
	"context"

	progressline "github.com/tinehq/tine/internal/progress"
)

// progress returns ctx whose long steps draw one updating line, labelled
// label, on standard error when it is a terminal and the output is not
// JSON; otherwise ctx itself. progressDone clears the line.
func (a *app) progress(ctx context.Context, label string, asJSON bool) context.Context {
	if asJSON || !isTerminal(a.stderr) {
		return ctx
	}
	a.line = progressline.NewLine(a.stderr, label)
	return progressline.With(ctx, a.line.Report)
}

// progressDone clears the progress line, if one was drawn.
func (a *app) progressDone() {
	if a.line != nil {
		a.line.Done()
	}
}
