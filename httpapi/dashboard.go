package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"os"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/internal/access"
)

// Dashboard is where the daemon serves its dashboard over TCP, which
// POST /v1/dashboard hands to the people who ask on its unix sockets.
type Dashboard struct {
	URL   string         // the listener's base: http://127.0.0.1:PORT
	Token string         // the daemon's own bearer token: every workspace
	Users *access.Tokens // a normal user's token: their workspaces only
}

// WithDashboard makes POST /v1/dashboard answer with d's address and the
// caller's token.
func WithDashboard(d Dashboard) Option {
	return func(s *Server) { s.dash = &d }
}

// DashboardLink is the answer to POST /v1/dashboard: the URL that opens
// the caller's dashboard (its first visit turns the token into a cookie).
type DashboardLink struct {
	URL   string `json:"url"`
	Token string `json:"token"`
	UID   int    `json:"uid"`
	// All is set for root and the daemon's own user, who see every
	// workspace; a normal user's token shows only theirs.
	All bool `json:"all"`
}

// dashboardLink is POST /v1/dashboard: a person on a unix socket, told by
// SO_PEERCRED, gets the URL of their dashboard with their own token (made
// on first use); root and the daemon's user get the daemon's token.
func (s *Server) dashboardLink(w http.ResponseWriter, r *http.Request) {
	p, ok := s.dashboardPeer(w, r)
	if !ok {
		return
	}
	link := DashboardLink{UID: p.UID, All: callerOf(r) == nil, Token: s.dash.Token}
	if !link.All {
		tok, err := s.dash.Users.Issue(p.UID)
		if err != nil {
			writeErr(w, err)
			return
		}
		link.Token = tok
	}
	link.URL = s.dash.URL + "/ui/?token=" + url.QueryEscape(link.Token)
	writeJSON(w, http.StatusOK, link)
}

// revokeDashboard is DELETE /v1/dashboard: the caller's token opens
// nothing from now on; the next POST /v1/dashboard makes another.
func (s *Server) revokeDashboard(w http.ResponseWriter, r *http.Request) {
	p, ok := s.dashboardPeer(w, r)
	if !ok {
		return
	}
	if callerOf(r) == nil {
		writeErr(w, fmt.Errorf("the daemon's own token is the state directory's file token: remove it and restart tine serve to change it: %w", tine.ErrInvalid))
		return
	}
	if err := s.dash.Users.Revoke(p.UID); err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, DashboardLink{UID: p.UID})
}

// dashboardPeer is the person asking for their dashboard on a unix socket
// (refused from inside a run, on TCP, and where there is no dashboard).
func (s *Server) dashboardPeer(w http.ResponseWriter, r *http.Request) (*access.Caller, bool) {
	if !personsOnly(w, r, "a run has no dashboard; a person opens theirs with tine dashboard") {
		return nil, false
	}
	if s.dash == nil {
		writeErr(w, fmt.Errorf("this daemon serves no dashboard: start it with --listen 127.0.0.1:PORT (tine serve --system does by itself): %w", tine.ErrUnsupported))
		return nil, false
	}
	p, _ := r.Context().Value(peerKey).(peer)
	if p.run != "" {
		writeErr(w, fmt.Errorf("a run has no dashboard: %w", capability.ErrScope))
		return nil, false
	}
	if p.user == nil { // TCP: the token's holder is the daemon's own user
		return access.New(os.Geteuid(), os.Getegid()), true
	}
	return p.user, true
}

// People wraps h (the dashboard) so that requests from inside a run are
// refused, and a normal user on a unix socket is served as themselves: the
// request's context carries them (package access), limiting h to their
// workspaces.
func People(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, _ := r.Context().Value(peerKey).(peer); p.run != "" {
			writeErr(w, fmt.Errorf("%s is for people, not code inside a run: %w", r.URL.Path, capability.ErrScope))
			return
		}
		if c := callerOf(r); c != nil {
			r = r.WithContext(access.With(r.Context(), c))
		}
		h.ServeHTTP(w, r)
	})
}
