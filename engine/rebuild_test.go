package engine

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/mnt"
)

// comparableState is a workspace's records without what a rebuild cannot
// keep or need not: UpdatedAt of runs changes whenever a sweep touches them.
func comparableState(t *testing.T, f *fixture) string {
	t.Helper()
	states, err := f.e.Records(f.ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		for _, r := range s.Runs {
			r.UpdatedAt = r.CreatedAt
		}
	}
	b, _ := json.MarshalIndent(states, "", "  ")
	return string(b)
}

// TestRebuild_LostStore deletes (and truncates) the store of a workspace
// with forks, a checkpoint, a merged run and a discarded run, and rebuilds
// it from the manifests: the same records, the source's files intact, a
// fork's files readable through its view, and a rollback to the checkpoint.
func TestRebuild_LostStore(t *testing.T) {
	for _, backend := range backends(t) {
		for _, spoil := range []string{"missing", "truncated"} {
			t.Run(backend+"/"+spoil, func(t *testing.T) {
				f := newFixture(t, backend)
				res := f.fork(3)
				a, b, c := res.Forks[0], res.Forks[1], res.Forks[2]
				writeFiles(t, f.view(a), map[string]string{"a.txt": "alpha from a\n", "new.txt": "new in a\n"})
				cp, err := f.e.Checkpoint(f.ctx, a.ID, "cp1")
				if err != nil {
					t.Fatalf("Checkpoint: %v", err)
				}
				writeFiles(t, f.view(a), map[string]string{"after.txt": "after the checkpoint\n"})
				writeFiles(t, f.view(b), map[string]string{"merged.txt": "from b\n"})
				if _, err := f.e.Merge(f.ctx, b.ID, MergeOptions{}); err != nil {
					t.Fatalf("Merge: %v", err)
				}
				if _, err := f.e.Discard(f.ctx, c.ID, true); err != nil {
					t.Fatalf("Discard: %v", err)
				}
				f.reopen()
				before := comparableState(t, f)
				if !strings.Contains(before, `"resolution": "merged"`) || !strings.Contains(before, `"state": "discarded"`) {
					t.Fatalf("the fixture lacks a merged or a discarded run:\n%s", before)
				}
				views := []string{f.path, f.view(a), f.view(b), f.e.backendRun(f.ref.Workspace, f.ref.Run).View}
				f.e.Close()
				f.e = nil
				if backend == "overlay" {
					// A reboot as well: every view must be mounted again.
					for _, p := range views {
						if err := mnt.UnmountAll(p); err != nil {
							t.Fatal(err)
						}
					}
				}
				db := filepath.Join(f.home, "tine.db")
				if spoil == "missing" {
					for _, s := range []string{"", "-wal", "-shm"} {
						os.Remove(db + s)
					}
				} else {
					os.Remove(db + "-wal")
					os.Remove(db + "-shm")
					if err := os.Truncate(db, 0); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := Open(f.ctx, f.home, testOptions()...); !errors.Is(err, tine.ErrStore) {
					t.Fatalf("Open on a lost store: %v, want ErrStore", err)
				}
				rep, err := Rebuild(f.ctx, f.home, testOptions()...)
				if err != nil {
					t.Fatalf("Rebuild: %v (%+v)", err, rep)
				}
				if len(rep.Workspaces) != 1 || rep.Workspaces[0].Runs != 4 || len(rep.Skipped) != 0 {
					t.Errorf("Rebuild report: %+v", rep)
				}
				if spoil == "truncated" && len(rep.SetAside) != 1 {
					t.Errorf("the truncated store was not moved aside: %+v", rep.SetAside)
				}
				if qs, _ := ListQuarantine(f.home); len(qs) != len(rep.SetAside) {
					t.Errorf("the quarantine holds %d entries, want only the %d store files set aside: %+v", len(qs), len(rep.SetAside), qs)
				}
				f.open()
				if after := comparableState(t, f); after != before {
					t.Errorf("the rebuilt records differ (- before, + after):\n%s", lineDiffs(before, after))
				}
				if got := readFile(t, filepath.Join(f.path, "merged.txt")); got != "from b\n" {
					t.Errorf("the source's merged file reads %q", got)
				}
				if got := readFile(t, filepath.Join(f.path, "dir/sub/c.txt")); got != "gamma\n" {
					t.Errorf("the source's file reads %q", got)
				}
				if got := readFile(t, filepath.Join(f.view(a), "after.txt")); got != "after the checkpoint\n" {
					t.Errorf("the fork's file reads %q", got)
				}
				if _, err := Rebuild(f.ctx, f.home, testOptions()...); !errors.Is(err, tine.ErrState) {
					t.Errorf("Rebuild of a usable store: %v, want ErrState", err)
				}
				if _, err := f.e.Rollback(f.ctx, a.ID, cp.ID); err != nil {
					t.Fatalf("Rollback to the checkpoint after the rebuild: %v", err)
				}
				if got := readFile(t, filepath.Join(f.view(a), "new.txt")); got != "new in a\n" {
					t.Errorf("after the rollback new.txt reads %q", got)
				}
				if _, err := os.Stat(filepath.Join(f.view(a), "after.txt")); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("after the rollback after.txt is still there: %v", err)
				}
				if _, err := f.e.Fork(f.ctx, a.ID, ForkOptions{Copies: 1}); err != nil {
					t.Errorf("Fork after the rebuild: %v", err)
				}
			})
		}
	}
}

// TestRebuild_NoManifests refuses, changing nothing, when no workspace
// directory has a manifest to rebuild from.
func TestRebuild_NoManifests(t *testing.T) {
	f := newFixture(t, "copy")
	f.e.Close()
	f.e = nil
	os.Remove(filepath.Join(f.wsDirOf(), workspaceFile))
	for _, s := range []string{"", "-wal", "-shm"} {
		os.Remove(filepath.Join(f.home, "tine.db") + s)
	}
	if _, err := Rebuild(f.ctx, f.home, testOptions()...); !errors.Is(err, tine.ErrStore) {
		t.Fatalf("Rebuild without manifests: %v, want ErrStore", err)
	}
	if qs, _ := ListQuarantine(f.home); len(qs) != 0 {
		t.Errorf("a refused rebuild moved things aside: %+v", qs)
	}
	if _, err := os.Stat(f.wsDirOf()); err != nil {
		t.Errorf("the workspace directory: %v", err)
	}
}

// TestManifests_Backfilled: a workspace whose manifests are gone (made by a
// tine without them) gets them at the next command.
func TestManifests_Backfilled(t *testing.T) {
	f := newFixture(t, "copy")
	f.fork(1)
	dir := f.wsDirOf()
	os.Remove(filepath.Join(dir, workspaceFile))
	os.RemoveAll(filepath.Join(dir, versionsDir))
	f.reopen()
	for _, p := range []string{workspaceFile, versionsDir, filepath.Join("runs", f.ref.Run.ID, runManifestFile)} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("not backfilled: %v", err)
		}
	}
	if vs, _ := os.ReadDir(filepath.Join(dir, versionsDir)); len(vs) != 2 {
		t.Errorf("versions/ holds %d manifests, want 2", len(vs))
	}
}

func (f *fixture) wsDirOf() string { return filepath.Join(f.home, "workspaces", f.ref.Workspace.ID) }

// lineDiffs lists the lines only in a (-) and only in b (+).
func lineDiffs(a, b string) string {
	count := map[string]int{}
	for _, l := range strings.Split(a, "\n") {
		count[l]++
	}
	for _, l := range strings.Split(b, "\n") {
		count[l]--
	}
	var out []string
	for l, n := range count {
		for ; n > 0; n-- {
			out = append(out, "- "+l)
		}
		for ; n < 0; n++ {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}
