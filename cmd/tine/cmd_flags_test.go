package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// refusal is a command line its command refuses before it opens a store.
type refusal struct {
	args []string
	code int    // the documented exit status
	msg  string // part of the one-line error
}

// checkRefusals runs each command line against a state directory that does
// not exist, outside any run, and checks its exit status and one-line
// error (a JSON object under --json), that it printed nothing else and that it created no state.
func checkRefusals(t *testing.T, cases []refusal) {
	t.Helper()
	t.Setenv("TINE_CAPABILITY", "")
	t.Setenv("TINE_SOCKET", "")
	for _, c := range cases {
		home := filepath.Join(t.TempDir(), "home")
		out, errOut, code := runCLI(append([]string{"--home", home}, c.args...)...)
		line := strings.TrimSuffix(errOut, "\n")
		if code != c.code || out != "" || !strings.HasPrefix(line, "tine: ") && !strings.HasPrefix(line, `{"error":`) || strings.Contains(line, "\n") || !strings.Contains(line, c.msg) {
			t.Errorf("tine %s: exit %d, stdout %q, stderr %q; want exit %d and one line with %q",
				strings.Join(c.args, " "), code, out, errOut, c.code, c.msg)
		}
		if _, err := os.Lstat(home); !os.IsNotExist(err) {
			t.Errorf("tine %s: made the state directory (%v)", strings.Join(c.args, " "), err)
		}
	}
}

// The helper itself: a command line that opens the store is caught.
func TestCheckRefusals_CatchesAnOpenedStore(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	_, _, code := runCLI("--home", home, "checkpoint", "x")
	if _, err := os.Lstat(home); err != nil || code != exitNotFound {
		t.Fatalf("tine checkpoint x on an empty state directory: exit %d, %v; checkRefusals relies on it making the directory", code, err)
	}
}
