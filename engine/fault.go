package engine

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/tinehq/tine/internal/testhook"
)

// Fault injection. TINE_TEST_KILL_AT=op:N makes this process SIGKILL
// itself at the N-th (from 0) fault point of operation op (init, release,
// fork, checkpoint, rollback, promote, discard): the fault-injection tests'
// way to crash tine at every step, through the binary. faultHook, set by
// tests in this package, is called at every fault point instead; its error
// fails the step. With neither set a fault point costs a sync.Once check.
var (
	faultHook func(op string) error

	faultOnce  sync.Once
	faultOp    string
	faultAt    = -1
	faultMu    sync.Mutex
	faultCount = map[string]int{}
)

// faultPoint marks a step of op at which a test may crash or fail it.
func faultPoint(op string) error {
	testhook.Interrupt(op)
	if faultHook != nil {
		return faultHook(op)
	}
	faultOnce.Do(func() {
		if o, n, ok := strings.Cut(os.Getenv("TINE_TEST_KILL_AT"), ":"); ok {
			if i, err := strconv.Atoi(n); err == nil {
				faultOp, faultAt = o, i
			}
		}
	})
	if faultAt < 0 || op != faultOp {
		return nil
	}
	faultMu.Lock()
	n := faultCount[op]
	faultCount[op]++
	faultMu.Unlock()
	if n == faultAt {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	return nil
}

type faultOpKey struct{}

// withFaultOp names the operation whose fault points the steps below ctx
// are (a seal is a step of a fork, a checkpoint, a rollback or a promote).
func withFaultOp(ctx context.Context, op string) context.Context {
	return context.WithValue(ctx, faultOpKey{}, op)
}

// faultPointCtx is faultPoint for the operation ctx names (withFaultOp);
// without one it does nothing.
func faultPointCtx(ctx context.Context) error {
	if op, _ := ctx.Value(faultOpKey{}).(string); op != "" {
		return faultPoint(op)
	}
	return nil
}
