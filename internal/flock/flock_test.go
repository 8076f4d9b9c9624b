package flock

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tinehq/tine"
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

// A lock file unlinked and made anew between a command's open and its lock
// (its holder's flock.Remove, then another command's Lock) is not taken: the
// command finds the file it locked is no longer the one at its path and
// takes the one there, which the other holds. Without the check both would
// hold "the" lock, each through its own file.
func TestTry_FileUnlinkedBetweenOpenAndLock(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	var other *os.File
	afterOpen = func() {
		afterOpen = nil
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		f, err := take(p) // another command makes the file anew and holds it
		if err != nil {
			t.Fatal(err)
		}
		other = f
	}
	defer func() { afterOpen = nil }()
	if release, ok := Try(p); ok {
		release()
		t.Fatal("Try took the unlinked file while another held the one at its path")
	}
	if other == nil {
		t.Fatal("the test's window between open and lock never ran")
	}
	other.Close()
	release, ok := Try(p)
	if !ok {
		t.Fatal("Try refused the lock once the other released it")
	}
	release()
}

// A command waiting on a held lock takes it once released.
func TestLock_WaitsForTheHolder(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	release, err := Lock(p)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan func())
	go func() {
		r, err := Lock(p)
		if err != nil {
			t.Error(err)
		}
		got <- r
	}()
	select {
	case r := <-got:
		r()
		t.Fatal("Lock took a lock another holds")
	case <-time.After(100 * time.Millisecond):
	}
	release()
	(<-got)()
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

func TestDir(t *testing.T) {
	dir := t.TempDir()
	unlock, err := Dir(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Dir(dir, false); !errors.Is(err, tine.ErrBusy) {
		t.Fatalf("second Dir = %v, want ErrBusy", err)
	}
	unlock()
	unlock, err = Dir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("Dir created %v", ents)
	}
	if _, err := Dir(filepath.Join(dir, "missing"), false); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Dir of a missing directory = %v", err)
	}
}
