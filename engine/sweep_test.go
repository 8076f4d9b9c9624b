package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/sqlite"
)

// userFiles counts the regular files named f*.txt anywhere below dir (the
// user's files, wherever the backend keeps them), not following mounts'
// duplicates: each distinct name counts once.
func userFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasPrefix(d.Name(), "f") && strings.HasSuffix(d.Name(), ".txt") {
			seen[d.Name()] = true
		}
		return nil
	})
	return seen
}

// twentyFiles is a workspace of 20 user files with one fork, closed as
// between two commands.
func twentyFiles(t *testing.T, backend string) *fixture {
	t.Helper()
	f := newFixture(t, backend)
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.txt", i)] = fmt.Sprintf("user file %d\n", i)
	}
	writeFiles(t, f.path, files)
	fork := f.fork(1).Forks[0]
	writeFiles(t, f.view(fork), map[string]string{"fork-only/f99.txt": "the fork's work\n"})
	f.e.Close()
	f.e = nil
	t.Cleanup(func() { // the store may be gone: unmount by hand
		mnt.UnmountAll(f.path)
		for mp := mountBelow(f.home); mp != ""; mp = mountBelow(f.home) {
			if err := mnt.UnmountAll(mp); err != nil {
				t.Errorf("cleanup: %v", err)
				return
			}
		}
	})
	return f
}

// TestSweep_LostStoreRefuses is the regression for the bug where a missing
// or truncated tine.db made the next command create a fresh store and the
// sweeper delete every workspace's layers and runs.
func TestSweep_LostStoreRefuses(t *testing.T) {
	damage := map[string]func(t *testing.T, home string){
		"Missing": func(t *testing.T, home string) {
			for _, s := range []string{"", "-wal", "-shm"} {
				os.Remove(filepath.Join(home, "tine.db"+s))
			}
		},
		"Truncated": func(t *testing.T, home string) {
			if err := os.Truncate(filepath.Join(home, "tine.db"), 0); err != nil {
				t.Fatal(err)
			}
		},
		"Garbage": func(t *testing.T, home string) {
			junk := []byte(strings.Repeat("not a database ", 1000))
			if err := os.WriteFile(filepath.Join(home, "tine.db"), junk, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		"Foreign": func(t *testing.T, home string) {
			path := filepath.Join(t.TempDir(), "tine.db")
			other, err := sqlite.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			other.Close()
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(home, "tine.db"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	}
	for _, be := range backends(t) {
		for name, spoil := range damage {
			t.Run(be+"/"+name, func(t *testing.T) {
				f := twentyFiles(t, be)
				before := userFiles(t, f.home)
				if len(before) != 21 {
					t.Fatalf("before: %d user files in the state directory, want 21", len(before))
				}
				spoil(t, f.home)
				for range 2 { // a second command refuses too
					e, err := Open(f.ctx, f.home, testOptions()...)
					if err == nil {
						e.Close()
						t.Fatal("Open succeeded over a lost store")
					}
					if !errors.Is(err, tine.ErrStore) || strings.Contains(err.Error(), "\n") {
						t.Errorf("Open = %q, want one line wrapping tine.ErrStore", err)
					}
				}
				if after := userFiles(t, f.home); len(after) != len(before) {
					t.Errorf("after: %d user files left of %d", len(after), len(before))
				}
				if got := len(userFiles(t, f.path)); got != 20 {
					t.Errorf("the workspace shows %d of its 20 files", got)
				}
				r, err := Diagnose(f.ctx, f.home, testOptions()...)
				if err != nil {
					t.Fatal(err)
				}
				if r.Store.Usable() || r.Store.Problem == "" || len(r.Advice) < 2 {
					t.Errorf("Diagnose: %+v", r)
				}
			})
		}
	}
}

// TestSweep_LostCommitsQuarantine is the regression for the bug where a
// store that lost its last commits (a damaged WAL after a power cut) let
// the sweeper delete the directories of the forks those commits made.
func TestSweep_LostCommitsQuarantine(t *testing.T) {
	for _, be := range backends(t) {
		t.Run(be, func(t *testing.T) {
			f := newFixture(t, be)
			f.e.Close()
			db := filepath.Join(f.home, "tine.db")
			old, err := os.ReadFile(db) // closed, so checkpointed: the whole store
			if err != nil {
				t.Fatal(err)
			}
			f.open()
			fork := f.fork(1).Forks[0]
			writeFiles(t, f.view(fork), map[string]string{"work/f01.txt": "the fork's work\n"})
			forkDir := f.e.lay.Run(f.ref.Workspace.ID, fork.ID).Dir()
			f.e.Close()
			// The store as it was before the fork: its commits are lost.
			for _, s := range []string{"-wal", "-shm"} {
				os.Remove(db + s)
			}
			if err := os.WriteFile(db, old, 0o600); err != nil {
				t.Fatal(err)
			}
			f.open(WithWarnings(io.Discard))
			if _, err := os.Stat(forkDir); !os.IsNotExist(err) {
				t.Errorf("the unknown fork's directory stayed in runs/: %v", err)
			}
			qs, err := ListQuarantine(f.home)
			if err != nil {
				t.Fatal(err)
			}
			var q *Quarantined
			for i := range qs {
				if qs[i].Kind == KindRun && qs[i].From == forkDir {
					q = &qs[i]
				}
			}
			if q == nil {
				t.Fatalf("the fork is not in the quarantine: %+v", qs)
			}
			if !userFiles(t, q.Dir)["f01.txt"] {
				t.Errorf("the fork's work is not in its quarantined directory %s", q.Dir)
			}
			r, err := Diagnose(f.ctx, f.home, testOptions()...)
			if err != nil || !r.Store.Usable() || len(r.Quarantine) != len(qs) {
				t.Errorf("Diagnose = %+v, %v", r, err)
			}
			purged, err := Purge(f.ctx, f.home, testOptions()...)
			if err != nil || len(purged) != len(qs) {
				t.Errorf("Purge = %d entries, %v; want %d", len(purged), err, len(qs))
			}
			if _, err := os.Stat(q.Dir); !os.IsNotExist(err) {
				t.Errorf("purged entry left: %v", err)
			}
		})
	}
}

// TestSweep_SetAside: a refused state directory goes on after tine doctor
// --set-aside, with the workspace's files kept in the quarantine.
func TestSweep_SetAside(t *testing.T) {
	f := twentyFiles(t, "copy")
	os.Remove(filepath.Join(f.home, "tine.db"))
	moved, err := SetAside(f.ctx, f.home, testOptions()...)
	if err != nil || len(moved) != 1 || moved[0].Kind != KindWorkspace {
		t.Fatalf("SetAside = %+v, %v", moved, err)
	}
	if got := len(userFiles(t, moved[0].Dir)); got != 21 {
		t.Errorf("quarantined workspace holds %d user files, want 21", got)
	}
	e, err := Open(f.ctx, f.home, testOptions()...)
	if err != nil {
		t.Fatalf("Open after SetAside: %v", err)
	}
	e.Close()
}

// TestOpen_FreshStore: only a state directory without workspaces gets a
// fresh store, and it remembers the store's id beside them.
func TestOpen_FreshStore(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	e, err := Open(ctx, home, testOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	c, err := CheckStore(ctx, home, testOptions()...)
	if err != nil || c.State != StoreOK || c.Marker == "" || c.Marker != c.ID {
		t.Errorf("CheckStore = %+v, %v", c, err)
	}
	// An empty store file and no workspaces: a fresh store is fine.
	home2 := t.TempDir()
	os.WriteFile(filepath.Join(home2, "tine.db"), nil, 0o600)
	if e, err := Open(ctx, home2, testOptions()...); err != nil {
		t.Errorf("Open over an empty store and no workspaces: %v", err)
	} else {
		e.Close()
	}
}
