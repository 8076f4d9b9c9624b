//go:build linux

package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

var updateErrors = flag.Bool("update-errors", false, "rewrite testdata/errors.golden")

// badInputs are command lines a new user types wrong (issue 28's list):
// each gets one line on stderr, nothing on stdout, and its exit status.
var badInputs = [][]string{
	{"bogus"},
	{"lgos"},
	{"cell", "bogus"},
	{"ls", "--nope"},
	{"log", "-n", "abc"},
	{"logs", "--tail", "abc", "x"},
	{"fork-run", "-n", "abc", "x"},
	{"fork-run", "x", "--budget", "lots"},
	{"fork", "x", "--wait=maybe"},
	{"exec", "x"},
	{"ls", "--home"},
	{"diff", "--patch", "--json", "x"},
	{"diff", "x"},
	{"fork"},
	{"stop", "x"},
	{"choose", "no-such-group", "x", "--merge"},
	{"rollback", "x", "--to", "v9"},
	{"fork-run", "x", "--prompt", "p", "--merge-mode", "yolo"},
}

// The error lines of bad inputs, through the real binary, against
// testdata/errors.golden (go test -run TestErrorLines -update-errors
// rewrites it): one line each, no sentinel's category at its end, no Go
// package's words, the --help of the command that was typed.
func TestErrorLines(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	e.ok("init", e.workspaceDir("app")) // a store, so a missing run is "no run"
	var got strings.Builder
	for _, args := range badInputs {
		r := e.tine(args...)
		fmt.Fprintf(&got, "$ tine %s\n%d %s", strings.Join(args, " "), r.code, r.stderr)
		line := strings.TrimSuffix(r.stderr, "\n")
		if r.stdout != "" || strings.Contains(line, "\n") || !strings.HasPrefix(line, "tine: ") && !strings.HasPrefix(line, "{") {
			t.Errorf("%v: want one line on stderr only\n%v", args, r)
		}
		for _, bad := range []string{": invalid argument", ": not found", ": not supported", "strconv.", "context canceled", "Did you mean"} {
			if strings.Contains(line, bad) {
				t.Errorf("%v: %q in %q", args, bad, line)
			}
		}
	}
	golden := filepath.Join("testdata", "errors.golden")
	if *updateErrors {
		if err := os.WriteFile(golden, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("error lines differ from %s (rerun with -update-errors and read the diff):\n%s", golden, got.String())
	}
}

// Under --json an error is one JSON object on stderr: its line, its code
// and its exit status; stdout stays empty.
func TestErrorLines_JSON(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		code string
		exit int
	}{
		{[]string{"diff", "x", "--json"}, "not_found", exitNotFound},
		{[]string{"bogus", "--json"}, "invalid", exitUsage},
		{[]string{"ls", "--json", "--nope"}, "invalid", exitUsage},
		{[]string{"diff", "--patch", "--json", "x"}, "invalid", exitUsage},
	} {
		r := e.tine(c.args...)
		var got struct {
			Error, Code string
			Exit        int
		}
		if err := json.Unmarshal([]byte(r.stderr), &got); err != nil || r.stdout != "" || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: want one JSON object on stderr (%v)\n%v", c.args, err, r)
			continue
		}
		if got.Code != c.code || got.Exit != c.exit || r.code != c.exit || got.Error == "" || strings.HasSuffix(got.Error, "not found") {
			t.Errorf("%v: got %+v exit %d, want code %s exit %d", c.args, got, r.code, c.code, c.exit)
		}
	}
}
