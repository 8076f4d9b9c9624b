// Package testhook holds the points at which the end-to-end tests stop a
// tine command, to crash or interrupt it at a known step.
// TINE_TEST_PAUSE_AT=point:N makes the N-th (from 0) passage of this
// process through point block for good; the test then kills or stops the
// process. TINE_TEST_INTERRUPT_AT=point:N makes that passage send this
// process SIGINT, as a person's Ctrl-C, and go on. Unset, a point costs a
// sync.Once check.
package testhook

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// hook is one environment variable's point and passage.
type hook struct {
	env   string
	once  sync.Once
	point string
	at    int
	mu    sync.Mutex
	seen  int
}

var (
	pause     = &hook{env: "TINE_TEST_PAUSE_AT"}
	interrupt = &hook{env: "TINE_TEST_INTERRUPT_AT"}
)

// hit reports whether this passage through p is the one h names.
func (h *hook) hit(p string) bool {
	h.once.Do(func() {
		h.at = -1
		v := os.Getenv(h.env)
		if i := strings.LastIndexByte(v, ':'); i > 0 {
			if n, err := strconv.Atoi(v[i+1:]); err == nil {
				h.point, h.at = v[:i], n
			}
		}
	})
	if h.at < 0 || p != h.point {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	n := h.seen
	h.seen++
	return n == h.at
}

// Pause blocks for good at the passage through point p that
// TINE_TEST_PAUSE_AT names; otherwise it returns at once.
func Pause(p string) {
	if pause.hit(p) {
		for {
			time.Sleep(time.Hour)
		}
	}
}

// Interrupt sends this process SIGINT at the passage through point p that
// TINE_TEST_INTERRUPT_AT names, and returns once the signal had time to
// reach its handler (as a Ctrl-C would have by the next step); otherwise
// it returns at once.
func Interrupt(p string) {
	if interrupt.hit(p) {
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		time.Sleep(100 * time.Millisecond)
	}
}
