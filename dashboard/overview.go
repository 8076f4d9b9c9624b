package dashboard

import (
	"context"
	"encoding/json"
	"github.com/tinehq/tine/internal/account"
	"net/http"
	"net/url"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge"
	"github.com/tinehq/tine/runtime"
)

// feedLen is how many recent events a page lists.
const feedLen = 50

// overviewPage is GET /ui/: every workspace's tree, the recent events and
// the pending approvals.
type overviewPage struct {
	page
	Workspaces []workspaceView
	Feed       []eventView
	Approvals  []approvalView
	Done       string
	TreeView   treeView // the trees' filter and expanded groups
}

type workspaceView struct {
	Workspace *tine.Workspace
	Tree      *Tree
	Groups    []groupRow
}

type groupRow struct {
	Group  *tine.Group
	Href   string
	Parent string
	Forks  int
	Live   int
	// ForkRun is the fork-run's summary when fork-run made the group.
	ForkRun *forkrun.Summary
}

// eventView is one event as a feed lists it.
type eventView struct {
	Event   *tine.Event
	RunName string
	RunHref string
	Detail  string
	// Sentence says the event in words, runs by their names.
	Sentence string
}

// approvalView is a pending approval with what its evidence says.
type approvalView struct {
	A         *tine.Approval
	RunName   string
	RunHref   string
	GroupHref string
	By        string
	Changes   []layer.Change
	More      int
	Plan      []merge.Entry
	PlanError string
	// Effect is what approving an external effect sends: the remote and
	// the commit of a push, an HTTP request and its body's digest.
	Effect string
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	states, err := h.e.Records(ctx, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if c := callerOf(ctx); c != nil {
		states = c.Records(states)
	}
	p := overviewPage{page: h.livePage(ctx, "tine", "overview"), Done: doneMessages[r.URL.Query().Get("done")]}
	names := runNames(states)
	p.TreeView = treeViewOf(r.URL.Query())
	for _, st := range states {
		p.Workspaces = append(p.Workspaces, h.workspaceView(st, names, p.TreeView))
	}
	if p.Feed, err = h.feed(ctx, tine.EventFilter{}, names); err != nil {
		h.fail(w, r, err)
		return
	}
	pending, err := h.cp.Pending(ctx, "")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	pending = callerOf(ctx).Approvals(ctx, h.e.Store(), pending)
	for _, a := range pending {
		p.Approvals = append(p.Approvals, approvalOf(a, names))
	}
	h.render(w, http.StatusOK, "overview", p)
}

// livePage is the layout data of a page the script keeps fresh.
func (h *Handler) livePage(ctx context.Context, title, kind string) page {
	return page{Title: title, Kind: kind, CSRF: h.csrf, After: lastSeq(ctx, h.e), Live: true}
}

func (h *Handler) workspaceView(st engine.WorkspaceRecords, names map[string]string, view treeView) workspaceView {
	proc := func(r *tine.Run) string {
		if !r.Active() {
			return runtime.ProcStopped
		}
		s, _ := h.rt.ProcState(engine.Ref{Workspace: st.Workspace, Run: r})
		return s
	}
	v := workspaceView{Workspace: st.Workspace, Tree: layoutTree(st, proc, view)}
	for _, g := range st.Groups {
		row := groupRow{Group: g, Href: groupHref(g.ID), Parent: names[g.Parent], ForkRun: h.forkRunSummary(g)}
		if row.ForkRun != nil {
			v.Tree.note(g.ID, "fork-run · "+row.ForkRun.Outcome)
		}
		for _, r := range st.Runs {
			if r.Group == g.ID {
				row.Forks++
				if r.Active() {
					row.Live++
				}
			}
		}
		v.Groups = append(v.Groups, row)
	}
	return v
}

// runNames maps every run id to its name.
func runNames(states []engine.WorkspaceRecords) map[string]string {
	out := map[string]string{}
	for _, st := range states {
		for _, r := range st.Runs {
			out[r.ID] = r.Name
		}
	}
	return out
}

// feed returns the last feedLen events selected by f, newest first.
func (h *Handler) feed(ctx context.Context, f tine.EventFilter, names map[string]string) ([]eventView, error) {
	if f.Run == "" {
		f.After = max(0, lastSeq(ctx, h.e)-feedLen*4) // events of a run are few; all events are not
	}
	evs, err := h.e.Events(ctx, f)
	if err != nil {
		return nil, err
	}
	evs = callerOf(ctx).Events(ctx, h.e.Store(), evs)
	evs = evs[max(0, len(evs)-feedLen):]
	out := make([]eventView, 0, len(evs))
	for i := len(evs) - 1; i >= 0; i-- {
		ev := evs[i]
		v := eventView{Event: ev, Detail: short(240, string(ev.Detail)), Sentence: sentence(ev, names)}
		if ev.Run != "" {
			v.RunName, v.RunHref = orDefault(names[ev.Run], ev.Run), runHref(ev.Run)
		}
		out = append(out, v)
	}
	return out, nil
}

// lastSeq is the newest event's sequence number; 0 when it cannot be read.
func lastSeq(ctx context.Context, e *engine.Engine) int64 {
	n, _ := e.LastSeq(ctx)
	return n
}

// approvalOf reads what a person needs from approval a's evidence.
func approvalOf(a *tine.Approval, names map[string]string) approvalView {
	v := approvalView{A: a, RunName: orDefault(names[a.Run], a.Run), RunHref: runHref(a.Run),
		By: orDefault(names[a.RequestedBy], a.RequestedBy)}
	if a.Group != "" {
		v.GroupHref = groupHref(a.Group)
	}
	var ev struct {
		Changes   []layer.Change `json:"changes"`
		Plan      *merge.Plan    `json:"plan"`
		PlanError string         `json:"plan_error"`
	}
	json.Unmarshal(a.Evidence, &ev)
	v.Changes, v.PlanError, v.Effect = ev.Changes, ev.PlanError, control.EffectOf(a)
	if len(v.Changes) > 20 {
		v.More, v.Changes = len(v.Changes)-20, v.Changes[:20]
	}
	if ev.Plan != nil && v.Effect == "" { // an effect's plan is its request, shown as Effect
		v.Plan = ev.Plan.Entries
	}
	return v
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// decide is POST /ui/approvals/{id}/approve or refuse.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	by := "dashboard"
	if c := callerOf(r.Context()); c != nil { // a normal user decides as themselves
		by = account.Lookup(c.UID, c.GID).Name
	}
	var err error
	switch r.PathValue("decision") {
	case "approve":
		_, err = h.cp.Approve(context.WithoutCancel(r.Context()), id, by)
	case "refuse":
		_, err = h.cp.Refuse(context.WithoutCancel(r.Context()), id, by)
	default:
		h.failCode(w, http.StatusNotFound, "no action "+r.PathValue("decision")+" on approvals")
		return
	}
	if err != nil {
		h.fail(w, r, err)
		return
	}
	redirect(w, r, "/ui/?done="+url.QueryEscape(r.PathValue("decision")))
}
