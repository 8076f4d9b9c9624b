//go:build linux

package main

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/testkit"
)

// fileContents maps every regular file below root to its content.
func fileContents(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// trashOf lists the trash of the test's state directory.
func (e *env) trashOf() []string {
	ents, _ := os.ReadDir(filepath.Join(e.home, "trash"))
	var out []string
	for _, ent := range ents {
		out = append(out, ent.Name())
	}
	return out
}

// mountsIn lists the mount points below dir.
func mountsIn(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// forkedWorkspace makes a workspace with three forks, files written in the
// source and in a fork, and returns its path and what the source shows.
func forkedWorkspace(t *testing.T, e *env) (string, map[string]string) {
	t.Helper()
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	e.ok("init", ws)
	writeTestFiles(t, ws, map[string]string{"dir/c.txt": "sealed by the fork\n"})
	e.ok("fork", "source", "--copies", "3")
	writeTestFiles(t, e.path("source-2"), map[string]string{"fork.txt": "the fork's\n"})
	writeTestFiles(t, ws, map[string]string{"a.txt": "a, after the fork\n", "new/d.txt": "d\n"})
	return ws, fileContents(t, ws)
}

// TestRelease_ReturnsBeforeDeleting: tine release renames the workspace's
// state (every fork's delta, every layer) into the trash and returns; the
// released files are the source's; tine doctor reports the trash and
// tine gc empties it, leaving nothing mounted. Issue 24: a release of a
// workspace with 19 forks and a long history spent most of its time
// deleting that state before returning.
func TestRelease_ReturnsBeforeDeleting(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws, want := forkedWorkspace(t, e)
	if r := e.run(call{vars: []string{"TINE_TRASH=keep"}}, "release", "--unmerged", ws); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if got := fileContents(t, ws); !maps.Equal(got, want) {
		t.Fatalf("released files %v, want %v", got, want)
	}
	trash := e.trashOf()
	if len(trash) != 1 || !strings.Contains(trash[0], "-workspace-overlay-") {
		t.Fatalf("the trash holds %v, want the workspace's state", trash)
	}
	if ents, _ := os.ReadDir(filepath.Join(e.home, "workspaces")); len(ents) != 0 {
		t.Errorf("workspaces/ still holds %d entries", len(ents))
	}
	var d struct {
		Trash      []struct{ Kind string } `json:"trash"`
		TrashBytes int64                   `json:"trash_bytes"`
	}
	e.okJSON(&d, "doctor", "--json")
	if len(d.Trash) != 1 || d.Trash[0].Kind != "workspace" || d.TrashBytes == 0 {
		t.Errorf("tine doctor reports the trash as %+v (%d bytes)", d.Trash, d.TrashBytes)
	}
	e.ok("gc")
	if trash := e.trashOf(); len(trash) != 0 {
		t.Errorf("tine gc left %v in the trash", trash)
	}
	if m := mountsIn(t, e.home); len(m) != 0 {
		t.Errorf("still mounted in the state directory: %v", m)
	}
	if got := fileContents(t, ws); !maps.Equal(got, want) {
		t.Fatalf("files after tine gc %v, want %v", got, want)
	}
}

// waitTrashEmpty waits up to 20 s for the trash to be empty.
func (e *env) waitTrashEmpty(what string) {
	e.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); len(e.trashOf()) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("%s: the trash still holds %v after 20 s", what, e.trashOf())
		}
	}
}

// TestRelease_EmptiesTrashInBackground: without the daemon, tine release
// starts tine gc --trash, which deletes the state after it returned.
func TestRelease_EmptiesTrashInBackground(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws, want := forkedWorkspace(t, e)
	e.ok("release", "--unmerged", ws)
	e.waitTrashEmpty("tine release")
	if got := fileContents(t, ws); !maps.Equal(got, want) {
		t.Fatalf("released files %v, want %v", got, want)
	}
}

// TestDiscard_TrashEmptiedByDaemon: a discard the daemon serves moves the
// fork's directory into the trash, and the daemon empties it at once (not
// at its next 10-minute sweep); a direct discard under TINE_TRASH=keep
// leaves it for tine gc --trash.
func TestDiscard_TrashEmptiedByDaemon(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws, want := forkedWorkspace(t, e)
	fork1 := e.runDir("source-1")
	if r := e.run(call{vars: []string{"TINE_TRASH=keep", "TINE_NO_DAEMON=1"}}, "discard", "--unmerged", "source-1"); r.code != 0 {
		t.Fatalf("%v", r)
	}
	if trash := e.trashOf(); len(trash) != 1 || !strings.Contains(trash[0], "-run-overlay-") {
		t.Fatalf("the trash holds %v, want source-1's directory", trash)
	}
	if _, err := os.Stat(fork1); !os.IsNotExist(err) {
		t.Errorf("source-1's directory %s is still there: %v", fork1, err)
	}
	if out := e.ok("gc", "--trash"); !strings.Contains(out, "1 entry(ies) deleted") {
		t.Errorf("tine gc --trash said %q", out)
	}
	e.serve()
	e.ok("discard", "--unmerged", "source-2")
	e.waitTrashEmpty("a discard through the daemon")
	if got := fileContents(t, ws); !maps.Equal(got, want) {
		t.Fatalf("the source's files %v, want %v", got, want)
	}
}
