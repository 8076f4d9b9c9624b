package forkrun

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveEmptyDirs: only the names missing before, and only as empty
// directories, are removed.
func TestRemoveEmptyDirs(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, ".codex"), 0o755) // the source had it
	missing := missingEntries(dir, codexMountpoints)
	if len(missing) != 2 || missing[0] != ".agents" || missing[1] != ".aws" {
		t.Fatalf("missing %q", missing)
	}
	os.Mkdir(filepath.Join(dir, ".agents"), 0o755) // the sandbox's mount point
	os.Mkdir(filepath.Join(dir, ".aws"), 0o755)    // the agent wrote into it
	os.WriteFile(filepath.Join(dir, ".aws", "config"), []byte("x"), 0o644)
	removeEmptyDirs(dir, missing)
	for name, want := range map[string]bool{".agents": false, ".aws": true, ".codex": true} {
		if _, err := os.Lstat(filepath.Join(dir, name)); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", name, err == nil, want)
		}
	}
}
