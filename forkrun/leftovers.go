package forkrun

import (
	"context"
	"os"
	"path/filepath"

	"github.com/tinehq/tine/agent"
)

// codexMountpoints are the directories codex 0.171's Linux sandbox (its
// bubblewrap) mounts read-only over a writable root so that the agent
// cannot change them; one that is missing is made as an empty mount point,
// and on a loaded machine codex sometimes leaves it behind: the fork then
// "changed" .agents, .aws and .codex, which a merge would carry into the
// source.
var codexMountpoints = []string{".agents", ".aws", ".codex"}

// sandboxLeftovers returns what removes, once the fork's agent has
// ended, the empty mount points its agent's sandbox made at the fork's
// root: those of codexMountpoints the fork did not have before. Other
// agents leave none: it returns a function that does nothing.
func (fk *forkRun) sandboxLeftovers(ctx context.Context) func() {
	if fk.r.o.Agent.Kind != agent.Codex {
		return func() {}
	}
	ref, err := fk.r.e.FindRun(ctx, fk.f.Run)
	if err != nil {
		return func() {}
	}
	root := fk.r.e.Path(ref.Workspace, ref.Run)
	missing := missingEntries(root, codexMountpoints)
	return func() { removeEmptyDirs(root, missing) }
}

// missingEntries are the names that do not exist in dir.
func missingEntries(dir string, names []string) []string {
	var out []string
	for _, n := range names {
		if _, err := os.Lstat(filepath.Join(dir, n)); os.IsNotExist(err) {
			out = append(out, n)
		}
	}
	return out
}

// removeEmptyDirs removes each name in dir that is an empty directory
// (rmdir: one with anything in it stays, as does a file or a link).
func removeEmptyDirs(dir string, names []string) {
	for _, n := range names {
		p := filepath.Join(dir, n)
		if st, err := os.Lstat(p); err == nil && st.IsDir() {
			_ = os.Remove(p) // fails, and keeps it, when it is not empty
		}
	}
}
