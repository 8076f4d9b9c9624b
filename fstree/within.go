package fstree

import "path/filepath"

// Within reports whether path is dir or below it, lexically (neither is
// resolved on disk).
func Within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}
