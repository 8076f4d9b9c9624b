package httpapi

import (
	"fmt"
	"net/http"
	"os"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/access"
)

// A person on the people's socket acts as their own user (SO_PEERCRED):
// root and the daemon's own user see every workspace; anyone else sees and
// acts only on the workspaces they own or that grant one of their groups
// (tine init --group). Another user's workspace, its runs, groups, events
// and approvals are "not found", never shown. Code inside runs is governed
// by its capability's lineage scope instead, and TCP requests by the
// bearer token.

// callerOf returns who made r, or nil when r may see every workspace: root
// and the daemon's own user, a request on TCP (the token's holder), and
// code inside a run.
func callerOf(r *http.Request) *access.Caller {
	p, ok := r.Context().Value(peerKey).(peer)
	if !ok || p.user == nil || p.run != "" || p.user.UID == 0 || p.user.UID == os.Geteuid() {
		return nil
	}
	return p.user
}

// ownRun wraps a route naming a run ({ref}): a run of a workspace the
// caller may not use is not found.
func (s *Server) ownRun(h http.HandlerFunc) http.HandlerFunc {
	return s.own(h, func(r *http.Request) (*tine.Workspace, error) {
		ref, err := s.e.FindRun(r.Context(), r.PathValue("ref"))
		return ref.Workspace, err
	}, "no run %q: %w")
}

// ownGroup wraps a route naming a group ({ref}).
func (s *Server) ownGroup(h http.HandlerFunc) http.HandlerFunc {
	return s.own(h, func(r *http.Request) (*tine.Workspace, error) {
		g, err := s.groupOf(r.Context(), r.PathValue("ref"))
		if err != nil {
			return nil, err
		}
		return s.workspaceByID(r, g.Workspace)
	}, "no group %q (fork prints its id; see tine tree): %w")
}

// ownWorkspace wraps a route naming a workspace ({ref}).
func (s *Server) ownWorkspace(h http.HandlerFunc) http.HandlerFunc {
	return s.own(h, func(r *http.Request) (*tine.Workspace, error) {
		return s.e.FindWorkspace(r.Context(), r.PathValue("ref"))
	}, "no workspace %q (see tine ls): %w")
}

// ownApproval wraps a route naming an approval ({id}).
func (s *Server) ownApproval(h http.HandlerFunc) http.HandlerFunc {
	return s.own(h, func(r *http.Request) (*tine.Workspace, error) {
		var a *tine.Approval
		err := s.e.Store().View(r.Context(), func(tx tine.Tx) error {
			var err error
			a, err = tx.Approval(r.PathValue("id"))
			return err
		})
		if err != nil {
			return nil, err
		}
		return s.workspaceByID(r, a.Workspace)
	}, "no approval %q: %w")
}

func (s *Server) workspaceByID(r *http.Request, id string) (*tine.Workspace, error) {
	var w *tine.Workspace
	err := s.e.Store().View(r.Context(), func(tx tine.Tx) error {
		var err error
		w, err = tx.Workspace(id)
		return err
	})
	return w, err
}

// own serves h only when the workspace find names is one the caller may
// use; otherwise, or when find fails, the answer is notFound with the
// route's reference: the same whether the record exists or not.
func (s *Server) own(h http.HandlerFunc, find func(*http.Request) (*tine.Workspace, error), notFound string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if c := callerOf(r); c != nil {
			ws, err := find(r)
			if err != nil || !c.MayUse(ws) {
				ref := r.PathValue("ref")
				if ref == "" {
					ref = r.PathValue("id")
				}
				writeErr(w, fmt.Errorf(notFound, ref, tine.ErrNotFound))
				return
			}
		}
		h(w, r)
	}
}

// visible keeps the workspaces' states the caller of r may use.
func visible(r *http.Request, states []engine.WorkspaceRecords) []engine.WorkspaceRecords {
	if c := callerOf(r); c != nil {
		return c.Records(states)
	}
	return states
}

// visibleEvents keeps the events of workspaces the caller of r may use
// (never nil).
func (s *Server) visibleEvents(r *http.Request, evs []*tine.Event) []*tine.Event {
	return callerOf(r).Events(r.Context(), s.e.Store(), evs)
}
