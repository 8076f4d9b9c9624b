//go:build linux

package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/testkit"
)

// TestCLI_PinsSurvive: a user's immutable and append-only files (chattr
// +i, +a), below the top level from before tine init and at the top level
// set through the workspace path after it, still have their flags once a
// fork was merged or promoted and the workspace released. The copy backend
// lost them in every fork, version and promote; the overlay backend lost a
// flag set after init (overlay keeps it in an attribute of the upper file,
// which release dropped) and one on a file release had to copy. A flag a
// fork set on its own new file is carried by promote (the fork's files
// become the source's, as they are) and not by merge (docs/architecture.md).
func TestCLI_PinsSurvive(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	if _, err := exec.LookPath("chattr"); err != nil {
		t.Skipf("chattr not found: %v", err)
	}
	for _, backend := range []string{"overlay", "copy"} {
		for _, op := range []string{"merge", "promote"} {
			t.Run(backend+"/"+op, func(t *testing.T) { testPinsSurvive(t, backend, op) })
		}
	}
}

func testPinsSurvive(t *testing.T, backend, op string) {
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"etc/pinned.conf": "p\n", "etc/audit.log": "log\n", "etc/other": "o\n"})
	defer exec.Command("chattr", "-R", "-i", "-a", ws, e.home).Run()
	if out, err := exec.Command("chattr", "+i", filepath.Join(ws, "etc/pinned.conf")).CombinedOutput(); err != nil {
		t.Skipf("no chattr flags here: %v: %s", err, out)
	}
	chattrOK(t, "+a", filepath.Join(ws, "etc/audit.log"))
	e.ok("init", "--backend", backend, ws)
	writeTestFiles(t, ws, map[string]string{"top.lock": "t\n"})
	chattrOK(t, "+i", filepath.Join(ws, "top.lock"))
	e.ok("fork", "source", "--name", "f1")
	e.execSh("f1", "echo changed > etc/other; echo new > etc/new")
	chattrOK(t, "+a", filepath.Join(e.path("f1"), "etc/new"))
	if op == "merge" {
		e.ok("merge", "f1")
	} else {
		e.ok("promote", "f1")
	}
	e.ok("release", ws)
	forkPin := fstree.Pins(0)
	if op == "promote" {
		forkPin = fstree.PinAppend
	}
	for name, want := range map[string]fstree.Pins{"etc/pinned.conf": fstree.PinImmutable, "etc/audit.log": fstree.PinAppend,
		"top.lock": fstree.PinImmutable, "etc/other": 0, "etc/new": forkPin} {
		got, err := fstree.ReadPins(filepath.Join(ws, name))
		if err != nil || got != want {
			t.Errorf("released %s: flags %#x (%v), want %#x", name, got, err, want)
		}
	}
	if got := readTestFile(t, ws, "etc/other"); got != "changed\n" {
		t.Errorf("released etc/other = %q, want the fork's", got)
	}
}

// chattrOK runs chattr flag path.
func chattrOK(t *testing.T, flag, path string) {
	t.Helper()
	if out, err := exec.Command("chattr", flag, path).CombinedOutput(); err != nil {
		t.Fatalf("chattr %s %s: %v: %s", flag, path, err, out)
	}
}
