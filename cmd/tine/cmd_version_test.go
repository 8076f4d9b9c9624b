package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
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

// A binary built from a git checkout says which commit it was built from.
func TestVersion_BuiltFromCheckout(t *testing.T) {
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	top := strings.TrimSpace(string(root))
	if st, err := os.Stat(filepath.Join(top, ".git")); err != nil || !st.IsDir() {
		t.Skip("a git worktree: the Go toolchain stamps the commit only in a checkout with a .git directory")
	}
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tine")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	var got buildinfo.Info
	if err != nil || json.Unmarshal(out, &got) != nil {
		t.Fatalf("tine version --json: %v %q", err, out)
	}
	if got.Commit != strings.TrimSpace(string(head)) || got.Module != "github.com/tinehq/tine" || got.Version == "" {
		t.Errorf("tine version --json = %+v, want commit %s", got, head)
	}
}

// A binary built as scripts/quickstart.sh and .ci/run build it names a
// semantic version and its commit, even without the toolchain's VCS stamp
// (-buildvcs=false, as in a git worktree).
func TestVersion_StampedByTheProjectsBuild(t *testing.T) {
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	flags, err := exec.Command("sh", "../../scripts/ldflags.sh").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "tine")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", strings.TrimSpace(string(flags)), "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--json").Output()
	var got struct {
		buildinfo.Info
		Short string `json:"short"`
	}
	if err != nil || json.Unmarshal(out, &got) != nil {
		t.Fatalf("tine version --json: %v %q", err, out)
	}
	rev := strings.TrimSpace(string(head))
	if got.Commit != rev || !strings.HasPrefix(got.Short, "v") || !strings.Contains(got.Short, rev[:12]) {
		t.Errorf("tine version --json = %+v, want a semantic version naming commit %s", got, rev)
	}
}
