package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/buildinfo"
)

// runCLI runs a command line as main does and returns its output and exit
// status.
func runCLI(args ...string) (string, string, int) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return out.String(), errb.String(), code
}

func TestVersion(t *testing.T) {
	want := buildinfo.Read().String() + "\n"
	for _, args := range [][]string{{"--version"}, {"version"}} {
		out, errOut, code := runCLI(args...)
		if code != 0 || out != want || !strings.HasPrefix(out, "tine ") {
			t.Errorf("tine %v: %d %q %q, want %q", args, code, out, errOut, want)
		}
	}
	out, errOut, code := runCLI("version", "--json")
	var got struct {
		Module, Version, Short, Go string
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 0 {
		t.Fatalf("version --json: %d %v %q %q", code, err, out, errOut)
	}
	if got.Version == "" || got.Short != buildinfo.Read().Short() || !strings.HasPrefix(got.Go, "go") {
		t.Errorf("version --json = %+v", got)
	}
	if _, errOut, code := runCLI("version", "extra"); code != exitUsage || !strings.Contains(errOut, "see tine version --help") {
		t.Errorf("version extra: %d %q", code, errOut)
	}
}

// A bad flag's hint names the command it was given to, by its whole path.
func TestUsageHintNamesTheCommand(t *testing.T) {
	for _, c := range []struct {
		args []string
		hint string
	}{
		{[]string{"--bogus"}, "(see tine --help)"},
		{[]string{"fork", "--bogus"}, "(see tine fork --help)"},
		{[]string{"exec", "--bogus", "r", "--", "true"}, "(see tine exec --help)"},
	} {
		_, errOut, code := runCLI(c.args...)
		if code != exitUsage || !strings.Contains(errOut, c.hint) || strings.Contains(errOut, "tine tine") {
			t.Errorf("tine %v: %d %q, want the hint %q", c.args, code, errOut, c.hint)
		}
	}
}
