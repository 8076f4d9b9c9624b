package resolvecheck

import (
	"testing"
)

// regression runs case c, which shows the known bug feature, on overlay and
// copy; while the bug is listed in knownBugs it skips, unless
// TINE_KNOWN_BUGS is set.
func regression(t *testing.T, feature string, c *Case) {
	t.Helper()
	if b, ok := knownBugs[feature]; ok && known(&Failure{Features: []string{feature}, Msg: b.signs[0]}) != "" {
		t.Skip("known bug, " + b.fix + "; TINE_KNOWN_BUGS=1 runs it")
	}
	for _, be := range []string{"overlay", "copy"} {
		t.Run(be, func(t *testing.T) {
			v := newEnv(t, be)
			if f := v.Run(c); f != nil {
				t.Fatalf("%v\ncase:\n%v", f, c)
			}
		})
	}
}

func textNode() *Node { return &Node{Type: File, Perm: 0o644, Data: NewGen(1).Text()} }

// A fork adds a file in a new directory; the git scope must create it.
func TestRegression_GitNewDirectory(t *testing.T) {
	regression(t, "git-new-directory", &Case{Scope: scopeGit,
		Base:   Tree{"a.txt": textNode()},
		Theirs: Script{&MkdirAll{Path: "newdir", Perm: 0o755}, &Put{Path: "newdir/f", Node: textNode()}},
	})
}

// The fork deletes a directory the source has from its base layer.
func TestRegression_DeleteLowerDirectory(t *testing.T) {
	regression(t, "delete-lower-directory", &Case{Scope: scopeFS,
		Base:   Tree{"dir": {Type: Dir, Perm: 0o755}, "dir/f": textNode(), "keep": textNode()},
		Theirs: Script{&Remove{Path: "dir"}},
	})
}

// The fork replaces a base-layer directory by a file.
func TestRegression_LowerDirectoryToFile(t *testing.T) {
	regression(t, "delete-lower-directory", &Case{Scope: scopeFS,
		Base:   Tree{"dir": {Type: Dir, Perm: 0o755}, "dir/f": textNode()},
		Theirs: Script{&Replace{Path: "dir", Node: textNode()}},
	})
}

// The fork replaces a base-layer directory by a symlink.
func TestRegression_LowerDirectoryToSymlink(t *testing.T) {
	regression(t, "delete-lower-directory", &Case{Scope: scopeFS,
		Base:   Tree{"dir": {Type: Dir, Perm: 0o755}, "dir/f": textNode(), "other": {Type: Dir, Perm: 0o755}},
		Theirs: Script{&Replace{Path: "dir", Node: &Node{Type: Symlink, Target: "other"}}},
	})
}

// The git scope too replaces a base-layer directory by a file.
func TestRegression_GitLowerDirectoryToFile(t *testing.T) {
	regression(t, "delete-lower-directory", &Case{Scope: scopeGit,
		Base:   Tree{"dir": {Type: Dir, Perm: 0o755}, "dir/f": textNode()},
		Theirs: Script{&Replace{Path: "dir", Node: textNode()}},
	})
}

// The source had an uncommitted edit to A when forked; the fork edits A
// further. The git scope's base must be the fork-point files.
func TestRegression_GitUncommittedAtFork(t *testing.T) {
	regression(t, "git-uncommitted-at-fork", &Case{Scope: scopeGit,
		Base:    Tree{"A": textNode()},
		PreFork: Script{&EditLine{Path: "A", Line: 2, Text: "uncommitted in the source"}},
		Theirs:  Script{&EditLine{Path: "A", Line: 2, Text: "and further in the fork"}},
	})
}

// Found by the harness (seed 3, git scope): the fork renames d/docs to b,
// the source deletes d. The deletion has converged and b is new to the
// target: the merge is clean, but the git scope plans the rename as one
// patch section that no longer applies.
func TestRegression_GitRenameFromDeletedDirectory(t *testing.T) {
	regression(t, "git-rename-source-gone", &Case{Scope: scopeGit,
		Base:   Tree{"d": {Type: Dir, Perm: 0o755}, "d/docs": textNode()},
		Theirs: Script{&Rename{From: "d/docs", To: "b"}},
		Ours:   Script{&Remove{Path: "d"}},
	})
}

// Found by the harness (seed 1796124137550389281, git scope): the source
// replaces directory a/b by a symlink to itself, the fork adds a file in
// a/b/c. That is a conflict, not an error: planning must not resolve paths
// through the target's symlinks.
func TestRegression_GitSymlinkLoopInTarget(t *testing.T) {
	regression(t, "git-symlink-loop-parent", &Case{Scope: scopeGit,
		Base:   Tree{"a": {Type: Dir, Perm: 0o755}, "a/b": {Type: Dir, Perm: 0o755}, "a/b/c": {Type: Dir, Perm: 0o755}, "keep": textNode()},
		Theirs: Script{&Put{Path: "a/b/c/f", Node: textNode()}},
		Ours:   Script{&Replace{Path: "a/b", Node: &Node{Type: Symlink, Target: "../a/b/x"}}},
	})
}

// Found by the harness (seed 1796124271050980265, paths scope): the fork
// removes directory d; the merge names only d/docs. The plan deletes
// d/docs and then d, which still holds d/other: apply refuses ("gained
// entries since planning") although nothing changed. The removal of d is
// outside the paths and must not be planned.
func TestRegression_PathsInsideRemovedDirectory(t *testing.T) {
	regression(t, "paths-inside-removed-directory", &Case{Scope: scopePaths, Paths: []string{"d/docs"},
		Base:   Tree{"d": {Type: Dir, Perm: 0o755}, "d/docs": {Type: Dir, Perm: 0o755}, "d/other": textNode()},
		Theirs: Script{&Remove{Path: "d"}},
	})
}

// Found by the harness (seed 1796124386834607208, git scope), a regression
// of the git-scope base fix: the fork replaces directory d by a symlink;
// staging the run's paths asks git add for d/f, beyond the symlink.
func TestRegression_GitDirectoryToSymlink(t *testing.T) {
	regression(t, "git-dir-to-symlink", &Case{Scope: scopeGit,
		Base:   Tree{"d": {Type: Dir, Perm: 0o755}, "d/f": textNode()},
		Theirs: Script{&Replace{Path: "d", Node: &Node{Type: Symlink, Target: "/etc/hostname"}}},
	})
}

// Found by CI (seed 1796163216800782520, git scope): the fork replaces
// directory d by a file; the source replaced d/l, a symlink the fork's
// change deletes, by an empty directory. git sees nothing at d/l, but
// applying the file would remove the source's new directory: a conflict.
func TestRegression_GitEmptyDirectoryInReplacedDirectory(t *testing.T) {
	regression(t, "git-empty-dir-under-replaced", &Case{Scope: scopeGit,
		Base:   Tree{"d": {Type: Dir, Perm: 0o755}, "d/l": {Type: Symlink, Target: "../outside"}},
		Theirs: Script{&Replace{Path: "d", Node: textNode()}},
		Ours:   Script{&Replace{Path: "d/l", Node: &Node{Type: Dir, Perm: 0o750}}},
	})
}

// The same one level further down: the source's new directory d/l holds
// only an empty directory.
func TestRegression_GitEmptyDirectoriesInReplacedDirectory(t *testing.T) {
	regression(t, "git-empty-dir-under-replaced", &Case{Scope: scopeGit,
		Base:   Tree{"d": {Type: Dir, Perm: 0o755}, "d/l": {Type: Symlink, Target: "../outside"}},
		Theirs: Script{&Replace{Path: "d", Node: textNode()}},
		Ours:   Script{&Replace{Path: "d/l", Node: &Node{Type: Dir, Perm: 0o750}}, &MkdirAll{Path: "d/l/e", Perm: 0o755}},
	})
}
