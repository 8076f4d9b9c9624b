package engine

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// gitHead returns the commit HEAD names in the git repository at dir, or ""
// when dir is not the top of a repository or has no commit yet.
func gitHead(ctx context.Context, dir string) string {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
		return ""
	}
	cmd := exec.CommandContext(ctx, "git", "-c", "safe.directory=*", "-C", dir, "rev-parse", "--verify", "-q", "HEAD")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
