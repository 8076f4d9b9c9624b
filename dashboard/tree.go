package dashboard

import (
	"fmt"
	"net/url"
	"slices"
	"sort"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// Geometry of the run tree, in SVG user units.
const (
	nodeW     = 180
	nodeH     = 62
	gapX      = 28
	gapY      = 64
	pad       = 24
	maxMarks  = 16
	markGap   = 10
	approachN = 22
)

// Tree is a workspace's run tree laid out for an inline SVG: runs as nodes
// under their parent, forks grouped by their group.
type Tree struct {
	W, H   int
	Nodes  []Node
	Edges  []Edge
	Groups []GroupBox
	// Shown and Total count the runs drawn and the workspace's runs.
	Shown, Total int
}

// Node is one run in the tree.
type Node struct {
	X, Y      int
	Run       *tine.Run
	Href      string
	State     string // active, discarded, merged, promoted or retired: the fill
	Proc      string // running, stopped or dead: the outline
	Mark      string // the resolved outcome, if any
	Approach  string // cut to fit
	Marks     []Mark
	MoreMarks int        // versions not drawn
	Collapsed *Collapsed // a group drawn as one node, or nil
}

// Mark is a version recorded from a run: a small marker on its node.
type Mark struct {
	X, Y  int
	Kind  string
	Title string
}

// Edge joins a parent run to a fork.
type Edge struct{ X1, Y1, X2, Y2 int }

// GroupBox frames the forks of one group.
type GroupBox struct {
	X, Y, W, H int
	ID, Href   string
	Note       string // e.g. "fork-run · running", right-aligned on the frame
	NoteDX     int    // where the note ends, from X
}

// note puts text on the frame of group g.
func (t *Tree) note(g, text string) {
	for i := range t.Groups {
		if t.Groups[i].ID == g {
			t.Groups[i].Note, t.Groups[i].NoteDX = text, t.Groups[i].W-6
		}
	}
}

// runState names what a run's node is coloured by.
func runState(r *tine.Run) string {
	switch {
	case r.Role == tine.RoleRetired:
		return "retired"
	case r.Resolution == tine.ResolutionPromoted:
		return "promoted"
	case r.Resolution == tine.ResolutionMerged:
		return "merged"
	case r.State == tine.StateDiscarded:
		return "discarded"
	}
	return "active"
}

// outcome is the mark of a resolved run.
func outcome(r *tine.Run) string {
	switch runState(r) {
	case "retired":
		return "retired"
	case "promoted":
		return "★ promoted"
	case "merged":
		return "✓ merged"
	case "discarded":
		return "✗ discarded"
	}
	return ""
}

// treeLayout places st's runs: each leaf gets a column of its own, each
// parent is centred over its forks, and a group's forks sit side by side.
type treeLayout struct {
	st        engine.WorkspaceRecords
	collapsed map[string]*Collapsed
	proc      func(*tine.Run) string
	children  map[string][]*tine.Run
	next      int // the next free column
	seen      map[string]bool
	t         *Tree
}

// layoutTree lays out the runs of st that view shows; proc gives a run's
// process state.
func layoutTree(st engine.WorkspaceRecords, proc func(*tine.Run) string, view treeView) *Tree {
	total := len(st.Runs)
	st, collapsed := view.apply(st)
	l := &treeLayout{st: st, collapsed: collapsed, proc: proc, children: map[string][]*tine.Run{}, seen: map[string]bool{},
		t: &Tree{Total: total, Shown: len(st.Runs)}}
	ids := map[string]bool{}
	for _, r := range st.Runs {
		ids[r.ID] = true
	}
	var roots []*tine.Run
	for _, r := range st.Runs {
		if r.Parent == "" || !ids[r.Parent] {
			roots = append(roots, r)
		} else {
			l.children[r.Parent] = append(l.children[r.Parent], r)
		}
	}
	for _, r := range roots {
		l.place(r, 0)
	}
	l.t.W = max(l.next, 1)*(nodeW+gapX) - gapX + 2*pad
	return l.t
}

// place lays out r at depth d and its forks below it; it returns r's x.
func (l *treeLayout) place(r *tine.Run, d int) int {
	l.seen[r.ID] = true
	var xs []int
	kids := l.orderForks(l.children[r.ID])
	for _, c := range kids {
		if !l.seen[c.ID] {
			xs = append(xs, l.place(c, d+1))
		}
	}
	x := pad + l.next*(nodeW+gapX)
	if len(xs) > 0 {
		x = (xs[0] + xs[len(xs)-1]) / 2
	} else {
		l.next++
	}
	y := pad + 14 + d*(nodeH+gapY)
	l.t.Nodes = append(l.t.Nodes, l.node(r, x, y))
	l.t.H = max(l.t.H, y+nodeH+pad)
	l.frameGroups(kids, y+nodeH+gapY)
	for _, c := range kids {
		if n := l.find(c.ID); n != nil {
			l.t.Edges = append(l.t.Edges, Edge{x + nodeW/2, y + nodeH, n.X + nodeW/2, n.Y})
		}
	}
	return x
}

// orderForks sorts forks by their group's creation, keeping creation
// order within a group; forks of no group come first.
func (l *treeLayout) orderForks(runs []*tine.Run) []*tine.Run {
	rank := map[string]int{"": -1}
	for i, g := range l.st.Groups {
		rank[g.ID] = i
	}
	out := slices.Clone(runs)
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i].Group] < rank[out[j].Group] })
	return out
}

func (l *treeLayout) find(id string) *Node {
	for i := range l.t.Nodes {
		if l.t.Nodes[i].Run.ID == id {
			return &l.t.Nodes[i]
		}
	}
	return nil
}

// node draws run r at x, y with its versions as markers.
func (l *treeLayout) node(r *tine.Run, x, y int) Node {
	if c := l.collapsed[r.ID]; c != nil {
		return Node{X: x, Y: y, Run: r, Href: c.Expand, State: "collapsed", Approach: short(approachN, r.Approach), Collapsed: c}
	}
	n := Node{X: x, Y: y, Run: r, Href: runHref(r.ID), State: runState(r), Proc: l.proc(r),
		Mark: outcome(r), Approach: short(approachN, r.Approach)}
	for _, v := range l.st.Versions {
		if v.Run != r.ID {
			continue
		}
		if len(n.Marks) == maxMarks {
			n.MoreMarks++
			continue
		}
		title := fmt.Sprintf("%s %s %s", v.Kind, v.ID, v.Label)
		n.Marks = append(n.Marks, Mark{X: x + 10 + len(n.Marks)*markGap, Y: y + nodeH - 9, Kind: string(v.Kind), Title: title})
	}
	return n
}

// frameGroups draws a box around each group's forks (at row y).
func (l *treeLayout) frameGroups(kids []*tine.Run, y int) {
	boxes := map[string]*GroupBox{}
	var order []string
	for _, c := range kids {
		n := l.find(c.ID)
		if c.Group == "" || n == nil || n.Y != y {
			continue
		}
		b := boxes[c.Group]
		if b == nil {
			b = &GroupBox{X: n.X - 8, Y: y - 20, W: nodeW + 16, H: nodeH + 28, ID: c.Group, Href: groupHref(c.Group)}
			boxes[c.Group] = b
			order = append(order, c.Group)
		}
		b.W = max(b.W, n.X+nodeW+8-b.X)
	}
	for _, g := range order {
		l.t.Groups = append(l.t.Groups, *boxes[g])
	}
}

func runHref(id string) string   { return "/ui/runs/" + url.PathEscape(id) }
func groupHref(id string) string { return "/ui/groups/" + url.PathEscape(id) }
