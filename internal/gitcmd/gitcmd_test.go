package gitcmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEnv_DropsTheCallersGitVariables(t *testing.T) {
	t.Setenv("GIT_DIR", "/elsewhere")
	t.Setenv("GIT_CONFIG_COUNT", "1")
	t.Setenv("GIT_EXTERNAL_DIFF", "/bin/evil")
	env := Env("GIT_INDEX_FILE=/tmp/i")
	for _, kv := range env {
		if strings.HasPrefix(kv, "GIT_DIR=") || strings.HasPrefix(kv, "GIT_CONFIG_COUNT=") || strings.HasPrefix(kv, "GIT_EXTERNAL_DIFF=") {
			t.Errorf("Env keeps %s", kv)
		}
	}
	for _, want := range []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_INDEX_FILE=/tmp/i"} {
		if !slices.Contains(env, want) {
			t.Errorf("Env lacks %s", want)
		}
	}
}

// Drivers names every filter, diff and merge driver a repository's
// configuration (and what it includes) defines, turned off.
func TestDrivers_TurnsOffEveryNamedDriver(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir := t.TempDir()
	inc := filepath.Join(dir, "inc")
	os.WriteFile(inc, []byte("[filter \"Lfs.X\"]\n\tclean = evil\n"), 0o644)
	for _, args := range [][]string{{"init", "-q"}, {"config", "filter.a.clean", "x"}, {"config", "filter.a.smudge", "x"},
		{"config", "diff.b.textconv", "x"}, {"config", "merge.c.driver", "x"}, {"config", "include.path", inc}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	got, err := Drivers(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Join(got, " ")
	for _, want := range []string{"filter.a.clean=", "filter.a.process=", "filter.a.required=false", "filter.Lfs.X.clean=",
		"diff.b.textconv=", "merge.c.driver=false"} {
		if !strings.Contains(s, "-c "+want) {
			t.Errorf("Drivers = %q, lacks %s", s, want)
		}
	}
	if strings.Count(s, "filter.a.clean=") != 1 {
		t.Errorf("Drivers repeats a driver: %q", s)
	}
}
