package fleet

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// A local repository is given as its absolute path and its commit as a
// full hash; a commit it lacks, or a remote that does not answer, is not
// found; a remote with a full hash is taken as it is, unasked.
func TestResolveRepo(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "init")
	head := git("rev-parse", "HEAD")
	t.Chdir(filepath.Dir(dir))
	ctx := context.Background()

	if repo, commit, err := ResolveRepo(ctx, filepath.Base(dir), ""); err != nil || repo != dir || commit != head {
		t.Errorf("local HEAD: %s %s, %v; want %s %s", repo, commit, err, dir, head)
	}
	if _, _, err := ResolveRepo(ctx, dir, "nosuchbranch"); !errors.Is(err, tine.ErrNotFound) {
		t.Errorf("missing commit: %v; want not found", err)
	}
	if _, _, err := ResolveRepo(ctx, "/nonexistent/repo", "main"); !errors.Is(err, tine.ErrNotFound) || !strings.Contains(err.Error(), "/nonexistent/repo") {
		t.Errorf("missing repository: %v; want not found, naming it", err)
	}
	hash := strings.Repeat("a", 40)
	if repo, commit, err := ResolveRepo(ctx, "https://example.invalid/x.git", hash); err != nil || repo != "https://example.invalid/x.git" || commit != hash {
		t.Errorf("remote with a hash: %s %s, %v", repo, commit, err)
	}
}
