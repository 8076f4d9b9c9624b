package tick

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

func TestEvery_CallsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		Every(ctx, time.Millisecond, func() {
			if n.Add(1) == 3 {
				cancel()
			}
		})
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Every did not return after its context ended")
	}
	if got := n.Load(); got < 3 {
		t.Fatalf("fn called %d times, want at least 3", got)
	}
}

func TestEvery_NotCalledBeforeFirstPeriod(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	called := false
	Every(ctx, time.Hour, func() { called = true })
	if called {
		t.Fatal("fn called although the context ended before the first period")
	}
}
