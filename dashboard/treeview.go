package dashboard

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// collapseAt is the number of forks above which a group is drawn as one
// node, unless expanded: fifty forks side by side are a strip no one reads.
const collapseAt = 8

// treeView is how the overview draws its trees: a filter on run names and
// approaches, and the groups expanded beyond collapseAt.
type treeView struct {
	Filter string
	Expand map[string]bool
}

// treeViewOf reads a tree view from a page's query: ?filter=TEXT and
// ?expand=GROUP (repeatable).
func treeViewOf(q url.Values) treeView {
	v := treeView{Filter: strings.TrimSpace(q.Get("filter")), Expand: map[string]bool{}}
	for _, g := range q["expand"] {
		v.Expand[g] = true
	}
	return v
}

// Collapsed is a group drawn as one node: how many forks it has and what
// became of them.
type Collapsed struct {
	Group  string
	Forks  int
	States string // "48 active, 2 merged"
	Expand string // the overview with the group expanded
}

// apply narrows st's runs to those the view shows: with a filter, the
// runs whose name or approach holds it (any case) and their ancestors;
// without one, every run, each group of more than collapseAt forks that
// is not expanded standing in one placeholder run. It returns the
// placeholders by their ids.
func (v treeView) apply(st engine.WorkspaceRecords) (engine.WorkspaceRecords, map[string]*Collapsed) {
	if v.Filter != "" {
		st.Runs = v.matching(st.Runs)
		return st, nil
	}
	counts := map[string][]*tine.Run{}
	for _, r := range st.Runs {
		if r.Group != "" {
			counts[r.Group] = append(counts[r.Group], r)
		}
	}
	collapsed := map[string]*Collapsed{}
	var runs []*tine.Run
	for _, r := range st.Runs {
		forks := counts[r.Group]
		if r.Group == "" || len(forks) <= collapseAt || v.Expand[r.Group] {
			runs = append(runs, r)
			continue
		}
		id := "collapsed-" + r.Group
		if collapsed[id] == nil {
			collapsed[id] = v.collapse(r.Group, forks)
			runs = append(runs, &tine.Run{ID: id, Name: fmt.Sprintf("%d forks", len(forks)), Parent: r.Parent, Group: r.Group,
				Approach: collapsed[id].States, State: tine.StateActive})
		}
	}
	st.Runs = runs
	return st, collapsed
}

// collapse summarizes the forks of group g.
func (v treeView) collapse(g string, forks []*tine.Run) *Collapsed {
	n := map[string]int{}
	var order []string
	for _, r := range forks {
		s := runState(r)
		if n[s] == 0 {
			order = append(order, s)
		}
		n[s]++
	}
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d %s", n[s], s)
	}
	q := url.Values{"expand": append(v.expanded(), g)}
	return &Collapsed{Group: g, Forks: len(forks), States: strings.Join(parts, ", "), Expand: "/ui/?" + q.Encode() + "#workspaces"}
}

// expanded lists the groups already expanded.
func (v treeView) expanded() []string {
	var out []string
	for g := range v.Expand {
		out = append(out, g)
	}
	return out
}

// matching keeps the runs whose name or approach holds the filter, and
// the ancestors of each, so the tree keeps its shape.
func (v treeView) matching(runs []*tine.Run) []*tine.Run {
	byID := map[string]*tine.Run{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	f := strings.ToLower(v.Filter)
	keep := map[string]bool{}
	for _, r := range runs {
		if !strings.Contains(strings.ToLower(r.Name), f) && !strings.Contains(strings.ToLower(r.Approach), f) {
			continue
		}
		for a := r; a != nil && !keep[a.ID]; a = byID[a.Parent] {
			keep[a.ID] = true
		}
	}
	var out []*tine.Run
	for _, r := range runs {
		if keep[r.ID] {
			out = append(out, r)
		}
	}
	return out
}
