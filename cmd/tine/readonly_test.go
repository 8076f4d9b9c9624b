package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A command that only reads never makes a state directory: a typo in
// --home is said, not answered with a fresh store (issue 28). tine ls says
// there is nothing, with [] under --json; the others say where they looked.
func TestReadOnly_MakesNoStateDirectory(t *testing.T) {
	t.Setenv("TINE_CAPABILITY", "")
	t.Setenv("TINE_SOCKET", "")
	t.Setenv("TINE_NO_DAEMON", "1")
	for _, args := range [][]string{{"ls"}, {"ls", "--json"}, {"tree"}, {"diff", "x"}, {"log", "x"}, {"pending"},
		{"events"}, {"compare", "g"}, {"ps", "x"}, {"judge", "stats"}} {
		home := filepath.Join(t.TempDir(), "typo")
		out, errOut, code := runCLI(append([]string{"--home", home}, args...)...)
		if _, err := os.Lstat(home); !os.IsNotExist(err) {
			t.Errorf("tine %v made the state directory %s (%v)", args, home, err)
		}
		switch {
		case args[0] == "ls" && len(args) == 2:
			if code != 0 || strings.TrimSpace(out) != "[]" {
				t.Errorf("tine ls --json: exit %d %q %q, want []", code, out, errOut)
			}
		case args[0] == "ls":
			if code != 0 || !strings.Contains(errOut, "no runs") || !strings.Contains(errOut, home) {
				t.Errorf("tine ls: exit %d %q %q, want it to say nothing is under management there", code, out, errOut)
			}
		case code != 0 && !strings.Contains(errOut, home):
			t.Errorf("tine %v: exit %d %q, want the state directory named", args, code, errOut)
		}
	}
}
