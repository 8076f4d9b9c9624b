package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/runtime"
)

// ForkRequest is the body of POST /v1/runs/{ref}/fork.
type ForkRequest struct {
	Copies     int      `json:"copies"`
	Name       string   `json:"name"`
	Approaches []string `json:"approaches"`
	Live       string   `json:"live"`
	// Request is the client's key for this call (see engine.ForkOptions).
	Request string `json:"request,omitempty"`
	NoWait  bool   `json:"no_wait,omitempty"` // answer before the forks' services pass their ready checks
	// AllowSecrets lets a live fork copy processes that hold secrets.
	AllowSecrets bool `json:"allow_secrets,omitempty"`
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	req := ForkRequest{Copies: 1}
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	actor, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionFork)
	if !ok {
		return
	}
	o := engine.ForkOptions{Copies: req.Copies, Name: req.Name, Approaches: req.Approaches, Live: req.Live, NoWait: req.NoWait, Request: req.Request, AllowSecrets: req.AllowSecrets}
	if actor != nil && s.cp.InTurn(*actor) && (r.PathValue("ref") == actor.Run.ID || r.PathValue("ref") == actor.Run.Name) {
		// The agent forks itself mid-turn: its files are still moving, so
		// the fork waits for the turn to stop.
		if err := s.cp.QueueFork(*actor, o); err != nil {
			writeErr(w, err)
			return
		}
		writeJSON(w, http.StatusAccepted, map[string]any{"queued": true,
			"message": "tine forks " + actor.Run.Name + " when this turn stops: say so and end the turn"})
		return
	}
	res, err := s.e.Fork(workCtx(r), r.PathValue("ref"), o)
	handle(w, http.StatusCreated, res, err)
}

// CheckpointRequest is the body of POST /v1/runs/{ref}/checkpoint.
type CheckpointRequest struct {
	Label string `json:"label"`
}

func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	var req CheckpointRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionSendWork); !ok {
		return
	}
	v, err := s.e.Checkpoint(ctxOf(r), r.PathValue("ref"), req.Label)
	handle(w, http.StatusCreated, v, err)
}

// RollbackRequest is the body of POST /v1/runs/{ref}/rollback.
type RollbackRequest struct {
	To string `json:"to"`
}

func (s *Server) rollback(w http.ResponseWriter, r *http.Request) {
	var req RollbackRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if req.To == "" {
		writeErr(w, fmt.Errorf("rollback needs \"to\": a version id or label: %w", tine.ErrInvalid))
		return
	}
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionSendWork); !ok {
		return
	}
	res, err := s.e.Rollback(ctxOf(r), r.PathValue("ref"), req.To)
	handle(w, http.StatusOK, res, err)
}

// MergeRequest is the body of POST /v1/runs/{ref}/merge.
type MergeRequest struct {
	Into      string   `json:"into"`
	Scope     string   `json:"scope"`
	Paths     []string `json:"paths"`
	DryRun    bool     `json:"dry_run"`
	TextMerge bool     `json:"text_merge"`
	Force     bool     `json:"force"`
	// NoCommits squashes the run's commits into the target's working tree
	// instead of carrying them into its history (engine.MergeOptions).
	NoCommits bool `json:"no_commits,omitempty"`
	// Commits is what clients before commits were carried by default sent
	// to ask for it; accepted, and without effect.
	Commits bool `json:"commits,omitempty"`
	// IncludeGitInternals carries the run's changes to .git hooks, config
	// and other internals too (filesystem and paths scopes); a person's
	// request only.
	IncludeGitInternals bool `json:"include_git_internals,omitempty"`
}

func (s *Server) merge(w http.ResponseWriter, r *http.Request) {
	var req MergeRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if actor := actorOf(r); actor != nil {
		if !s.allowMerge(w, r, actor, req) {
			return
		}
		if !req.DryRun {
			body, _ := json.Marshal(req)
			s.requestApproval(w, r, actor, control.Resolution{Action: tine.ActionMerge, Run: actor.Run.ID, Args: body})
			return
		}
	}
	res, err := s.e.Merge(workCtx(r), r.PathValue("ref"), engine.MergeOptions{Into: req.Into, Scope: req.Scope,
		Paths: req.Paths, DryRun: req.DryRun, TextMerge: req.TextMerge, Force: req.Force, NoCommits: req.NoCommits,
		IncludeGitInternals: req.IncludeGitInternals})
	if err != nil && res != nil { // a conflict: the plan says where
		writeErrWith(w, err, res)
		return
	}
	handle(w, http.StatusOK, res, err)
}

// PromoteRequest is the body of POST /v1/runs/{ref}/promote.
type PromoteRequest struct {
	DropSourceChanges bool `json:"drop_source_changes"`
}

func (s *Server) promote(w http.ResponseWriter, r *http.Request) {
	var req PromoteRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if actor, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionPromote); !ok {
		return
	} else if actor != nil {
		body, _ := json.Marshal(req)
		s.requestApproval(w, r, actor, control.Resolution{Action: tine.ActionPromote, Run: r.PathValue("ref"), Args: body})
		return
	}
	res, err := s.e.Promote(ctxOf(r), r.PathValue("ref"), req.DropSourceChanges)
	handle(w, http.StatusOK, res, err)
}

// DiscardRequest is the body of POST /v1/runs/{ref}/discard (ref may be a group).
type DiscardRequest struct {
	Force bool `json:"force"`
}

func (s *Server) discard(w http.ResponseWriter, r *http.Request) {
	var req DiscardRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if actor, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionDiscard); !ok {
		return
	} else if actor != nil {
		s.requestApproval(w, r, actor, control.Resolution{Action: tine.ActionDiscard, Run: r.PathValue("ref")})
		return
	}
	runs, err := s.e.Discard(workCtx(r), r.PathValue("ref"), req.Force)
	handle(w, http.StatusOK, map[string]any{"discarded": runs}, err)
}

// StartRequest is the body of POST /v1/runs/{ref}/start.
type StartRequest struct {
	Services *bool `json:"services"` // default true
	// Display gives the run a display of its own (tine start --display).
	Display bool `json:"display,omitempty"`
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionSendWork); !ok {
		return
	}
	res, err := s.rt.Start(ctxOf(r), r.PathValue("ref"), runtime.StartOptions{Services: req.Services == nil || *req.Services, Display: req.Display})
	if err != nil && res != nil {
		writeErrWith(w, err, res)
		return
	}
	handle(w, http.StatusOK, res, err)
}

func (s *Server) stopRun(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionSendWork); !ok {
		return
	}
	run, err := s.rt.Stop(ctxOf(r), r.PathValue("ref"))
	handle(w, http.StatusOK, run, err)
}

// ChooseRequest is the body of POST /v1/groups/{ref}/choose.
type ChooseRequest struct {
	Run        string `json:"run"`
	Promote    bool   `json:"promote"`
	NoCommits  bool   `json:"no_commits,omitempty"` // merging, squash the run's commits
	DiscardAll bool   `json:"discard_all"`
}

func (s *Server) choose(w http.ResponseWriter, r *http.Request) {
	var req ChooseRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	if (req.Run == "") != req.DiscardAll {
		writeErr(w, fmt.Errorf("choose needs \"run\" or \"discard_all\", not both: %w", tine.ErrInvalid))
		return
	}
	if actor, ok := s.allowGroup(w, r, r.PathValue("ref")); !ok {
		return
	} else if actor != nil {
		if req.DiscardAll {
			writeErr(w, fmt.Errorf("a run may choose a winner, not discard the whole group: %w", tine.ErrPrivilege))
			return
		}
		if _, ok := s.allow(w, r, req.Run, tine.ActionChoose); !ok {
			return
		}
		body, _ := json.Marshal(req)
		s.requestApproval(w, r, actor, control.Resolution{Action: tine.ActionChoose, Run: req.Run, Group: r.PathValue("ref"), Args: body})
		return
	}
	res, err := s.e.Choose(ctxOf(r), r.PathValue("ref"), req.Run, engine.ChooseOptions{Promote: req.Promote, NoCommits: req.NoCommits})
	handle(w, http.StatusOK, res, err)
}

// allowMerge lets a run merge only its own work, and only into its
// direct parent.
func (s *Server) allowMerge(w http.ResponseWriter, r *http.Request, actor *engine.Ref, req MergeRequest) bool {
	if req.IncludeGitInternals {
		writeErr(w, tine.Optionf("run %s may not carry .git internals (hooks, config) with %s: only a person may: %w",
			actor.Run.Name, tine.Opt("include_git_internals"), capability.ErrScope))
		return false
	}
	ref, err := s.e.FindRun(r.Context(), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return false
	}
	if ref.Run.ID != actor.Run.ID {
		if req.DryRun {
			_, ok := s.allow(w, r, ref.Run.ID, tine.ActionInspect)
			return ok
		}
		writeErr(w, fmt.Errorf("run %s may merge only its own work, not %s's: %w", actor.Run.Name, ref.Run.Name, capability.ErrScope))
		return false
	}
	into := req.Into
	if into == "" {
		into = actor.Run.Parent
	}
	_, ok := s.allow(w, r, into, tine.ActionMerge)
	return ok
}

// EvidenceRequest is the body of POST /v1/runs/{ref}/evidence: what an
// agent hook in the run reports.
type EvidenceRequest struct {
	Kind string          `json:"kind"`
	Data json.RawMessage `json:"data"`
}

func (s *Server) evidence(w http.ResponseWriter, r *http.Request) {
	var req EvidenceRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	actor := actorOf(r)
	if actor != nil && r.PathValue("ref") != actor.Run.ID && r.PathValue("ref") != actor.Run.Name {
		writeErr(w, fmt.Errorf("a run reports only its own evidence: %w", capability.ErrScope))
		return
	}
	ref, err := s.e.FindRun(r.Context(), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return
	}
	msg, err := s.cp.RecordEvidence(ctxOf(r), ref, req.Kind, req.Data)
	if err == nil && req.Kind == engine.EvidenceTurnStopped {
		if started := s.forkRuns.startQueued(s.host(), ref.Run.ID); started != "" {
			msg = strings.TrimPrefix(msg+"; "+started, "; ")
		}
	}
	handle(w, http.StatusOK, map[string]any{"recorded": true, "message": msg}, err)
}

// ExecRequest is the body of POST /v1/runs/{ref}/exec: a command run to
// its end inside the run, its output's tail returned.
type ExecRequest struct {
	Args     []string `json:"args"`
	TimeoutS float64  `json:"timeout_s"`
	// Env is the caller's environment, which the command's is made from
	// (as tine exec's; only the identity of another user's); nil, or
	// asked from inside a run: the daemon's account of the owner's.
	Env []string `json:"env,omitempty"`
	// Group, when set, is the group the run is a fork of, whose command
	// this is (MCP's fork_run): POST /v1/groups/{g}/cancel kills it, from
	// any client.
	Group string `json:"group,omitempty"`
}

func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	var req ExecRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	actor, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionSendWork)
	if !ok {
		return
	}
	ref, err := s.e.FindRun(r.Context(), r.PathValue("ref"))
	if err != nil {
		writeErr(w, err)
		return
	}
	// A person's environment, as the owner's (only their identity when
	// the caller is another user); a run's request gets the daemon's
	// account of the owner.
	var base []string
	if actor == nil && req.Env != nil {
		base = callerEnv(ref.Workspace, req.Env, peerUID(r))
	}
	// The request's own context: a client that hangs up (an MCP call
	// cancelled) kills the command, whose output no one would read; so
	// does a cancel of its group.
	ctx := r.Context()
	if req.Group != "" {
		if ref.Run.Group != req.Group {
			writeErr(w, fmt.Errorf("%s is not a fork of group %s: %w", ref.Run.Name, req.Group, tine.ErrInvalid))
			return
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		defer s.forkRuns.addCommand(req.Group, KilledCommand{Run: ref.Run.ID, Name: ref.Run.Name}, cancel)()
	}
	st, _ := s.rt.ProcState(ref)
	res, err := s.rt.ExecWith(ctx, ref.Run.ID, runtime.ExecOptions{Args: req.Args, Base: base,
		Timeout: time.Duration(req.TimeoutS * float64(time.Second))})
	// A supervisor launched for this command is stopped, as tine exec
	// does: fork_run's commands left one running in every fork.
	if st != runtime.ProcRunning {
		s.rt.StopIdle(r.Context(), ref.Run.ID)
	}
	handle(w, http.StatusOK, res, err)
}

// effect records a request for an external effect from inside run ref
// (effect.Request), for a person to approve; 200 with the receipt when its
// key was carried out already.
func (s *Server) effect(w http.ResponseWriter, r *http.Request) {
	var req effect.Request
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	actor, ok := s.allow(w, r, r.PathValue("ref"), tine.ActionEffect)
	if !ok {
		return
	}
	if actor == nil {
		writeErr(w, fmt.Errorf("external effects are asked for from inside a run (tine effect); a person does them directly: %w", tine.ErrInvalid))
		return
	}
	if target, err := s.e.FindRun(ctxOf(r), r.PathValue("ref")); err != nil || target.Run.ID != actor.Run.ID {
		writeErr(w, fmt.Errorf("a run asks for effects for itself only: %w", capability.ErrScope))
		return
	}
	ans, err := s.cp.RequestEffect(ctxOf(r), *actor, req)
	code := http.StatusAccepted
	if ans != nil && ans.Receipt != nil {
		code = http.StatusOK
	}
	handle(w, code, ans, err)
}
