package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/tinehq/tine/httpapi"
)

// A long command (merge, release, fork, discard) handles Ctrl-C: its work
// stops at the next safe point, where it is rolled back, or finishes when
// it was past its commit; the command then says which in one line on
// standard error and exits 130 (exitInterrupted). Through the daemon the
// interrupt is sent to the daemon's work (httpapi.Interruptible), and its
// answer says the same.

// interruptible returns ctx cancelled by SIGINT or SIGTERM, and the
// function that stops listening for them.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	return signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
}

// outcome says what an interrupted command's work became: before is what
// a rolled-back one left ("nothing was merged"), after what a finished one
// did ("the merge was applied: f1 is merged into source"), watch where to
// follow work the daemon goes on with.
type outcome struct {
	before, after, watch string
}

// interrupted returns err, or, when ctx was interrupted, the exit status
// 130 with the line saying what became of the work: done says whether it
// finished (err nil, or an error after its commit).
func interrupted(ctx context.Context, err error, done bool, o outcome) error {
	if ctx.Err() == nil {
		return err
	}
	switch {
	case errors.Is(err, httpapi.ErrNotInterrupted):
		return exitErr{code: exitInterrupted, err: interruptErr(fmt.Sprintf("interrupted, but the tine daemon goes on with it: %s", o.watch))}
	case done && err == nil:
		return exitErr{code: exitInterrupted, err: interruptErr("interrupted after " + o.after)}
	case errors.Is(err, context.Canceled) && !done:
		return exitErr{code: exitInterrupted, err: interruptErr("interrupted: " + o.before)}
	}
	return err
}

// interruptErr is the line an interrupted command ends with; it is a
// context.Canceled (its JSON error's code is "interrupted").
type interruptErr string

func (e interruptErr) Error() string { return string(e) }
func (e interruptErr) Unwrap() error { return context.Canceled }
