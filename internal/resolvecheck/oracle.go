package resolvecheck

import (
	"bytes"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Options says which merge an oracle models.
type Options struct {
	Paths     []string // the paths scope: only changes at or under these
	TextMerge bool     // merge text files both sides changed, line-wise
}

// Expect is what an oracle expects of a merge: the conflicting paths, or
// when there are none the target's tree after the merge.
type Expect struct {
	Conflicts []string
	Tree      Tree // nil when in conflict
	Reasons   map[string]string
}

// Clean reports whether the merge is expected to apply.
func (x *Expect) Clean() bool { return len(x.Conflicts) == 0 }

func (x *Expect) conflict(p, reason string) {
	x.Conflicts = append(x.Conflicts, p)
	x.Reasons[p] = reason
}

// Merge models the filesystem and paths scopes: a three-way merge at path
// granularity of the run's tree theirs into the target's tree ours, both
// descended from base. It is written from the promise, not from the code:
//
//   - a path the run changed (its signature differs from base's) is taken
//     when the target still has base's version, has converged when the
//     target has the run's version, and is otherwise a conflict (or, with
//     TextMerge, merged line-wise when all three are text files whose edits
//     touch different lines and whose modes merge);
//   - taking the removal of a directory (deletion, or a change of type) is a
//     conflict when anything the target has below it differs from base:
//     nothing the target did may be lost;
//   - a write needs its parent to be a directory in the target (after what
//     the merge takes): otherwise it is a conflict.
//
// With Paths, only changes at or under those paths are merged, plus the
// directories the run created above them.
func Merge(base, ours, theirs Tree, o Options) *Expect {
	x := &Expect{Reasons: map[string]string{}}
	result := ours.Clone()
	for _, p := range selected(changed(base, theirs), base, theirs, o.Paths) {
		b, t, u := base[p], theirs[p], ours[p]
		switch {
		case Same(u, t):
			continue
		case !Same(u, b):
			merged, reason := bothChanged(b, t, u, o.TextMerge)
			if merged == nil {
				x.conflict(p, reason)
				continue
			}
			if !result.IsDir(path.Dir(p)) {
				x.conflict(p, "parent is not a directory in the target")
				continue
			}
			result[p] = merged
			continue
		}
		if reason := take(result, base, ours, p, t); reason != "" {
			x.conflict(p, reason)
		}
	}
	if x.Clean() {
		x.Tree = result
	}
	sort.Strings(x.Conflicts)
	return x
}

// take makes p in result what theirs has (t, nil when deleted), or returns
// why it cannot.
func take(result, base, ours Tree, p string, t *Node) string {
	if (t == nil || t.Type != Dir) && result.IsDir(p) {
		for _, q := range ours.Under(p) {
			if !Same(ours[q], base[q]) {
				return "run removes a directory where the target changed " + q
			}
		}
	}
	if t == nil {
		result.RemoveAll(p)
		return ""
	}
	if !result.IsDir(path.Dir(p)) {
		return "parent is not a directory in the target"
	}
	if t.Type == Dir && result.IsDir(p) {
		result[p].Perm = t.Perm
		return ""
	}
	result.RemoveAll(p)
	n := t.Clone()
	n.Link = ""
	result[p] = n
	return ""
}

// changed returns the paths whose signature differs between base and
// theirs, sorted (a directory before what is below it).
func changed(base, theirs Tree) []string {
	var out []string
	for _, t := range []Tree{base, theirs} {
		for p := range t {
			if !Same(base[p], theirs[p]) {
				out = append(out, p)
			}
		}
	}
	return dedup(out)
}

func dedup(ps []string) []string {
	sort.Strings(ps)
	out := ps[:0]
	for i, p := range ps {
		if i == 0 || p != ps[i-1] {
			out = append(out, p)
		}
	}
	return out
}

// selected narrows changes to those at or under paths, plus the directories
// the run made (added, or turned into directories) above them.
func selected(changes []string, base, theirs Tree, paths []string) []string {
	if len(paths) == 0 {
		return changes
	}
	var out []string
	for _, p := range changes {
		if !underAny(p, paths) {
			continue
		}
		out = append(out, p)
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if theirs.IsDir(d) && !base.IsDir(d) {
				out = append(out, d)
			}
		}
	}
	return dedup(out)
}

func underAny(p string, roots []string) bool {
	for _, r := range roots {
		if r == "." || p == r || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}

// bothChanged returns what a path both sides changed differently merges
// to, or nil and why it cannot.
func bothChanged(b, t, u *Node, textMerge bool) (*Node, string) {
	if !textMerge || !isText(b) || !isText(t) || !isText(u) {
		return nil, "changed in both"
	}
	perm, ok := merge3Perm(b.Perm, t.Perm, u.Perm)
	if !ok {
		return nil, "modes changed differently in both"
	}
	data, ok := mergeLines(b.Data, t.Data, u.Data)
	if !ok {
		return nil, "overlapping text changes"
	}
	return &Node{Type: File, Perm: perm, Data: data}, ""
}

func isText(n *Node) bool { return n != nil && n.Type == File && bytes.IndexByte(n.Data, 0) < 0 }

func merge3Perm(b, t, u fs.FileMode) (fs.FileMode, bool) {
	switch {
	case t == u || u == b:
		return t, true
	case t == b:
		return u, true
	}
	return 0, false
}

// mergeLines merges line-wise three texts of the same number of lines, as
// the generator makes them (line replacements ten lines apart or on the
// same line). Texts of different lengths do not merge.
func mergeLines(b, t, u []byte) ([]byte, bool) {
	switch {
	case bytes.Equal(t, u) || bytes.Equal(u, b):
		return t, true // one side changed the text (or both alike): any diff3 takes it
	case bytes.Equal(t, b):
		return u, true
	}
	bl, tl, ul := bytes.SplitAfter(b, []byte("\n")), bytes.SplitAfter(t, []byte("\n")), bytes.SplitAfter(u, []byte("\n"))
	if len(bl) != len(tl) || len(bl) != len(ul) {
		return nil, false
	}
	var out [][]byte
	for i := range bl {
		switch {
		case bytes.Equal(tl[i], ul[i]) || bytes.Equal(ul[i], bl[i]):
			out = append(out, tl[i])
		case bytes.Equal(tl[i], bl[i]):
			out = append(out, ul[i])
		default:
			return nil, false
		}
	}
	return bytes.Join(out, nil), true
}
