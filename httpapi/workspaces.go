package httpapi

import (
	"context"
	"net/http"
	"os"

	"github.com/tinehq/tine/engine"
)

// InitRequest is the body of POST /v1/workspaces: tine init through the
// daemon. The workspace belongs to the caller, whose directory it must be.
type InitRequest struct {
	Path    string `json:"path"` // absolute
	Backend string `json:"backend,omitempty"`
	Name    string `json:"name,omitempty"`
	Net     bool   `json:"net,omitempty"`
	Groups  []int  `json:"groups,omitempty"` // gids granted access (tine init --group)
}

// ReleaseRequest is the body of POST /v1/workspaces/{ref}/release.
type ReleaseRequest struct {
	Force bool `json:"force,omitempty"`
}

func (s *Server) initWorkspace(w http.ResponseWriter, r *http.Request) {
	var req InitRequest
	if !s.personOnly(w, r) || !decodeOrFail(w, r, &req) {
		return
	}
	o := engine.InitOptions{Path: req.Path, Backend: req.Backend, Name: req.Name, Net: req.Net, Groups: req.Groups}
	if p, ok := r.Context().Value(peerKey).(peer); ok && p.user != nil && p.user.UID != os.Geteuid() {
		o.Owner = &engine.Owner{UID: p.user.UID, GID: p.user.GID}
	}
	ref, err := s.e.Init(ctxOf(r), o)
	if err == nil && s.inited != nil {
		s.inited(ctxOf(r), ref.Workspace)
	}
	handle(w, http.StatusCreated, ref, err)
}

func (s *Server) releaseWorkspace(w http.ResponseWriter, r *http.Request) {
	var req ReleaseRequest
	if !s.personOnly(w, r) || !decodeOrFail(w, r, &req) {
		return
	}
	ws, err := s.e.Release(workCtx(r), r.PathValue("ref"), req.Force)
	handle(w, http.StatusOK, ws, err)
}

// peerUID is the uid of the user who made r: the peer's on a unix socket,
// else the daemon's own (TCP, whose token holder acts as the daemon).
func peerUID(r *http.Request) int { return peerUIDOf(r.Context()) }

// peerUIDOf is peerUID of the request whose context ctx is.
func peerUIDOf(ctx context.Context) int {
	if p, ok := ctx.Value(peerKey).(peer); ok && p.user != nil {
		return p.user.UID
	}
	return os.Geteuid()
}
