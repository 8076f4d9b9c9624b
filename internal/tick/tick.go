// Package tick runs a function on a period until a context ends: the
// daemon's watchers (sweeps, heartbeats, copies, logins, idle displays).
package tick

import (
	"context"
	"time"
)

// Every calls fn every period, the first time one period from now, until
// ctx ends.
func Every(ctx context.Context, every time.Duration, fn func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fn()
		}
	}
}
