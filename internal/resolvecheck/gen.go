package resolvecheck

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"path"
	"strings"
)

// TextLines is the number of lines of a generated text file, and
// lineSlots the lines an EditLine changes: far enough apart (ten lines) that
// edits of two different slots merge cleanly line-wise and as a patch with
// three lines of context, while two edits of one slot always overlap.
const TextLines = 25

var lineSlots = []int{2, 12, 22}

// Gen generates random trees and edit scripts from one seeded source.
type Gen struct {
	r     *rand.Rand
	links int
	// Odd is the probability of an odd name (spaces, unicode, leading dashes,
	// a newline, a very long name) where a name is made up.
	Odd float64
}

// NewGen returns a generator for seed.
func NewGen(seed uint64) *Gen {
	return &Gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), Odd: 0.2}
}

// Intn returns a random int in [0, n).
func (g *Gen) Intn(n int) int { return g.r.IntN(n) }

// Chance returns true with probability p.
func (g *Gen) Chance(p float64) bool { return g.r.Float64() < p }

var plainNames = []string{"a", "b", "c", "src", "lib", "docs", "x.txt", "main.go", "README", "data.bin", "d", "e", "util", "test", "new"}

var oddNames = []string{
	"with space", "ünïcødé", "日本語", "-dash", "--double", "tab\tname", "quote\"s", "back\\slash",
	"star*", "#hash", "%percent", strings.Repeat("long", 60), "ends with space ", ".hidden", "x.orig",
	"dir.d", "new\nline", "-", "a:b", "emoji-🙂",
}

// Name returns a random name not yet in dir of t.
func (g *Gen) Name(t Tree, dir string) string {
	for i := 0; ; i++ {
		var n string
		if g.Chance(g.Odd) {
			n = oddNames[g.Intn(len(oddNames))]
		} else {
			n = plainNames[g.Intn(len(plainNames))]
		}
		if i > 5 {
			n = fmt.Sprintf("%s%d", n, g.Intn(1000))
		}
		if _, taken := t[path.Join(dir, n)]; !taken {
			return n
		}
	}
}

// Text returns the content of a text file of TextLines lines.
func (g *Gen) Text() []byte {
	var b bytes.Buffer
	for i := range TextLines {
		fmt.Fprintf(&b, "line %d: %s\n", i, g.word())
	}
	return b.Bytes()
}

func (g *Gen) word() string {
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	return fmt.Sprintf("%s-%d", words[g.Intn(len(words))], g.Intn(10000))
}

// Content returns a random file node: text, short text, binary, empty or
// (rarely) sparse, with a random mode.
func (g *Gen) Content() *Node {
	perms := []fs.FileMode{0o644, 0o644, 0o755, 0o600, 0o640, 0o444}
	n := &Node{Type: File, Perm: perms[g.Intn(len(perms))]}
	switch k := g.Intn(20); {
	case k < 9:
		n.Data = g.Text()
	case k < 13:
		n.Data = []byte(fmt.Sprintf("%s\n%s\n", g.word(), g.word()))
	case k < 16:
		n.Data = make([]byte, 1+g.Intn(3000))
		for i := range n.Data {
			n.Data[i] = byte(g.Intn(256))
		}
		n.Data[g.Intn(len(n.Data))] = 0
	case k < 18:
		n.Data = []byte{}
	default:
		n.Data, n.Sparse = g.sparse(), true
	}
	return n
}

// sparse returns the content of a small sparse file: a few data blocks
// among zero blocks of holeBlock bytes.
func (g *Gen) sparse() []byte {
	blocks := 4 + g.Intn(5)
	data := make([]byte, blocks*holeBlock+g.Intn(100))
	for b := 0; b < blocks; b += 2 + g.Intn(2) {
		copy(data[b*holeBlock:], fmt.Sprintf("data block %d %s", b, g.word()))
	}
	return data
}

// DirNode returns a directory node with a random mode.
func (g *Gen) DirNode() *Node {
	perms := []fs.FileMode{0o755, 0o755, 0o755, 0o700, 0o750}
	return &Node{Type: Dir, Perm: perms[g.Intn(len(perms))]}
}

// LinkNode returns a symlink node from dir: to a path of t (relative), to
// nowhere, or out of the tree.
func (g *Gen) LinkNode(t Tree, dir string) *Node {
	n := &Node{Type: Symlink}
	ps := t.Paths()
	switch k := g.Intn(6); {
	case k < 3 && len(ps) > 0:
		up := strings.Repeat("../", strings.Count(dir, "/")+1)
		if dir == "." {
			up = ""
		}
		n.Target = up + ps[g.Intn(len(ps))]
	case k < 4:
		n.Target = "missing-" + g.word()
	case k < 5:
		n.Target = "/etc/hostname"
	default:
		n.Target = "../../../../../outside"
	}
	return n
}

// Tree returns a random tree: a few entries at the top, directories up to
// four levels deep (some empty), files of every kind, symlinks and hard links.
func (g *Gen) Tree() Tree {
	t := Tree{}
	g.fill(t, ".", 0, 3+g.Intn(5))
	return t
}

func (g *Gen) fill(t Tree, dir string, depth, n int) {
	for range n {
		p := path.Join(dir, g.Name(t, dir))
		switch k := g.Intn(20); {
		case k < 5 && depth < 4:
			t[p] = g.DirNode()
			g.fill(t, p, depth+1, g.Intn(5))
		case k < 7:
			t[p] = g.LinkNode(t, dir)
		case k < 8:
			if src := g.pick(t, func(n *Node) bool { return n.Type == File }); src != "" {
				if t[src].Link == "" {
					g.links++
					t[src].Link = fmt.Sprintf("L%d", g.links)
				}
				t[p] = t[src].Clone()
				continue
			}
			fallthrough
		default:
			t[p] = g.Content()
		}
	}
}

// pick returns a random path of t whose node satisfies ok, or "".
func (g *Gen) pick(t Tree, ok func(*Node) bool) string {
	var c []string
	for _, p := range t.Paths() {
		if ok(t[p]) {
			c = append(c, p)
		}
	}
	if len(c) == 0 {
		return ""
	}
	return c[g.Intn(len(c))]
}

// Script returns a random edit script of up to max operations for tree t,
// preferring (with probability one half) the paths in prefer where an
// operation needs an existing path. t is not changed.
func (g *Gen) Script(t Tree, max int, prefer []string) Script {
	t = t.Clone()
	var s Script
	for range 1 + g.Intn(max) {
		for _, op := range g.op(t, prefer) {
			if op.check(t) {
				op.model(t)
				s = append(s, op)
			}
		}
	}
	return s
}

// existing picks an existing path, from prefer when it can and chooses to.
func (g *Gen) existing(t Tree, prefer []string, ok func(*Node) bool) string {
	if len(prefer) > 0 && g.Chance(0.5) {
		p := prefer[g.Intn(len(prefer))]
		if n := t[p]; n != nil && ok(n) {
			return p
		}
	}
	return g.pick(t, ok)
}

// newPath returns a path not in t whose parent is a directory of t.
func (g *Gen) newPath(t Tree) string {
	dir := g.pick(t, func(n *Node) bool { return n.Type == Dir })
	if dir == "" || g.Chance(0.3) {
		dir = "."
	}
	return path.Join(dir, g.Name(t, dir))
}

func anyNode(*Node) bool { return true }

func (g *Gen) op(t Tree, prefer []string) []Op {
	isFile := func(n *Node) bool { return n.Type == File }
	switch k := g.Intn(100); {
	case k < 14:
		return []Op{&Put{Path: g.newPath(t), Node: g.Content()}}
	case k < 28:
		return []Op{&Put{Path: g.existing(t, prefer, isFile), Node: g.Content()}}
	case k < 40:
		return []Op{&EditLine{Path: g.existing(t, prefer, isFile), Line: lineSlots[g.Intn(len(lineSlots))], Text: "edited " + g.word()}}
	case k < 48:
		return []Op{&Remove{Path: g.existing(t, prefer, anyNode)}}
	case k < 56:
		return []Op{&Remove{Path: g.existing(t, prefer, func(n *Node) bool { return n.Type == Dir })}}
	case k < 66:
		return g.deep(t)
	case k < 74:
		p := g.existing(t, prefer, anyNode)
		var n *Node
		if old := t[p]; old != nil {
			switch c := g.Intn(3); {
			case c == 0 && old.Type != File:
				n = g.Content()
			case c == 1 && old.Type != Dir:
				n = g.DirNode()
			default:
				n = g.LinkNode(t, path.Dir(p))
				if old.Type == Symlink {
					n = g.Content()
				}
			}
		}
		return []Op{&Replace{Path: p, Node: n}}
	case k < 82:
		p := g.existing(t, prefer, func(n *Node) bool { return n.Type != Symlink })
		perm := fs.FileMode(0o755)
		if n := t[p]; n != nil && n.Type == File {
			perm = []fs.FileMode{0o644, 0o755, 0o600, 0o640}[g.Intn(4)]
		} else if n != nil {
			perm = []fs.FileMode{0o755, 0o700, 0o750}[g.Intn(3)]
		}
		return []Op{&Chmod{Path: p, Perm: perm}}
	case k < 90:
		return []Op{&Rename{From: g.existing(t, prefer, anyNode), To: g.newPath(t)}}
	case k < 95:
		return []Op{&Put{Path: g.newPath(t), Node: g.DirNode()}}
	default:
		return []Op{&Put{Path: g.newPath(t), Node: g.LinkNode(t, ".")}}
	}
}

// deep makes a new directory one to four levels deep and a file in it.
func (g *Gen) deep(t Tree) []Op {
	p := g.newPath(t)
	for range g.Intn(4) {
		p = path.Join(p, g.Name(Tree{}, p))
	}
	f := path.Join(p, g.Name(Tree{}, p))
	return []Op{&MkdirAll{Path: p, Perm: g.DirNode().Perm}, &Put{Path: f, Node: g.Content()}}
}
