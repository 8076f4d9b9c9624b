//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// withoutEventFields decodes a --json output and drops what a rebuilt store
// cannot give back the same: update times (the rebuild and its sweep touch
// runs) and anything read from the event log.
func withoutEventFields(t *testing.T, out string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("decoding %q: %v", clip(out), err)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range []string{"updated_at", "last_event", "events"} {
				delete(v, k)
			}
			for _, x := range v {
				strip(x)
			}
		case []any:
			for _, x := range v {
				strip(x)
			}
		}
	}
	strip(v)
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// TestDoctor_Rebuild deletes (or truncates) the store of a workspace with
// forks, a checkpoint, a merged run and a discarded one: every command
// refuses, tine doctor --rebuild makes the store again from the manifests,
// and tine ls and tine tree show what they showed before; the source's files
// are intact, a fork's files are readable through tine exec and its view,
// and a rollback to the checkpoint works.
func TestDoctor_Rebuild(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	for _, spoil := range []string{"missing", "truncated"} {
		t.Run(spoil, func(t *testing.T) {
			e := newEnv(t)
			ws := e.workspaceDir("ws")
			if err := os.WriteFile(filepath.Join(ws, "user.txt"), []byte("the user's file\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			e.ok("init", "--backend", "overlay", ws)
			e.ok("fork", "source", "--copies", "3", "--name", "f")
			e.execSh("f-1", "echo one > one.txt")
			e.ok("checkpoint", "f-1", "--label", "cp-1")
			e.execSh("f-1", "echo later > later.txt")
			e.execSh("f-2", "echo merged > merged.txt")
			e.ok("merge", "f-2")
			e.ok("discard", "--unmerged", "--while-running", "f-3")
			before := [2]string{withoutEventFields(t, e.ok("ls", "--all", "--json")), withoutEventFields(t, e.ok("tree", "--json"))}
			if !strings.Contains(before[0], `"merged"`) || !strings.Contains(before[0], `"discarded"`) {
				t.Fatalf("no merged or discarded run before:\n%s", before[0])
			}
			fork1 := e.path("f-1")

			db := filepath.Join(e.home, "tine.db")
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
			for _, cmd := range [][]string{{"ls"}, {"tree"}, {"fork", "source"}, {"exec", "f-1", "--", "true"}} {
				requireOneLineError(t, e.tine(cmd...), exitStore)
			}
			r := e.tine("doctor", "--rebuild")
			if r.code != 0 {
				t.Fatalf("tine doctor --rebuild: %v", r)
			}
			for _, want := range []string{"rebuilt workspace ws", "4 runs", "not rebuilt"} {
				if !strings.Contains(r.stderr, want) {
					t.Errorf("tine doctor --rebuild does not say %q:\n%s", want, r.stderr)
				}
			}
			if !strings.Contains(r.stdout, ": ok") {
				t.Errorf("tine doctor --rebuild's report does not say the store is ok:\n%s", r.stdout)
			}
			after := [2]string{withoutEventFields(t, e.ok("ls", "--all", "--json")), withoutEventFields(t, e.ok("tree", "--json"))}
			for i, what := range []string{"tine ls --all --json", "tine tree --json"} {
				if after[i] != before[i] {
					t.Errorf("%s after the rebuild differs (lines only before -, only after +):\n%s", what, jsonLineDiff(before[i], after[i]))
				}
			}
			if r := e.tine("doctor", "--rebuild"); r.code != exitState {
				t.Errorf("tine doctor --rebuild of a usable store: %v", r)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "user.txt")); err != nil || string(b) != "the user's file\n" {
				t.Errorf("the source's user.txt: %q, %v", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(ws, "merged.txt")); err != nil || string(b) != "merged\n" {
				t.Errorf("the source's merged.txt: %q, %v", b, err)
			}
			if got := e.execSh("f-1", "cat one.txt later.txt user.txt"); got != "one\nlater\nthe user's file\n" {
				t.Errorf("f-1 through tine exec: %q", got)
			}
			if b, err := os.ReadFile(filepath.Join(fork1, "later.txt")); err != nil || string(b) != "later\n" {
				t.Errorf("f-1's later.txt through its view: %q, %v", b, err)
			}
			e.ok("rollback", "f-1", "--to", "cp-1")
			if got := e.execSh("f-1", "cat one.txt; test ! -e later.txt && echo gone"); got != "one\ngone\n" {
				t.Errorf("f-1 after the rollback to cp-1: %q", got)
			}
			e.ok("fork", "source")
		})
	}
}
