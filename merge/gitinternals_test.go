package merge

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// leftOut returns path → reason of what p left out.
func leftOut(p *Plan) map[string]string {
	out := map[string]string{}
	for _, l := range p.LeftOut {
		out[l.Path] = l.Reason
	}
	return out
}

// gitBase is a workspace with a repository, as a fork starts from it.
func gitBase() tree {
	return tree{
		"main.go": file("package main\n"), ".git": dir(), ".git/HEAD": file("ref: refs/heads/main\n"),
		".git/config": file("[core]\n\tbare = false\n"), ".git/hooks": dir(),
		".git/hooks/pre-commit.sample": file("#!/bin/sh\n"), ".git/objects": dir(), ".git/refs": dir(),
		".git/refs/heads": dir(), ".git/refs/heads/main": file("1111\n"), ".git/index": file("DIRC1"),
		".git/info": dir(), ".git/info/exclude": file("# exclude\n"),
	}
}

// A fork that writes a hook and an fsmonitor into the repository's
// config has them left out of a filesystem merge (the plan says so),
// while its commits' objects, refs, index and files merge; with
// IncludeGitInternals everything merges.
func TestPlanFiles_LeavesOutGitInternals(t *testing.T) {
	base := gitBase()
	theirs := base.clone()
	theirs["main.go"] = file("package main // edited\n")
	theirs[".git/hooks/pre-commit"] = fileMode("#!/bin/sh\ntouch /tmp/pwned\n", 0o755)
	theirs[".git/config"] = file("[core]\n\tbare = false\n\tfsmonitor = /tmp/evil\n")
	theirs[".git/info/attributes"] = file("* filter=evil\n")
	theirs[".git/info/exclude"] = file("# exclude\n*.log\n")
	theirs[".git/objects/ab"] = dir()
	theirs[".git/objects/ab/cdef"] = file("blob")
	theirs[".git/refs/heads/main"] = file("2222\n")
	theirs[".git/index"] = file("DIRC2")
	theirs[".git/logs"] = dir()
	theirs[".git/logs/HEAD"] = file("1111 2222 commit\n")
	theirs[".git/COMMIT_EDITMSG"] = file("edit\n")
	theirs[".git/rebase-merge"] = dir()
	theirs[".git/rebase-merge/git-rebase-todo"] = file("exec sh -c evil\n")
	s := makeSides(t, base, theirs, base)

	p := planSides(t, s, PlanOptions{})
	wantTaken := map[string]string{
		"main.go": "take", ".git/objects/ab": "take", ".git/objects/ab/cdef": "take",
		".git/refs/heads/main": "take", ".git/index": "take", ".git/logs": "take", ".git/logs/HEAD": "take",
		".git/COMMIT_EDITMSG": "take", ".git/info/exclude": "take",
	}
	if d := cmp.Diff(wantTaken, actions(p)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	wantLeft := map[string]string{
		".git/hooks/pre-commit": reasonInternal, ".git/config": reasonInternal, ".git/info/attributes": reasonInternal,
		".git/rebase-merge": reasonInternal, ".git/rebase-merge/git-rebase-todo": reasonInternal,
	}
	if d := cmp.Diff(wantLeft, leftOut(p)); d != "" {
		t.Errorf("left out (-want +got):\n%s", d)
	}

	all := planSides(t, s, PlanOptions{IncludeGitInternals: true})
	if len(all.LeftOut) != 0 || len(all.Entries) != len(wantTaken)+len(wantLeft) {
		t.Errorf("with IncludeGitInternals: %d entries, left out %v; want %d and none",
			len(all.Entries), leftOut(all), len(wantTaken)+len(wantLeft))
	}
}

func TestPlanFiles_GitInternalsEverywhere(t *testing.T) {
	tests := []struct {
		name         string
		base, theirs tree
		paths        []string
		taken, left  map[string]string
	}{{
		name:   "NestedRepository",
		base:   tree{"vendor": dir()},
		theirs: tree{"vendor": dir(), "vendor/lib": dir(), "vendor/lib/.git": dir(), "vendor/lib/.git/config": file("x"), "vendor/lib/.git/HEAD": file("ref\n"), "vendor/lib/a.c": file("a")},
		taken:  map[string]string{"vendor/lib": "take", "vendor/lib/.git": "take", "vendor/lib/.git/HEAD": "take", "vendor/lib/a.c": "take"},
		left:   map[string]string{"vendor/lib/.git/config": reasonInternal},
	}, {
		name:   "GitfileRedirect",
		base:   tree{"sub": dir(), "sub/a": file("a")},
		theirs: tree{"sub": dir(), "sub/a": file("a"), "sub/.GIT": file("gitdir: ../evil\n")},
		left:   map[string]string{"sub/.GIT": reasonGitfile},
		taken:  map[string]string{},
	}, {
		name:   "RemovedRepositoryAndTheDirAboveIt",
		base:   tree{"sub": dir(), "sub/.git": dir(), "sub/.git/config": file("c"), "sub/.git/HEAD": file("h"), "sub/a": file("a")},
		theirs: tree{},
		left:   map[string]string{"sub": reasonAbove, "sub/.git": reasonGitfile, "sub/.git/config": reasonInternal},
		taken:  map[string]string{"sub/.git/HEAD": "take", "sub/a": "take"},
	}, {
		name: "SubmoduleNamedLikeData",
		base: tree{".git": dir(), ".git/modules": dir()},
		theirs: tree{".git": dir(), ".git/modules": dir(), ".git/modules/objects": dir(), ".git/modules/objects/HEAD": file("h"),
			".git/modules/objects/hooks": dir(), ".git/modules/objects/hooks/post-checkout": file("evil"),
			".git/modules/a": dir(), ".git/modules/a/b": dir(), ".git/modules/a/b/HEAD": file("h"),
			".git/modules/a/b/objects": dir(), ".git/modules/a/b/objects/x": file("o"), ".git/modules/a/b/config": file("c")},
		taken: map[string]string{".git/modules/objects": "take", ".git/modules/objects/HEAD": "take", ".git/modules/a": "take",
			".git/modules/a/b": "take", ".git/modules/a/b/HEAD": "take", ".git/modules/a/b/objects": "take", ".git/modules/a/b/objects/x": "take"},
		left: map[string]string{".git/modules/objects/hooks": reasonInternal, ".git/modules/objects/hooks/post-checkout": reasonInternal,
			".git/modules/a/b/config": reasonInternal},
	}, {
		name: "Worktree",
		base: tree{".git": dir()},
		theirs: tree{".git": dir(), ".git/worktrees": dir(), ".git/worktrees/w": dir(), ".git/worktrees/w/HEAD": file("h"),
			".git/worktrees/w/commondir": file("/elsewhere"), ".git/worktrees/w/config.worktree": file("c")},
		taken: map[string]string{".git/worktrees": "take", ".git/worktrees/w": "take", ".git/worktrees/w/HEAD": "take"},
		left:  map[string]string{".git/worktrees/w/commondir": reasonInternal, ".git/worktrees/w/config.worktree": reasonInternal},
	}, {
		name:   "PathsNamingGit",
		base:   gitBase(),
		theirs: func() tree { tr := gitBase(); tr[".git/hooks/post-checkout"] = file("evil"); return tr }(),
		paths:  []string{".git/hooks"},
		taken:  map[string]string{},
		left:   map[string]string{".git/hooks/post-checkout": reasonInternal},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := planSides(t, makeSides(t, tt.base, tt.theirs, tt.base), PlanOptions{Paths: tt.paths})
			if d := cmp.Diff(tt.taken, actions(p)); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.left, leftOut(p)); d != "" {
				t.Errorf("left out (-want +got):\n%s", d)
			}
		})
	}
}
