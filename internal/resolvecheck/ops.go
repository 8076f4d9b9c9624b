package resolvecheck

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
)

// Op is one step of an edit script. Its model checks and changes a Tree;
// Do makes the same change to the files under a directory, never through a
// symlink (every parent an op names is a directory in the model).
type Op interface {
	check(t Tree) bool // whether the op applies to t
	model(t Tree)      // apply it to t; only after check
	// Do applies the op to the files under dir, whose tree t is before
	// the op (it is not changed).
	Do(dir string, t Tree) error
	String() string
}

// Script is an edit script.
type Script []Op

// Model returns t after the script (t is not changed). Operations that do
// not apply (after a shrink removed what they needed) are left out.
func (s Script) Model(t Tree) Tree {
	t = t.Clone()
	for _, op := range s {
		if op.check(t) {
			op.model(t)
		}
	}
	return t
}

// Do applies the script to dir, whose tree is t, and returns the tree after.
func (s Script) Do(dir string, t Tree) (Tree, error) {
	t = t.Clone()
	for _, op := range s {
		if !op.check(t) {
			continue
		}
		if err := op.Do(dir, t); err != nil {
			return t, fmt.Errorf("%v: %w", op, err)
		}
		op.model(t)
	}
	return t, nil
}

func (s Script) String() string {
	var b strings.Builder
	for _, op := range s {
		fmt.Fprintf(&b, "  %v\n", op)
	}
	return b.String()
}

func at(dir, rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }

// Put creates Path as Node, or replaces the content and mode of the file
// there when Node is a file too.
type Put struct {
	Path string
	Node *Node
}

func (o *Put) check(t Tree) bool {
	if o.Path == "" || o.Node == nil || !t.IsDir(path.Dir(o.Path)) {
		return false
	}
	old := t[o.Path]
	return old == nil || (old.Type == File && o.Node.Type == File)
}

func (o *Put) model(t Tree) {
	n := o.Node.Clone()
	n.Link = ""
	t[o.Path] = n
}

// Do writes the file in place, or for a hard-linked one writes a new file
// and renames it over the old, so that every backend sees one change.
func (o *Put) Do(dir string, t Tree) error {
	name := at(dir, o.Path)
	if old := t[o.Path]; old != nil && old.Link != "" {
		tmp := filepath.Join(filepath.Dir(name), ".put-tmp")
		if err := WriteFile(tmp, o.Node); err != nil {
			return err
		}
		return os.Rename(tmp, name)
	}
	return create(name, o.Node)
}

func create(name string, n *Node) error {
	switch n.Type {
	case Dir:
		if err := os.Mkdir(name, 0o700); err != nil {
			return err
		}
		return os.Chmod(name, n.Perm)
	case Symlink:
		return os.Symlink(n.Target, name)
	}
	return WriteFile(name, n)
}

func (o *Put) String() string { return fmt.Sprintf("put %q = %s", o.Path, Describe(o.Node)) }

// Replace removes Path (recursively) and creates Node there: a change of type.
type Replace struct {
	Path string
	Node *Node
}

func (o *Replace) check(t Tree) bool {
	old := t[o.Path]
	return old != nil && o.Node != nil && old.Type != o.Node.Type
}

func (o *Replace) model(t Tree) {
	t.RemoveAll(o.Path)
	t[o.Path] = o.Node.Clone()
}

// Do removes the old entry and creates the new one.
func (o *Replace) Do(dir string, _ Tree) error {
	if err := os.RemoveAll(at(dir, o.Path)); err != nil {
		return err
	}
	return create(at(dir, o.Path), o.Node)
}

func (o *Replace) String() string { return fmt.Sprintf("replace %q by %s", o.Path, Describe(o.Node)) }

// Remove removes Path and everything below it.
type Remove struct{ Path string }

func (o *Remove) check(t Tree) bool { return t[o.Path] != nil }
func (o *Remove) model(t Tree)      { t.RemoveAll(o.Path) }

// Do removes the path recursively.
func (o *Remove) Do(dir string, _ Tree) error { return os.RemoveAll(at(dir, o.Path)) }
func (o *Remove) String() string              { return fmt.Sprintf("rm -rf %q", o.Path) }

// MkdirAll makes Path, with mode Perm, and any missing parent (mode 0755).
type MkdirAll struct {
	Path string
	Perm fs.FileMode
}

func (o *MkdirAll) check(t Tree) bool {
	if o.Path == "" || t[o.Path] != nil {
		return false
	}
	for d := path.Dir(o.Path); d != "."; d = path.Dir(d) {
		if n := t[d]; n != nil && n.Type != Dir {
			return false
		}
	}
	return true
}

func (o *MkdirAll) model(t Tree) {
	for d := path.Dir(o.Path); d != "."; d = path.Dir(d) {
		if t[d] == nil {
			t[d] = &Node{Type: Dir, Perm: 0o755}
		}
	}
	t[o.Path] = &Node{Type: Dir, Perm: o.Perm}
}

// Do makes the directories, setting each one's mode whatever the umask.
func (o *MkdirAll) Do(dir string, t Tree) error {
	var missing []string
	for d := o.Path; d != "."; d = path.Dir(d) {
		if t[d] == nil {
			missing = append(missing, d)
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		perm := fs.FileMode(0o755)
		if i == 0 {
			perm = o.Perm
		}
		if err := create(at(dir, missing[i]), &Node{Type: Dir, Perm: perm}); err != nil {
			return err
		}
	}
	return nil
}

func (o *MkdirAll) String() string { return fmt.Sprintf("mkdir -p -m %04o %q", o.Perm, o.Path) }

// Chmod sets the mode of a file or directory that is not hard-linked.
type Chmod struct {
	Path string
	Perm fs.FileMode
}

func (o *Chmod) check(t Tree) bool {
	n := t[o.Path]
	return n != nil && n.Type != Symlink && n.Link == ""
}

func (o *Chmod) model(t Tree) { t[o.Path].Perm = o.Perm }

// Do changes the mode.
func (o *Chmod) Do(dir string, _ Tree) error { return os.Chmod(at(dir, o.Path), o.Perm) }
func (o *Chmod) String() string              { return fmt.Sprintf("chmod %04o %q", o.Perm, o.Path) }

// Rename moves From, and what is below it, to the new path To.
type Rename struct{ From, To string }

func (o *Rename) check(t Tree) bool {
	return t[o.From] != nil && o.To != "" && t[o.To] == nil && t.IsDir(path.Dir(o.To)) &&
		o.To != o.From && !strings.HasPrefix(o.To, o.From+"/")
}

func (o *Rename) model(t Tree) {
	moved := map[string]*Node{o.To: t[o.From]}
	for _, q := range t.Under(o.From) {
		moved[o.To+strings.TrimPrefix(q, o.From)] = t[q]
	}
	t.RemoveAll(o.From)
	for p, n := range moved {
		t[p] = n
	}
}

// Do renames; where rename(2) fails with EXDEV (an overlay view renaming a
// directory of its lower layers) it copies and removes, as mv does.
func (o *Rename) Do(dir string, t Tree) error {
	err := os.Rename(at(dir, o.From), at(dir, o.To))
	if !errors.Is(err, syscall.EXDEV) {
		return err
	}
	sub := Tree{}
	for _, q := range t.Under(o.From) {
		sub[strings.TrimPrefix(q, o.From+"/")] = t[q]
	}
	if err := create(at(dir, o.To), t[o.From]); err != nil {
		return err
	}
	if err := Write(at(dir, o.To), sub); err != nil {
		return err
	}
	return os.RemoveAll(at(dir, o.From))
}
func (o *Rename) String() string { return fmt.Sprintf("mv %q %q", o.From, o.To) }

// EditLine replaces line Line of a text file of TextLines lines, in place.
type EditLine struct {
	Path string
	Line int
	Text string
}

func (o *EditLine) check(t Tree) bool {
	n := t[o.Path]
	return n != nil && n.Type == File && n.Link == "" && !n.Sparse && bytes.Count(n.Data, []byte("\n")) == TextLines &&
		bytes.HasSuffix(n.Data, []byte("\n"))
}

func (o *EditLine) edited(data []byte) []byte {
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[o.Line] = []byte(o.Text + "\n")
	return bytes.Join(lines, nil)
}

func (o *EditLine) model(t Tree) {
	n := t[o.Path].Clone()
	n.Data = o.edited(n.Data)
	t[o.Path] = n
}

// Do rewrites the file in place.
func (o *EditLine) Do(dir string, t Tree) error {
	n := t[o.Path].Clone()
	n.Data = o.edited(n.Data)
	return WriteFile(at(dir, o.Path), n)
}

func (o *EditLine) String() string {
	return fmt.Sprintf("edit %q line %d = %q", o.Path, o.Line, o.Text)
}
