package flock

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTry_RefusedWhileHeld(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	release, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := Try(p); ok {
		t.Fatal("Try took a lock another holds")
	}
	release()
	r2, ok := Try(p)
	if !ok {
		t.Fatal("Try refused a released lock")
	}
	r2()
}

// A lock file unlinked by its holder (flock.Remove) is not taken by a
// command that was waiting on it: that one takes the file now at the path,
// so it and a command that came after the unlink never both hold the lock.
func TestLock_WaiterOfAnUnlinkedFileTakesTheNewOne(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	release, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	waiter := make(chan func())
	go func() {
		r, err := Lock(p) // opens the file held above, then waits
		if err != nil {
			t.Error(err)
		}
		waiter <- r
	}()
	time.Sleep(100 * time.Millisecond) // the waiter has opened the file
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	// The file made anew is held before the unlinked one is released, so the
	// waiter cannot legitimately take it first (as it could, and did in CI,
	// when the release came before this Try).
	late, ok := Try(p)
	if !ok {
		t.Fatal("Try refused a lock file made anew")
	}
	release()
	select {
	case r := <-waiter:
		r()
		late()
		t.Fatal("the waiter took the unlinked lock file while another held the one at its path")
	case <-time.After(200 * time.Millisecond):
	}
	late()
	(<-waiter)()
}

// Remove unlinks a lock file nobody holds, and keeps one somebody does.
func TestRemove_OnlyWhenFree(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	release, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	if Remove(p) {
		t.Fatal("Remove removed a held lock")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the held lock file is gone: %v", err)
	}
	release()
	if !Remove(p) {
		t.Fatal("Remove kept a free lock")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("the free lock file is still there: %v", err)
	}
	if Remove(p) {
		t.Error("Remove reported removing a lock file that was not there")
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Error("Remove of a missing lock file made one")
	}
}
