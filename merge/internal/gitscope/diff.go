package gitscope

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tinehq/tine/layer"
)

// change is one entry of the raw diff and its sections of the patch (two
// for a type change, which git writes as a deletion and a creation).
type change struct {
	status           byte // A, C, D, M, R or T
	oldMode, newMode uint32
	oldID, newID     string
	oldPath, newPath string // equal but for renames and copies
	sections         [][]byte
	reason           string // why the change cannot be applied to ours
	direct           bool   // ours still has the fork point's version: the run's is taken as is
	quick            bool   // decided from the files, not by git (quickPlanner): direct, without sections
	bytes            int64  // with quick, the size of the run's version
}

// parseDiff parses the output of diff --patch-with-raw -z.
func parseDiff(out []byte) ([]*change, error) {
	var changes []*change
	for len(out) > 0 && out[0] == ':' {
		c, rest, err := parseRecord(out)
		if err != nil {
			return nil, err
		}
		changes, out = append(changes, c), rest
	}
	sections := splitPatch(bytes.TrimPrefix(out, []byte{0}))
	for _, c := range changes {
		n := 1
		if c.status == 'T' {
			n = 2
		}
		if len(sections) < n {
			return nil, errors.New("merge: git diff: fewer patch sections than changes")
		}
		c.sections, sections = sections[:n], sections[n:]
		for k := range c.sections {
			c.sections[k] = nameLines(c.sections[k], c.oldPath, c.newPath)
		}
	}
	if len(sections) != 0 {
		return nil, errors.New("merge: git diff: more patch sections than changes")
	}
	return changes, nil
}

// nameLines gives a patch section without ---/+++ lines (an empty file
// added or deleted, a mode change, a binary patch) those lines when its
// names hold a space: git apply cannot tell the two names of such a
// header apart ("diff --git a/x /y b/x /y") and refuses the whole patch.
// Quoted headers are unambiguous and left alone, as are sections that have
// the lines.
func nameLines(sec []byte, oldPath, newPath string) []byte {
	if !strings.Contains(oldPath+newPath, " ") || bytes.HasPrefix(sec, []byte(`diff --git "`)) {
		return sec
	}
	lines := bytes.SplitAfter(sec, []byte("\n"))
	at := len(lines)
	for i, l := range lines[1:] {
		if bytes.HasPrefix(l, []byte("--- ")) {
			return sec
		}
		if bytes.HasPrefix(l, []byte("@@")) || bytes.HasPrefix(l, []byte("GIT binary patch")) {
			at = i + 1
			break
		}
	}
	old, new := "a/"+oldPath+"\t", "b/"+newPath+"\t"
	header := string(bytes.Join(lines[:at], nil))
	if strings.Contains(header, "\nnew file mode ") {
		old = "/dev/null"
	}
	if strings.Contains(header, "\ndeleted file mode ") {
		new = "/dev/null"
	}
	names := []byte("--- " + old + "\n+++ " + new + "\n")
	return slices.Concat(bytes.Join(lines[:at], nil), names, bytes.Join(lines[at:], nil))
}

// parseRecord parses one raw record, ":old new oldid newid status\0path\0"
// with a second path for renames and copies.
func parseRecord(b []byte) (*change, []byte, error) {
	head, b, _ := bytes.Cut(b[1:], []byte{0})
	f := strings.Fields(string(head))
	if len(f) != 5 || f[4] == "" {
		return nil, nil, fmt.Errorf("merge: git diff: bad raw record %q", head)
	}
	c := &change{status: f[4][0], oldID: f[2], newID: f[3]}
	om, err1 := strconv.ParseUint(f[0], 8, 32)
	nm, err2 := strconv.ParseUint(f[1], 8, 32)
	if err := errors.Join(err1, err2); err != nil || !strings.ContainsRune("ACDMRT", rune(c.status)) {
		return nil, nil, fmt.Errorf("merge: git diff: bad raw record %q", head)
	}
	c.oldMode, c.newMode = uint32(om), uint32(nm)
	var p []byte
	p, b, _ = bytes.Cut(b, []byte{0})
	c.oldPath, c.newPath = string(p), string(p)
	if c.status == 'R' || c.status == 'C' {
		p, b, _ = bytes.Cut(b, []byte{0})
		c.newPath = string(p)
	}
	return c, b, nil
}

// splitPatch cuts a patch into its "diff --git" sections. No other line of
// a patch starts so: hunk lines start with a space, +, - or \, and the base85
// lines of a binary patch have no spaces.
func splitPatch(patch []byte) [][]byte {
	const header = "diff --git "
	var out [][]byte
	for len(patch) > 0 {
		next := bytes.Index(patch[1:], []byte("\n"+header))
		if next < 0 {
			return append(out, patch)
		}
		out, patch = append(out, patch[:next+2]), patch[next+2:]
	}
	return out
}

// paths returns the paths the change touches in the target.
func (c *change) paths() []string {
	if c.oldPath == c.newPath {
		return []string{c.newPath}
	}
	return []string{c.oldPath, c.newPath}
}

// side is what a change does to one path.
type side struct {
	path    string
	kind    layer.Kind
	mode    uint32 // the mode it gets, 0 when deleted
	oldMode uint32
	id      string // the blob it gets
}

// sides returns what the change does to each path, a rename being the
// deletion of its old path and the addition of its new one.
func (c *change) sides() []side {
	del := side{path: c.oldPath, kind: layer.Deleted, oldMode: c.oldMode}
	put := side{path: c.newPath, kind: layer.Modified, mode: c.newMode, oldMode: c.oldMode, id: c.newID}
	switch c.status {
	case 'D':
		return []side{del}
	case 'R':
		put.kind, put.oldMode = layer.Added, 0
		return []side{del, put}
	case 'A', 'C':
		put.kind, put.oldMode = layer.Added, 0
	case 'T':
		put.kind = layer.TypeChanged
	}
	return []side{put}
}

// typeOf names a git mode's type as plan.Entry.Type does.
func typeOf(mode uint32) string {
	switch mode {
	case modeFile, modeExec:
		return "file"
	case modeSymlink:
		return "symlink"
	}
	return "other"
}
