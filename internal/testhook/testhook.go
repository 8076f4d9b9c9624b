// Package testhook holds the points at which the end-to-end tests stop a
// tine command, to crash it at a known step. TINE_TEST_PAUSE_AT=point:N
// makes the N-th (from 0) passage of this process through point block for
// good; the test then kills or stops the process. Unset, a point costs a
// sync.Once check.
package testhook

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

var (
	once  sync.Once
	point string
	at    = -1
	mu    sync.Mutex
	seen  int
)

// Pause blocks for good at the passage through point that
// TINE_TEST_PAUSE_AT names; otherwise it returns at once.
func Pause(p string) {
	once.Do(func() {
		if o, n, ok := strings.Cut(os.Getenv("TINE_TEST_PAUSE_AT"), ":"); ok {
			if i, err := strconv.Atoi(n); err == nil {
				point, at = o, i
			}
		}
	})
	if at < 0 || p != point {
		return
	}
	mu.Lock()
	n := seen
	seen++
	mu.Unlock()
	for n == at {
		time.Sleep(time.Hour)
	}
}
