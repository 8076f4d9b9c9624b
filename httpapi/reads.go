package httpapi

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
)

// The routes below serve what a person's CLI shows of their runs and
// groups (tine summary, export, path, logs, port), so that a normal user
// working through the system daemon sees what root sees of their own.

func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionInspect); !ok {
		return
	}
	sum, err := forkrun.Summarize(r.Context(), s.host(), r.PathValue("ref"))
	handle(w, http.StatusOK, sum, err)
}

func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allowGroup(w, r, r.PathValue("ref")); !ok {
		return
	}
	x, err := forkrun.ExportGroup(r.Context(), s.host(), r.PathValue("ref"))
	handle(w, http.StatusOK, x, err)
}

// RunPath is the answer of GET /v1/runs/{ref}/path: where the host reads
// a live run's files (tine path).
type RunPath struct {
	Run           string `json:"run"`
	Name          string `json:"name"`
	Path          string `json:"path"`
	WorkspacePath string `json:"workspace_path"`
}

// PathOf is the RunPath of run ref; a run that is not live has none.
func PathOf(ctx context.Context, e *engine.Engine, ref string) (RunPath, error) {
	r, err := e.FindRun(ctx, ref)
	if err != nil {
		return RunPath{}, err
	}
	if !r.Run.Active() {
		return RunPath{}, fmt.Errorf("run %s is %s: %w", r.Run.Name, r.Run.State, tine.ErrState)
	}
	return RunPath{Run: r.Run.ID, Name: r.Run.Name, Path: e.Path(r.Workspace, r.Run), WorkspacePath: r.Workspace.Path}, nil
}

func (s *Server) path(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionInspect); !ok {
		return
	}
	p, err := PathOf(r.Context(), s.e, r.PathValue("ref"))
	handle(w, http.StatusOK, p, err)
}

// Logs is the answer of GET /v1/runs/{ref}/logs[?service=S]: the services
// of the run that have a log (S alone, which must have one).
type Logs struct {
	Services []string `json:"services"`
}

// LogChunk is the answer of GET /v1/runs/{ref}/logs/{service}?offset=N:
// whole lines of the log from byte N on, and the offset after them (the
// next request's); Offset equal to N means nothing more yet.
type LogChunk struct {
	Text   string `json:"text"`
	Offset int64  `json:"offset"`
}

// logChunk bounds a LogChunk's text.
const logChunk = 4 << 20

func (s *Server) logs(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.inspected(w, r)
	if !ok {
		return
	}
	names, err := s.rt.LogServices(ref, r.URL.Query()["service"]...)
	handle(w, http.StatusOK, Logs{Services: names}, err)
}

func (s *Server) logChunk(w http.ResponseWriter, r *http.Request) {
	ref, ok := s.inspected(w, r)
	if !ok {
		return
	}
	off, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if err != nil || off < 0 {
		writeErr(w, fmt.Errorf("offset=%q: %w", r.URL.Query().Get("offset"), tine.ErrInvalid))
		return
	}
	text, next, err := s.rt.ReadLog(ref, r.PathValue("service"), off, logChunk)
	handle(w, http.StatusOK, LogChunk{Text: text, Offset: next}, err)
}

// inspected finds the run a route names, which the acting run, if any,
// may inspect.
func (s *Server) inspected(w http.ResponseWriter, r *http.Request) (engine.Ref, bool) {
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionInspect); !ok {
		return engine.Ref{}, false
	}
	ref, err := s.e.FindRun(r.Context(), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return ref, false
	}
	return ref, true
}

// PublishRequest is the body of POST /v1/runs/{ref}/ports: publish Port
// of the run on the host at Host (HOST:PORT, port 0 for a free one).
type PublishRequest struct {
	Port int    `json:"port"`
	Host string `json:"host"`
}

// Published is the answer of POST /v1/runs/{ref}/ports: where the host
// reaches the port.
type Published struct {
	HostAddr string `json:"host_addr"`
}

// publish is a person's: code inside a run does not open ports on the
// host. A normal user may not take the host's privileged ports (below
// 1024), which the daemon, as root, could.
func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	var req PublishRequest
	if !s.personOnly(w, r) || !decodeOrFail(w, r, &req) {
		return
	}
	if c := callerOf(r); c != nil {
		_, port, err := net.SplitHostPort(req.Host)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n != 0 && n < 1024 {
			writeErr(w, fmt.Errorf("host address %q: a normal user publishes on a port from 1024 up (or 0, a free one): %w", req.Host, tine.ErrPrivilege))
			return
		}
	}
	addr, err := s.rt.Publish(ctxOf(r), r.PathValue("ref"), req.Port, req.Host)
	handle(w, http.StatusOK, Published{HostAddr: addr}, err)
}
