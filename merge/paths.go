package merge

import (
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"

	"github.com/tinehq/tine/fstree"
)

// stagingPrefix starts the name of the staging directory Apply makes at the
// root of the target. Paths under such a name are never planned or applied.
const stagingPrefix = ".tine-merge-"

// maxLinkHops bounds how many symlinks CheckPaths follows for one path.
const maxLinkHops = 255

// CheckPaths validates the paths of a --paths merge against the workspace
// directory root and returns them cleaned, slash-separated and without
// duplicates. It rejects an empty path, an absolute path, a path with a ".."
// component, a path inside a merge's staging directory, and a path that
// resolves outside root through symlinks (each symlink is evaluated within
// root; an absolute target is read as the workspace sees it, relative to
// workspace, the absolute path every run's processes see root's files at).
// A path that does not exist is accepted: the run may have created it.
// Errors wrap tine.ErrInvalid and name the bad path.
func CheckPaths(root, workspace string, paths []string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, p := range paths {
		clean, err := cleanUserPath(p)
		if err == nil {
			err = checkInside(root, workspace, clean)
		}
		if err != nil {
			return nil, fmt.Errorf("merge: path %q: %w", p, err)
		}
		if !seen[clean] {
			seen[clean] = true
			out = append(out, clean)
		}
	}
	return out, nil
}

// cleanUserPath returns p as a clean slash path relative to the workspace,
// or an error wrapping tine.ErrInvalid.
func cleanUserPath(p string) (string, error) {
	slash := filepath.ToSlash(p)
	switch {
	case p == "":
		return "", fmt.Errorf("empty path: %w", tine.ErrInvalid)
	case strings.HasPrefix(slash, "/") || filepath.IsAbs(p):
		return "", fmt.Errorf("absolute path, want one relative to the workspace: %w", tine.ErrInvalid)
	}
	for _, part := range strings.Split(slash, "/") {
		if part == ".." {
			return "", fmt.Errorf("\"..\" is not allowed: %w", tine.ErrInvalid)
		}
	}
	clean := path.Clean(slash)
	if isStagingPath(clean) {
		return "", fmt.Errorf("inside tine's merge staging: %w", tine.ErrInvalid)
	}
	return clean, nil
}

// checkRel returns an error unless p is a clean relative slash path that
// names something inside a workspace (not the workspace itself).
func checkRel(p string) error {
	clean, err := cleanUserPath(p)
	if err != nil {
		return err
	}
	if clean != p || clean == "." {
		return fmt.Errorf("%q is not a clean relative path: %w", p, tine.ErrInvalid)
	}
	return nil
}

// isStagingPath reports whether slash path rel is, or is under, a merge's
// staging directory at the workspace root.
func isStagingPath(rel string) bool {
	first, _, _ := strings.Cut(rel, "/")
	return strings.HasPrefix(first, stagingPrefix)
}

// checkInside resolves the clean relative path rel under root, following
// symlinks as if root were "/", and fails if any step leaves root.
func checkInside(root, workspace, rel string) error {
	todo := splitRel(rel)
	var at []string // resolved components, all inside root
	for hops := 0; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		cur := append(at, name)
		target, err := fstree.Readlink(filepath.Join(root, filepath.FromSlash(path.Join(cur...))))
		if err != nil {
			at = cur // not a symlink, or missing: nothing to follow
			continue
		}
		if hops++; hops > maxLinkHops {
			return fmt.Errorf("too many symlinks: %w", tine.ErrInvalid)
		}
		next, err := linkInside(workspace, at, target)
		if err != nil {
			return err
		}
		at, todo = nil, append(next, todo...)
	}
	return nil
}

// linkInside returns the components, from the workspace's root, that a
// symlink in directory dir (components from the root) pointing at target
// leads to, or an error when the target leaves the workspace, whose
// absolute path is workspace.
func linkInside(workspace string, dir []string, target string) ([]string, error) {
	t := filepath.ToSlash(target)
	if strings.HasPrefix(t, "/") || filepath.IsAbs(target) {
		rel, err := filepath.Rel(workspace, target)
		if err != nil || rel == ".." || strings.HasPrefix(filepath.ToSlash(rel), "../") {
			return nil, fmt.Errorf("symlink to %q leads outside the workspace: %w", target, tine.ErrInvalid)
		}
		return splitRel(filepath.ToSlash(rel)), nil
	}
	joined := path.Join(append(append([]string{}, dir...), t)...)
	if joined == ".." || strings.HasPrefix(joined, "../") {
		return nil, fmt.Errorf("symlink to %q leads outside the workspace: %w", target, tine.ErrInvalid)
	}
	return splitRel(joined), nil
}

// splitRel splits a clean slash path into its components; "." has none.
func splitRel(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// underAny reports whether slash path p is one of roots or beneath one.
func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if r == "." || p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}
