package httpapi

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/access"
)

// RequestHeader carries a request signed with a run's capability: the
// base64url of the JSON capability.Request, whose Args are the body.
const RequestHeader = "Tine-Request"

type ctxKey int

const (
	peerKey ctxKey = iota
	actorKey
)

// unknownRun marks a peer whose run could not be told: treated as inside.
const unknownRun = "?"

// peer is the process at the other end of a unix-socket connection.
type peer struct {
	pid int
	// run is the run it acts for: "" for a person, unknownRun for code
	// inside some run that cannot be told.
	run string
	// own is set on a run's own socket (RunSockets): its requests are that
	// run's, whatever the caller's cgroup.
	own bool
	// foreign is set on a run's own socket when the caller is inside
	// another run.
	foreign bool
	why     string         // on the people's socket: what showed it is no person
	user    *access.Caller // on the people's socket: the peer's user
}

// actorOf is the run a request acts for, or nil for a person (the host).
func actorOf(r *http.Request) *engine.Ref {
	a, _ := r.Context().Value(actorKey).(*engine.Ref)
	return a
}

// inside checks a request coming from inside a run: it must carry a valid
// request signed with that run's capability, for this method and path,
// whose arguments are exactly the body. It returns the request with the
// acting run in its context.
func (s *Server) inside(r *http.Request) (*http.Request, error) {
	p, _ := r.Context().Value(peerKey).(peer)
	if p.run == "" {
		return r, nil
	}
	if !p.own {
		return nil, fmt.Errorf("the people's socket does not serve code inside a run (%s): a run speaks on its own socket, %s: %w",
			p.why, RunSocket, capability.ErrScope)
	}
	if p.foreign {
		return nil, fmt.Errorf("the socket of run %s does not serve code inside another run: %w", p.run, capability.ErrScope)
	}
	h := r.Header.Get(RequestHeader)
	if h == "" {
		return nil, fmt.Errorf("requests from inside a run must be signed with its capability (%s): %w", RequestHeader, tine.ErrPrivilege)
	}
	raw, err := base64.RawURLEncoding.DecodeString(h)
	var req capability.Request
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %v: %w", RequestHeader, err, tine.ErrInvalid)
	}
	run, err := s.verifier.Verify(r.Context(), req, capability.PurposeControl, r.Method+" "+r.URL.Path)
	if err != nil {
		return nil, err
	}
	if run != p.run {
		return nil, fmt.Errorf("a capability of run %s used from inside run %s: %w", run, p.run, capability.ErrScope)
	}
	// Only now, the signature good, is the body read.
	body, err := readBody(r)
	if err != nil {
		return nil, err
	}
	if !sameArgs(req.Args, body) {
		return nil, fmt.Errorf("the body is not what was signed: %w", capability.ErrForged)
	}
	actor, err := s.e.FindRun(r.Context(), run)
	if err != nil {
		return nil, err
	}
	r = r.WithContext(context.WithValue(r.Context(), actorKey, &actor))
	r.Body = io.NopCloser(bytes.NewReader(body))
	return r, nil
}

// sameArgs reports whether the signed arguments are the body: byte for
// byte, an empty body being signed as null.
func sameArgs(args json.RawMessage, body []byte) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return len(args) == 0 || string(args) == "null"
	}
	return bytes.Equal(args, body)
}

// allow checks that the acting run, if any, may do action to the run ref;
// a person may do anything. It writes the refusal and returns false.
func (s *Server) allow(w http.ResponseWriter, r *http.Request, ref string, action tine.Action) (*engine.Ref, bool) {
	actor := actorOf(r)
	if actor == nil {
		return nil, true
	}
	target, err := s.e.FindRun(r.Context(), ref)
	if err == nil {
		err = capability.Scope(actor.Run, target.Run, action)
	}
	if err != nil {
		writeErr(w, err)
		return actor, false
	}
	return actor, true
}

// allowGroup checks that the acting run, if any, may look at group ref:
// it must be allowed to inspect the group's parent. (Choosing a winner is
// checked on the chosen fork itself.)
func (s *Server) allowGroup(w http.ResponseWriter, r *http.Request, ref string) (*engine.Ref, bool) {
	actor := actorOf(r)
	if actor == nil {
		return nil, true
	}
	g, _, err := s.e.Group(r.Context(), ref)
	if err != nil {
		writeErr(w, err)
		return actor, false
	}
	return s.allow(w, r, g.Parent, tine.ActionInspect)
}

// requestApproval records a resolution asked for by a run, answering 202
// with the pending approval.
func (s *Server) requestApproval(w http.ResponseWriter, r *http.Request, actor *engine.Ref, res control.Resolution) {
	a, err := s.cp.RequestResolution(ctxOf(r), *actor, res)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]any{"approval": a,
		"message": fmt.Sprintf("waiting for a person: tine approve %s", a.ID)})
}

// PersonOnly wraps h (the metrics, which count every workspace) so that
// requests from inside a run are refused: those on a run's own socket, and
// those on the people's socket from a process that is not a person
// (ConnContext); and so are people who may not see every workspace
// (callerOf). The dashboard, which shows each person theirs, is wrapped by
// People instead.
func PersonOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, _ := r.Context().Value(peerKey).(peer); p.run != "" {
			writeErr(w, fmt.Errorf("%s is for people, not code inside a run: %w", r.URL.Path, capability.ErrScope))
			return
		}
		if callerOf(r) != nil {
			writeErr(w, fmt.Errorf("%s shows every workspace: it is for root and the daemon's own user: %w", r.URL.Path, tine.ErrPrivilege))
			return
		}
		h.ServeHTTP(w, r)
	})
}
