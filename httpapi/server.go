package httpapi

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/runtime"
)

// Server serves the API over one engine.
type Server struct {
	e          *engine.Engine
	cp         *control.Plane   // e's control plane
	rt         *runtime.Manager // the processes of e's runs
	verifier   *capability.Verifier
	token      string // required on TCP; "" disables the check (the unix socket)
	mux        *http.ServeMux
	start      time.Time
	hooks      func(agent, decision string, d time.Duration)
	forkRuns   *forkRuns  // the fork-runs it started that have not ended
	dash       *Dashboard // nil: no dashboard over TCP (POST /v1/dashboard says so)
	interrupts interrupts // the requests in progress their clients may interrupt
	// inited is told of each workspace the API inits (WithInited); nil:
	// none is.
	inited func(ctx context.Context, w *tine.Workspace)
}

// New returns a server of e, its runtime and its control plane (runtime.Of,
// control.Of). Requests must carry token as a bearer token
// unless it is empty (the unix socket, whose file mode is the access
// control). The fork-runs it starts run until they end or Shutdown.
func New(e *engine.Engine, token string, opts ...Option) *Server {
	cp := control.Of(e)
	s := &Server{e: e, cp: cp, rt: runtime.Of(e), verifier: cp.Verifier(), token: token, mux: http.NewServeMux(), start: time.Now(),
		hooks: func(string, string, time.Duration) {}, forkRuns: newForkRuns()}
	for _, o := range opts {
		o(s)
	}
	s.routes()
	return s
}

// Option configures a Server.
type Option func(*Server)

// WithHookObserver sets what receives the decision times agent hooks in
// runs report (POST /v1/hooks/timing): the metrics' hook histogram.
func WithHookObserver(f func(agent, decision string, d time.Duration)) Option {
	return func(s *Server) { s.hooks = f }
}

// WithInited sets what is told of each workspace the API inits (POST
// /v1/workspaces), once it is made: a fleet node records that it lives
// there.
func WithInited(f func(ctx context.Context, w *tine.Workspace)) Option {
	return func(s *Server) { s.inited = f }
}

// ServeHTTP checks the token and, from inside a run, the signature, bounds
// the body by its route and dispatches. A refused request's body is never
// read, and its connection is closed.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.token != "" && !s.authorized(r) {
		unauthorized(w)
		return
	}
	r, err := s.inside(s.limitBody(w, r))
	if err != nil {
		w.Header().Set("Connection", "close")
		writeErr(w, err)
		return
	}
	r, forget := s.register(r)
	defer forget()
	s.mux.ServeHTTP(w, r)
}

// unauthorized answers a request without the bearer token, closing its
// connection rather than reading its body.
func unauthorized(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	writeJSON(w, http.StatusUnauthorized, Error{Error: "a bearer token is required", Code: "unauthorized"})
}

func (s *Server) authorized(r *http.Request) bool { return bearerOK(r, s.token) }

// bearerOK reports whether r carries token as its bearer token.
func bearerOK(r *http.Request, token string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /v1/health", s.health)
	m.HandleFunc("GET /v1/runs", s.runs)
	m.HandleFunc("GET /v1/runs/{ref}", s.ownRun(s.ps))
	m.HandleFunc("GET /v1/runs/{ref}/diff", s.ownRun(s.diff))
	m.HandleFunc("GET /v1/runs/{ref}/events", s.ownRun(s.runEvents))
	m.HandleFunc("GET /v1/runs/{ref}/summary", s.ownRun(s.summary))
	m.HandleFunc("GET /v1/runs/{ref}/path", s.ownRun(s.path))
	m.HandleFunc("GET /v1/runs/{ref}/logs", s.ownRun(s.logs))
	m.HandleFunc("GET /v1/runs/{ref}/logs/{service}", s.ownRun(s.logChunk))
	m.HandleFunc("POST /v1/runs/{ref}/ports", s.ownRun(s.publish))
	m.HandleFunc("GET /v1/runs/{ref}/screen", s.ownRun(s.screen))
	m.HandleFunc("POST /v1/runs/{ref}/input", s.ownRun(s.input))
	m.HandleFunc("GET /v1/runs/{ref}/vnc", s.ownRun(s.vnc))
	m.HandleFunc("POST /v1/runs/{ref}/fork", s.ownRun(s.fork))
	m.HandleFunc("POST /v1/runs/{ref}/fork-run", s.ownRun(s.forkRun))
	m.HandleFunc("POST /v1/runs/{ref}/evidence", s.ownRun(s.evidence))
	m.HandleFunc("POST /v1/runs/{ref}/exec", s.ownRun(s.exec))
	m.HandleFunc("POST /v1/runs/{ref}/attach", s.ownRun(s.attach))
	m.HandleFunc("POST /v1/hooks/timing", s.hookTiming)
	m.HandleFunc("POST /v1/runs/{ref}/checkpoint", s.ownRun(s.checkpoint))
	m.HandleFunc("POST /v1/runs/{ref}/rollback", s.ownRun(s.rollback))
	m.HandleFunc("POST /v1/runs/{ref}/merge", s.ownRun(s.merge))
	m.HandleFunc("POST /v1/runs/{ref}/promote", s.ownRun(s.promote))
	m.HandleFunc("POST /v1/runs/{ref}/discard", s.ownRun(s.discard))
	m.HandleFunc("POST /v1/runs/{ref}/effects", s.ownRun(s.effect))
	m.HandleFunc("POST /v1/runs/{ref}/start", s.ownRun(s.startRun))
	m.HandleFunc("POST /v1/runs/{ref}/stop", s.ownRun(s.stopRun))
	m.HandleFunc("POST /v1/runs/{ref}/cells", s.ownRun(s.runCell))
	m.HandleFunc("GET /v1/runs/{ref}/cell", s.ownRun(s.cell))
	m.HandleFunc("POST /v1/runs/{ref}/cell/promote", s.ownRun(s.promoteCell))
	m.HandleFunc("POST /v1/runs/{ref}/cell/replay", s.ownRun(s.replayCell))
	m.HandleFunc("GET /v1/workspaces", s.workspaces)
	m.HandleFunc("GET /v1/workspaces/{ref}", s.ownWorkspace(s.workspace))
	m.HandleFunc("POST /v1/workspaces", s.initWorkspace)
	m.HandleFunc("POST /v1/workspaces/{ref}/release", s.ownWorkspace(s.releaseWorkspace))
	m.HandleFunc("GET /v1/groups/{ref}/compare", s.ownGroup(s.compare))
	m.HandleFunc("GET /v1/groups/{ref}/export", s.ownGroup(s.export))
	m.HandleFunc("POST /v1/groups/{ref}/choose", s.ownGroup(s.choose))
	m.HandleFunc("POST /v1/groups/{ref}/combine", s.ownGroup(s.combine))
	m.HandleFunc("GET /v1/groups/{ref}/report", s.ownGroup(s.forkRunReport))
	m.HandleFunc("POST /v1/groups/{ref}/cancel", s.ownGroup(s.cancelForkRun))
	m.HandleFunc("GET /v1/events", s.events)
	m.HandleFunc("GET /v1/judge/stats", s.judgeStats)
	m.HandleFunc("POST /v1/workspaces/{ref}/judge-weights/reset", s.ownWorkspace(s.resetJudgeWeights))
	m.HandleFunc("GET /v1/approvals", s.approvals)
	m.HandleFunc("POST /v1/approvals/{id}/approve", s.ownApproval(s.approve))
	m.HandleFunc("POST /v1/approvals/{id}/refuse", s.ownApproval(s.refuse))
	m.HandleFunc("POST /v1/requests/{id}/cancel", s.cancelRequest)
	m.HandleFunc("POST /v1/dashboard", s.dashboardLink)
	m.HandleFunc("DELETE /v1/dashboard", s.revokeDashboard)
}

// handle runs f and writes its result or error.
func handle(w http.ResponseWriter, code int, v any, err error) {
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, code, v)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"ok": true, "home": s.e.Home(), "uptime_s": int(time.Since(s.start).Seconds())})
}

// RunRow is one run as listed by GET /v1/runs.
type RunRow struct {
	*tine.Run
	WorkspaceName string `json:"workspace_name"`
	Path          string `json:"path,omitempty"`
	Processes     string `json:"processes,omitempty"`
}

func (s *Server) runs(w http.ResponseWriter, r *http.Request) {
	states, err := s.e.Records(r.Context(), r.URL.Query().Get("workspace"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if states = visible(r, states); len(states) == 0 && r.URL.Query().Get("workspace") != "" {
		writeErr(w, fmt.Errorf("no workspace %q (see tine ls): %w", r.URL.Query().Get("workspace"), tine.ErrNotFound))
		return
	}
	all := r.URL.Query().Get("all") == "true"
	rows := []RunRow{}
	for _, st := range states {
		for _, run := range st.Runs {
			if !all && !run.Active() {
				continue
			}
			if a := actorOf(r); a != nil && capability.Scope(a.Run, run, tine.ActionInspect) != nil {
				continue // a run sees itself and its direct forks
			}
			row := RunRow{Run: run, WorkspaceName: st.Workspace.Name}
			if run.Active() {
				row.Path = s.e.Path(st.Workspace, run)
				row.Processes, _ = s.rt.ProcState(engine.Ref{Workspace: st.Workspace, Run: run})
			}
			rows = append(rows, row)
		}
	}
	writeJSON(w, http.StatusOK, rows)
}

func (s *Server) ps(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionInspect); !ok {
		return
	}
	ps, err := s.rt.PS(r.Context(), r.PathValue("ref"))
	handle(w, http.StatusOK, ps, err)
}

func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionInspect); !ok {
		return
	}
	ref, err := s.e.FindRun(r.Context(), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return
	}
	if r.URL.Query().Get("patch") == "true" {
		w.Header().Set("Content-Type", "text/x-diff")
		if err := s.e.Patch(r.Context(), ref, w); err != nil {
			writeErr(w, err)
		}
		return
	}
	ch, err := s.e.Changes(r.Context(), ref)
	handle(w, http.StatusOK, map[string]any{"run": ref.Run, "changes": ch}, err)
}

func (s *Server) runEvents(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionInspect); !ok {
		return
	}
	ref, err := s.e.FindRun(r.Context(), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return
	}
	evs, err := s.e.Events(r.Context(), tine.EventFilter{Run: ref.Run.ID})
	handle(w, http.StatusOK, evs, err)
}

func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	if !s.personOnly(w, r) {
		return
	}
	q := r.URL.Query()
	f := tine.EventFilter{Workspace: q.Get("workspace"), Run: q.Get("run")}
	var err error
	if v := q.Get("after"); v != "" {
		if f.After, err = strconv.ParseInt(v, 10, 64); err != nil {
			writeErr(w, fmt.Errorf("after=%q: %w", v, tine.ErrInvalid))
			return
		}
	}
	if v := q.Get("limit"); v != "" {
		if f.Limit, err = strconv.Atoi(v); err != nil {
			writeErr(w, fmt.Errorf("limit=%q: %w", v, tine.ErrInvalid))
			return
		}
	}
	c := callerOf(r)
	if f.Workspace != "" {
		ws, err := s.e.FindWorkspace(r.Context(), f.Workspace)
		if err == nil && !c.MayUse(ws) {
			err = fmt.Errorf("no workspace %q (see tine ls): %w", f.Workspace, tine.ErrNotFound)
		}
		if err != nil {
			writeErr(w, err)
			return
		}
		f.Workspace = ws.ID
	}
	evs, err := s.e.Events(r.Context(), f)
	evs = s.visibleEvents(r, evs)
	handle(w, http.StatusOK, evs, err)
}

func (s *Server) workspaces(w http.ResponseWriter, r *http.Request) {
	if !s.personOnly(w, r) {
		return
	}
	st, err := s.e.Records(r.Context(), "")
	if st = visible(r, st); st == nil {
		st = []engine.WorkspaceRecords{}
	}
	handle(w, http.StatusOK, st, err)
}

func (s *Server) workspace(w http.ResponseWriter, r *http.Request) {
	if !s.personOnly(w, r) {
		return
	}
	st, err := s.e.Records(r.Context(), r.PathValue("ref"))
	if err == nil && len(st) == 1 {
		writeJSON(w, http.StatusOK, st[0])
		return
	}
	handle(w, http.StatusOK, st, err)
}

func (s *Server) compare(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allowGroup(w, r, r.PathValue("ref")); !ok {
		return
	}
	c, err := s.e.Compare(r.Context(), r.PathValue("ref"))
	handle(w, http.StatusOK, c, err)
}

// ctxOf detaches a state-changing operation from the request, so a client
// that hangs up does not interrupt a transaction half-way.
func ctxOf(r *http.Request) context.Context { return context.WithoutCancel(r.Context()) }

// personOnly refuses requests from inside runs (whole workspaces and the
// event log are a person's view).
func (s *Server) personOnly(w http.ResponseWriter, r *http.Request) bool {
	return personsOnly(w, r, "only a person may read or do this, not code inside a run")
}

// personsOnly refuses a request signed by a run, saying why (out of
// scope), and reports whether the request may go on.
func personsOnly(w http.ResponseWriter, r *http.Request, why string) bool {
	if actorOf(r) != nil {
		writeErr(w, fmt.Errorf("%s: %w", why, capability.ErrScope))
		return false
	}
	return true
}

// DecideRequest is the body of POST /v1/approvals/{id}/approve or refuse.
type DecideRequest struct {
	By string `json:"by"` // who decided, for the record
}

func (s *Server) approvals(w http.ResponseWriter, r *http.Request) {
	if !s.personOnly(w, r) {
		return
	}
	if ws := r.URL.Query().Get("workspace"); ws != "" && callerOf(r) != nil {
		if w2, err := s.e.FindWorkspace(r.Context(), ws); err != nil || !callerOf(r).MayUse(w2) {
			writeErr(w, fmt.Errorf("no workspace %q (see tine ls): %w", ws, tine.ErrNotFound))
			return
		}
	}
	list, err := s.cp.Pending(r.Context(), r.URL.Query().Get("workspace"))
	list = callerOf(r).Approvals(r.Context(), s.e.Store(), list)
	handle(w, http.StatusOK, list, err)
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	var req DecideRequest
	if !s.personOnly(w, r) || !decodeOrFail(w, r, &req) {
		return
	}
	res, err := s.cp.Approve(ctxOf(r), r.PathValue("id"), decider(r, req))
	if err != nil && res != nil {
		writeErrWith(w, err, res)
		return
	}
	handle(w, http.StatusOK, res, err)
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request) {
	var req DecideRequest
	if !s.personOnly(w, r) || !decodeOrFail(w, r, &req) {
		return
	}
	a, err := s.cp.Refuse(ctxOf(r), r.PathValue("id"), decider(r, req))
	handle(w, http.StatusOK, a, err)
}

// decider names who decided, for the record: a normal user on the
// people's socket is who SO_PEERCRED says, whatever the request says.
func decider(r *http.Request, req DecideRequest) string {
	if c := callerOf(r); c != nil {
		return account.Lookup(c.UID, c.GID).Name
	}
	return orDefault(req.By, "api")
}

func decodeOrFail(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := decode(r, v); err != nil {
		writeErr(w, err)
		return false
	}
	return true
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// RequireToken wraps h so that, when token is not empty, every request
// must carry it as a bearer token.
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearerOK(r, token) {
			unauthorized(w)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// HookTiming is the body of POST /v1/hooks/timing: how long an agent
// hook took to decide. It feeds a histogram and nothing else.
type HookTiming struct {
	Agent    string  `json:"agent"`    // claude or codex
	Decision string  `json:"decision"` // pass or deny
	Seconds  float64 `json:"seconds"`
}

func (s *Server) hookTiming(w http.ResponseWriter, r *http.Request) {
	var req HookTiming
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	agents, decisions := map[string]bool{"claude": true, "codex": true}, map[string]bool{"pass": true, "deny": true}
	if !agents[req.Agent] || !decisions[req.Decision] || req.Seconds < 0 || req.Seconds > 600 {
		writeErr(w, fmt.Errorf("hook timing %+v: %w", req, tine.ErrInvalid))
		return
	}
	s.hooks(req.Agent, req.Decision, time.Duration(req.Seconds*float64(time.Second)))
	writeJSON(w, http.StatusOK, map[string]bool{"recorded": true})
}
