package resolvecheck

import (
	"bytes"
	"io/fs"
	"path"
	"sort"
)

// GitView is a tree as git sees it: files (with only the executable bit of
// their mode) and symlinks; no directories.
func GitView(t Tree) Tree {
	out := Tree{}
	for p, n := range t {
		switch n.Type {
		case File:
			out[p] = &Node{Type: File, Perm: gitPerm(n.Perm), Data: n.Data}
		case Symlink:
			out[p] = &Node{Type: Symlink, Target: n.Target}
		}
	}
	return out
}

func gitPerm(perm fs.FileMode) fs.FileMode {
	if perm&0o100 != 0 {
		return 0o755
	}
	return 0o644
}

// MergeGit models the git scope: the run's changes as git sees them (files
// and symlinks, the executable bit, content) carried into the target as a
// patch would carry them. A file both sides changed merges when its mode
// and content changes merge (content line-wise, as the generator's line
// edits do); an addition where the target has a directory holding anything
// the patch does not remove, or below a parent that is not a directory in
// the target, is a conflict. The expected tree is the target's GitView.
func MergeGit(base, ours, theirs Tree) *Expect {
	x := &Expect{Reasons: map[string]string{}}
	gb, gt, gu := GitView(base), GitView(theirs), GitView(ours)
	result := gu.Clone()
	deleted := map[string]bool{}
	var adds []string
	for _, p := range changed(gb, gt) {
		b, t, u := gb[p], gt[p], gu[p]
		switch {
		case Same(u, t):
		case t == nil:
			if Same(u, b) {
				delete(result, p)
				deleted[p] = true
			} else {
				x.conflict(p, "deleted in run, changed in target")
			}
		case b == nil || b.Type != t.Type:
			if (b == nil && u == nil) || (b != nil && Same(u, b)) {
				adds = append(adds, p)
				if u != nil {
					deleted[p] = true
				}
			} else {
				x.conflict(p, "added in run, the target has something else")
			}
		default:
			if n, reason := gitModify(b, t, u); n != nil {
				result[p] = n
			} else {
				x.conflict(p, reason)
			}
		}
	}
	for _, p := range adds {
		if reason := gitBlocked(ours, deleted, p); reason != "" {
			x.conflict(p, reason)
			continue
		}
		result[p] = gt[p]
	}
	if x.Clean() {
		x.Tree = result
	}
	sort.Strings(x.Conflicts)
	return x
}

// gitModify merges a path both trees have with the same type in base and
// theirs.
func gitModify(b, t, u *Node) (*Node, string) {
	switch {
	case u == nil:
		return nil, "changed in run, deleted in target"
	case u.Type != b.Type:
		return nil, "changed in run, type changed in target"
	case b.Type == Symlink:
		if Same(u, b) {
			return t, ""
		}
		return nil, "symlink changed in both"
	}
	perm, _ := merge3Perm(b.Perm, t.Perm, u.Perm) // one bit: always merges
	data := t.Data
	switch {
	case bytes.Equal(t.Data, b.Data):
		data = u.Data
	case !bytes.Equal(u.Data, b.Data):
		var ok bool
		if !isText(b) || !isText(t) || !isText(u) {
			return nil, "binary file changed in both"
		}
		if data, ok = mergeLines(b.Data, t.Data, u.Data); !ok {
			return nil, "overlapping changes"
		}
	}
	return &Node{Type: File, Perm: perm, Data: data}, ""
}

// gitBlocked says why an addition at p cannot be applied to the target
// ours, where the paths in deleted go away first: a parent that is not a
// directory (and is not removed), or a directory at p holding more than
// what the patch removes.
func gitBlocked(ours Tree, deleted map[string]bool, p string) string {
	for d := path.Dir(p); d != "."; d = path.Dir(d) {
		if n := ours[d]; n != nil && n.Type != Dir && !deleted[d] {
			return "parent " + d + " is not a directory in the target"
		}
	}
	if !ours.IsDir(p) {
		return ""
	}
	for _, q := range ours.Under(p) {
		if ours[q].Type == Dir {
			if len(ours.Under(q)) == 0 {
				return "the target has a directory there, with an empty directory " + q
			}
			continue
		}
		if !deleted[q] {
			return "the target has a directory there, with files the run does not have"
		}
	}
	return ""
}
