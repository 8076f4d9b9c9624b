//go:build linux

package testkit

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// Hidden makes a directory only root can enter, holding the file name with
// a marker no tree of the test holds otherwise, and returns the directory
// and the marker: the host path a hostile tree points a symlink at, and
// what must never come out of a read of that tree.
func Hidden(tb testing.TB, name string) (dir, marker string) {
	tb.Helper()
	dir = filepath.Join(tb.TempDir(), "hidden")
	marker = "HIDDEN-" + rand.Text()
	if err := os.Mkdir(dir, 0o700); err != nil {
		tb.Fatal(err)
	}
	body := strings.Repeat(marker+"\n", 50)
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return dir, marker
}

// Flip swaps, over and over until the test ends or stop is called, each
// path in paths (a directory or a file of a tree being read) with a symlink
// to the host path the map gives for it: one renameat2(RENAME_EXCHANGE)
// with a sibling symlink (the path plus ".flip"), so the path is at every
// instant either itself or the symlink. It is what a hostile fork does to
// its view while the host lists and reads it. stop returns how many swaps
// were made; it leaves every path as it was.
func Flip(tb testing.TB, paths map[string]string) (stop func() int) {
	tb.Helper()
	for p, target := range paths {
		if err := os.Symlink(target, p+".flip"); err != nil {
			tb.Fatal(err)
		}
	}
	var done atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	for p := range paths {
		wg.Go(func() {
			for n := 0; !done.Load() || n%2 == 1; n++ {
				err := unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, p+".flip", unix.RENAME_EXCHANGE)
				if err == unix.EBUSY {
					return
				}
				if err != nil {
					tb.Errorf("flip %s: %v", p, err)
					return
				}
				swaps.Add(1)
			}
		})
	}
	var once sync.Once
	stop = func() int {
		once.Do(func() { done.Store(true); wg.Wait() })
		return int(swaps.Load())
	}
	tb.Cleanup(func() { stop() })
	return stop
}
