//go:build linux

package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/internal/tty"
)

// stderrOnTerminal runs tine with args, its standard error a terminal, and
// returns what the terminal showed.
func stderrOnTerminal(t *testing.T, e *env, args ...string) string {
	t.Helper()
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	var screen bytes.Buffer
	read := make(chan struct{})
	go func() { io.Copy(&screen, master); close(read) }()
	cmd := exec.Command(tineBin, args...)
	cmd.Env = slices.Clone(e.vars)
	cmd.Stdout = io.Discard
	cmd.Stderr = slave
	err = cmd.Run()
	slave.Close()
	<-read
	if err != nil {
		t.Fatalf("tine %v on a terminal: %v\n%s", args, err, clip(screen.String()))
	}
	return screen.String()
}

// TestRelease_ProgressOnTerminal: a release that moves 20,000 files the
// source wrote into a directory of its base back into the workspace
// directory, one by one (issue 24: a release took minutes, silent), draws
// one updating line on a terminal, cleared before the result.
func TestRelease_ProgressOnTerminal(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"many/a": "a\n"})
	e.ok("init", ws)
	e.execSh("source", "cd many && seq 1 "+strconv.Itoa(manyFiles)+" | split -l 1 -a 5 - f")
	e.vars = append(e.vars, progressAfterEnv+"=0s") // the line at once, however fast the machine
	screen := stderrOnTerminal(t, e, "release", ws)
	if !strings.Contains(screen, "\r\033[Kreleasing "+ws+": moving ") || !strings.HasSuffix(screen, "\r\033[K") {
		t.Errorf("the terminal shows %q, want a progress line of the copy, cleared at the end", clip(screen))
	}
	if got, err := os.ReadDir(filepath.Join(ws, "many")); err != nil || len(got) != manyFiles+1 {
		t.Errorf("the released workspace has %d files in many/, %v", len(got), err)
	}
}
