package main

import (
	"context"
	"os"
	"time"

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
	if d, err := time.ParseDuration(os.Getenv(progressAfterEnv)); err == nil {
		a.line.From(d)
	}
	return progressline.With(ctx, a.line.Report)
}

// progressAfterEnv, a duration ("0s"), makes the progress line show from
// then instead of after a second: the end-to-end tests set it, so that a
// step faster than a second on a quick machine still shows its line.
const progressAfterEnv = "TINE_TEST_PROGRESS_AFTER"

// progressDone clears the progress line, if one was drawn.
func (a *app) progressDone() {
	if a.line != nil {
		a.line.Done()
	}
}
