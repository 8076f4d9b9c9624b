package engine

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine/internal/gitcmd"
)

// gitHead returns the commit HEAD names in the git repository at dir, or ""
// when dir is not the top of a repository or has no commit yet.
func gitHead(ctx context.Context, dir string) string {
	if _, err := os.Lstat(filepath.Join(dir, ".git")); err != nil {
		return ""
	}
	out, err := gitcmd.Run(ctx, dir, nil, nil, nil, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
