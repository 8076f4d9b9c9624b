package merge

import (
	"path"
	"slices"
	"strings"

	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge/internal/plan"
)

// Why a filesystem or paths merge leaves a change out.
const (
	// reasonInternal: the path is in a git directory, and not one of the
	// parts of it that only hold data (objects, refs, logs, the index).
	reasonInternal = "repository internals: git runs what they say (hooks, config)"
	// reasonGitfile: a .git that is not a directory sends git elsewhere.
	reasonGitfile = "a .git that is not a directory points git at another repository"
	// reasonAbove: the change would remove a directory holding left-out
	// internals.
	reasonAbove = "removing it would remove repository internals left out below it"
)

// gitDataDirs are the directories of a git directory that hold only data:
// everything beneath them is carried.
var gitDataDirs = map[string]bool{"objects": true, "refs": true, "logs": true}

// gitDataFiles are the files of a git directory that hold only data. What
// is in neither list (config, config.worktree, hooks, info/attributes,
// commondir, gitdir, rebase-merge's todo list with its exec lines, and
// whatever a later git adds) is internal.
var gitDataFiles = map[string]bool{
	"HEAD": true, "ORIG_HEAD": true, "FETCH_HEAD": true, "MERGE_HEAD": true,
	"CHERRY_PICK_HEAD": true, "REVERT_HEAD": true, "BISECT_HEAD": true,
	"AUTO_MERGE": true, "index": true, "packed-refs": true, "shallow": true,
	"description": true, "COMMIT_EDITMSG": true, "MERGE_MSG": true,
	"MERGE_MODE": true, "SQUASH_MSG": true, "info/exclude": true, "info/refs": true,
}

// gitHolders are the directories of a git directory that hold more of
// them: themselves carried, what is inside judged on its own.
var gitHolders = map[string]bool{"info": true, "modules": true, "worktrees": true}

// leaveOut withholds from changes, sorted by path, what a merge carries
// only when asked to (PlanOptions.IncludeGitInternals): the internals of
// every git directory in the workspace (gitInternal), and the removal of
// a directory above one of them. It returns the changes to plan and those
// left out, both sorted by path.
func (p *fsPlanner) leaveOut(changes []layer.Change) ([]layer.Change, []LeftOut, error) {
	var keep []layer.Change
	var out []LeftOut
	above := map[string]bool{} // directories above a left-out path
	for _, c := range changes {
		reason, err := p.gitInternal(c)
		if err != nil {
			return nil, nil, err
		}
		if reason == "" {
			keep = append(keep, c)
			continue
		}
		out = append(out, LeftOut{Path: c.Path, Change: c.Kind, Type: c.Type, Reason: reason})
		for d := path.Dir(c.Path); d != "." && !above[d]; d = path.Dir(d) {
			above[d] = true
		}
	}
	if len(out) == 0 {
		return keep, nil, nil
	}
	n := 0
	for _, c := range keep {
		if above[c.Path] && removesDir(c) {
			out = append(out, LeftOut{Path: c.Path, Change: c.Kind, Type: c.Type, Reason: reasonAbove})
			continue
		}
		keep[n] = c
		n++
	}
	sortLeftOut(out)
	return keep[:n], out, nil
}

// removesDir reports whether change c takes away a directory: deletes it
// or puts something else in its place.
func removesDir(c layer.Change) bool {
	if c.Kind == layer.Deleted {
		return c.Type == "dir"
	}
	return c.Type != "dir"
}

// gitInternal returns why change c touches a git directory's internals,
// or "" when it does not. A git directory is any directory named .git
// (in any case, as git treats it on a case-insensitive filesystem), at
// any depth: the workspace's repository and every one nested in it. The
// .git entry itself is internal unless the run leaves a directory there
// (a file there redirects git, a deletion removes the repository).
func (p *fsPlanner) gitInternal(c layer.Change) (string, error) {
	parts := strings.Split(c.Path, "/")
	for i, name := range parts {
		if !strings.EqualFold(name, ".git") {
			continue
		}
		rest := parts[i+1:]
		if len(rest) == 0 {
			if c.Type == "dir" && c.Kind != layer.Deleted {
				return "", nil
			}
			return reasonGitfile, nil
		}
		data, err := p.gitData(strings.Join(parts[:i+1], "/"), rest, c.Type == "dir")
		if err != nil || data {
			return "", err
		}
		return reasonInternal, nil
	}
	return "", nil
}

// gitData reports whether path rest, below the git directory gitDir, only
// holds data; isDir says whether it is a directory. Worktrees' git
// directories (worktrees/NAME) and submodules' (modules/NAME, whose NAME
// may span several components) are judged the same way.
func (p *fsPlanner) gitData(gitDir string, rest []string, isDir bool) (bool, error) {
	first := rest[0]
	switch {
	case gitDataDirs[first]:
		return true, nil
	case len(rest) == 1 && isDir && gitHolders[first]:
		return true, nil
	case len(rest) <= 2 && gitDataFiles[strings.Join(rest, "/")]:
		return true, nil
	case first == "worktrees" && len(rest) == 2:
		return isDir, nil
	case first == "worktrees":
		return p.gitData(gitDir+"/worktrees/"+rest[1], rest[2:], isDir)
	case first == "modules":
		return p.moduleData(gitDir+"/modules", rest[1:], isDir)
	}
	return false, nil
}

// moduleData reports whether path rest below modules, the directory of a
// git directory holding its submodules' own, only holds data. A
// submodule's name may hold slashes, so where its git directory ends is
// found on disk: every prefix of rest with a HEAD file on any side (base,
// run or target) is a git directory, and the path is data only if it is
// data below each of them. Below none, only a directory is.
func (p *fsPlanner) moduleData(modules string, rest []string, isDir bool) (bool, error) {
	found := false
	for i := 1; i < len(rest); i++ {
		dir := modules + "/" + strings.Join(rest[:i], "/")
		head, err := p.anySide(dir + "/HEAD")
		if err != nil {
			return false, err
		}
		if !head {
			continue
		}
		found = true
		if data, err := p.gitData(dir, rest[i:], isDir); err != nil || !data {
			return false, err
		}
	}
	return found || isDir, nil
}

// anySide reports whether rel is there, and not below a symlink, in base,
// the run or the target.
func (p *fsPlanner) anySide(rel string) (bool, error) {
	for _, v := range []*plan.View{p.base, p.theirs, p.ours} {
		fi, _, err := v.Lstat(rel)
		if err != nil || fi != nil {
			return fi != nil, err
		}
	}
	return false, nil
}

// sortLeftOut sorts left-out changes by path.
func sortLeftOut(out []LeftOut) {
	slices.SortFunc(out, func(a, b LeftOut) int { return cmpPath(a.Path, b.Path) })
}
