package fleet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/gitcmd"
)

// EnvURL names the fleet's database for a program whose own store is not
// it (tine submit, tasks, fetch, tine-controller).
const EnvURL = "TINE_FLEET_URL"

// ResolveRepo returns a task's repository as the nodes clone it (a local
// path made absolute) and commit (default HEAD) as a full hash, as tine
// submit and the TineTask controller queue it. A repository or commit
// that cannot be found fails wrapping tine.ErrNotFound.
func ResolveRepo(ctx context.Context, repo, commit string) (string, string, error) {
	if commit == "" {
		commit = "HEAD"
	}
	if st, err := os.Stat(repo); err == nil && st.IsDir() {
		abs, err := filepath.Abs(repo)
		if err != nil {
			return "", "", err
		}
		out, err := gitcmd.Run(ctx, abs, nil, nil, nil, "rev-parse", "--verify", "--quiet", "--end-of-options", commit+"^{commit}")
		if err != nil {
			return "", "", fmt.Errorf("--repo %s --commit %s: no such commit in that repository: %w", repo, commit, tine.ErrNotFound)
		}
		return abs, strings.TrimSpace(string(out)), nil
	}
	if isHash(commit) {
		return repo, commit, nil
	}
	out, err := gitcmd.Run(ctx, "", nil, nil, nil, "ls-remote", "--", repo, commit)
	if err != nil {
		line, _, _ := strings.Cut(err.Error(), "\n")
		return "", "", fmt.Errorf("--repo %s: %v: %w", repo, line, tine.ErrNotFound)
	}
	f := strings.Fields(string(out))
	if len(f) == 0 {
		return "", "", fmt.Errorf("--repo %s has no %s; give --commit with a full hash: %w", repo, commit, tine.ErrNotFound)
	}
	return repo, f[0], nil
}

// isHash reports whether s is a full hexadecimal commit hash.
func isHash(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}
