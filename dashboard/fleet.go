package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/access"
)

// FleetStatus returns the fleet's nodes and tasks (package fleet), for a
// tine whose store is PostgreSQL's.
type FleetStatus func(ctx context.Context) ([]fleet.Node, []*fleet.Task, error)

// WithFleet adds the fleet's page, /ui/fleet: its nodes (state, capacity,
// tasks running, heartbeat age) and tasks (state, node, outcome, winner,
// cost), from status. Without it the page says there is no fleet.
func WithFleet(status FleetStatus) Option {
	return func(h *Handler) { h.fleet = status }
}

// TaskCanceler withdraws fleet task id (tine tasks cancel) and says what
// became of it in one line.
type TaskCanceler func(ctx context.Context, id string) (string, error)

// WithTaskCancel gives the fleet's page a cancel button on each queued
// or running task, which asks to confirm and then withdraws it with c.
func WithTaskCancel(c TaskCanceler) Option {
	return func(h *Handler) { h.cancelTask = c }
}

// cancelTask is POST /ui/fleet/tasks/{id}/cancel: with confirm=1 it
// withdraws the task and shows the fleet's page saying what became of
// it; without, it asks to confirm. For the people the fleet's page is
// for.
func (h *Handler) cancelTaskForm(w http.ResponseWriter, r *http.Request) {
	if h.fleet == nil || h.cancelTask == nil {
		h.fail(w, r, fmt.Errorf("this tine has no fleet to cancel tasks of: %w", tine.ErrUnsupported))
		return
	}
	if access.From(r.Context()) != nil {
		h.fail(w, r, fmt.Errorf("the fleet's tasks are canceled by root and the daemon's own user here (a normal user: tine tasks cancel): %w", tine.ErrPrivilege))
		return
	}
	id := r.PathValue("id")
	if r.PostFormValue("confirm") != "1" {
		p := confirmPage{page: h.plainPage("confirm: cancel task " + id), Action: "/ui/fleet/tasks/" + url.PathEscape(id) + "/cancel",
			Back: "/ui/fleet", CanConfirm: true,
			Question: fmt.Sprintf("Cancel task %s? Queued, it never runs; running, its node stops its agents (its forks' work is kept on that node).", id)}
		h.render(w, http.StatusOK, "confirm", p)
		return
	}
	said, err := h.cancelTask(context.WithoutCancel(r.Context()), id)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.renderFleet(w, r, said)
}

// Elsewhere says where workspace ws lives when its files are not on this
// tine (a fleet's node, docs/cluster.md): the error to answer a page
// about it with, naming its home node and where that node's dashboard
// is; nil when ws lives here.
type Elsewhere func(ctx context.Context, ws string) error

// WithElsewhere makes the pages of a run, group or approval whose
// workspace lives on another node (away says) answer where to go rather
// than act on it or read its files here: this node's engine would change
// the fleet's records of a run whose files and processes it does not
// have.
func WithElsewhere(away Elsewhere) Option {
	return func(h *Handler) { h.away = away }
}

// fleetPage is /ui/fleet.
type fleetPage struct {
	page
	Nodes     []fleetNode
	Tasks     []*fleet.Task
	Queue     map[string]int
	Note      string // what an action did
	CanCancel bool   // queued and running tasks get a cancel button
}

// fleetNode is a node's row.
type fleetNode struct {
	fleet.Node
	Age string // since its last heartbeat
}

// fleetView serves /ui/fleet to people who see every workspace, as the
// API's GET /v1/fleet does: the tasks hold every submitter's repository
// and prompt.
func (h *Handler) fleetView(w http.ResponseWriter, r *http.Request) {
	if h.fleet == nil {
		h.fail(w, r, fmt.Errorf("this tine has no fleet: its store is not PostgreSQL's (see docs/cluster.md): %w", tine.ErrUnsupported))
		return
	}
	if access.From(r.Context()) != nil {
		h.fail(w, r, fmt.Errorf("the fleet's page shows every submitter's tasks: it is for root and the daemon's own user: %w", tine.ErrPrivilege))
		return
	}
	h.renderFleet(w, r, "")
}

// renderFleet renders the fleet's page, with note (what an action did)
// above it.
func (h *Handler) renderFleet(w http.ResponseWriter, r *http.Request, note string) {
	nodes, tasks, err := h.fleet(r.Context())
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := fleetPage{page: page{Title: "fleet", Kind: "fleet", CSRF: h.csrf}, Tasks: tasks, Queue: map[string]int{},
		Note: note, CanCancel: h.cancelTask != nil}
	now := time.Now()
	for _, n := range nodes {
		p.Nodes = append(p.Nodes, fleetNode{Node: n, Age: now.Sub(n.BeatAt).Round(time.Second).String()})
	}
	for _, t := range tasks {
		p.Queue[t.State]++
	}
	h.render(w, http.StatusOK, "fleet", p)
}
