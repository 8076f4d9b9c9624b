// Package progress carries, in a context, where a long step (a merge's
// staging and apply, a copy of a tree) reports how far it is, and draws that as one line
// that updates on a terminal.
package progress

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"
)

// Func receives that phase has done of total items (total 0: not known
// beforehand); it may be called from several goroutines at once.
type Func func(phase string, done, total int)

type key struct{}

// With returns ctx whose long steps report to f.
func With(ctx context.Context, f Func) context.Context {
	return context.WithValue(ctx, key{}, f)
}

// Report tells ctx's Func, if any, that phase has done of total items.
func Report(ctx context.Context, phase string, done, total int) {
	if f, ok := ctx.Value(key{}).(Func); ok {
		f(phase, done, total)
	}
}

// On reports whether ctx carries a Func: a step may then do its work in
// a form that can count it.
func On(ctx context.Context) bool {
	_, ok := ctx.Value(key{}).(Func)
	return ok
}

// Line draws reports as one line on a terminal w, rewritten in place
// ("\r"): nothing before one second has passed (a quick command shows
// none), then at most ten times a second.
type Line struct {
	w     io.Writer
	label string
	after time.Duration // nothing drawn before this has passed
	start time.Time
	mu    sync.Mutex
	last  time.Time
	drawn bool
}

// NewLine returns a Line on w, a terminal, whose lines begin with label.
func NewLine(w io.Writer, label string) *Line {
	return &Line{w: w, label: label, after: time.Second, start: time.Now()}
}

// From makes l draw from after has passed instead of one second (the
// end-to-end tests draw at once, whatever the machine's speed).
func (l *Line) From(after time.Duration) *Line {
	l.after = after
	return l
}

// Report is a Func.
func (l *Line) Report(phase string, done, total int) {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if now.Sub(l.start) < l.after || now.Sub(l.last) < 100*time.Millisecond && done < total {
		return
	}
	l.last, l.drawn = now, true
	if total <= 0 {
		fmt.Fprintf(l.w, "\r\033[K%s: %s %d", l.label, phase, done)
		return
	}
	fmt.Fprintf(l.w, "\r\033[K%s: %s %d/%d (%d%%)", l.label, phase, done, total, percent(done, total))
}

// Done clears the line, if one was drawn.
func (l *Line) Done() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.drawn {
		fmt.Fprint(l.w, "\r\033[K")
		l.drawn = false
	}
}

// percent is done of total in percent.
func percent(done, total int) int {
	if total <= 0 {
		return 100
	}
	return done * 100 / total
}
