package httpapi

import (
	"fmt"
	"net/http"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// ForkRequest is the body of POST /v1/runs/{ref}/fork.
type ForkRequest struct {
	Copies     int      `json:"copies"`
	Name       string   `json:"name"`
	Approaches []string `json:"approaches"`
	Live       string   `json:"live"`
}

func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	req := ForkRequest{Copies: 1}
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	res, err := s.e.Fork(ctxOf(r), r.PathValue("ref"), engine.ForkOptions{
		Copies: req.Copies, Name: req.Name, Approaches: req.Approaches, Live: req.Live})
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
}

func (s *Server) merge(w http.ResponseWriter, r *http.Request) {
	var req MergeRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	res, err := s.e.Merge(ctxOf(r), r.PathValue("ref"), engine.MergeOptions{Into: req.Into, Scope: req.Scope,
		Paths: req.Paths, DryRun: req.DryRun, TextMerge: req.TextMerge, Force: req.Force})
	if err != nil && res != nil { // a conflict: the plan says where
		code, name := status(err)
		writeJSON(w, code, map[string]any{"error": err.Error(), "code": name, "result": res})
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
	runs, err := s.e.Discard(ctxOf(r), r.PathValue("ref"), req.Force)
	handle(w, http.StatusOK, map[string]any{"discarded": runs}, err)
}

// StartRequest is the body of POST /v1/runs/{ref}/start.
type StartRequest struct {
	Services *bool `json:"services"` // default true
}

func (s *Server) startRun(w http.ResponseWriter, r *http.Request) {
	var req StartRequest
	if err := decode(r, &req); err != nil {
		writeErr(w, err)
		return
	}
	res, err := s.e.Start(ctxOf(r), r.PathValue("ref"), engine.StartOptions{Services: req.Services == nil || *req.Services})
	if err != nil && res != nil {
		code, name := status(err)
		writeJSON(w, code, map[string]any{"error": err.Error(), "code": name, "result": res})
		return
	}
	handle(w, http.StatusOK, res, err)
}

func (s *Server) stopRun(w http.ResponseWriter, r *http.Request) {
	run, err := s.e.Stop(ctxOf(r), r.PathValue("ref"))
	handle(w, http.StatusOK, run, err)
}

// ChooseRequest is the body of POST /v1/groups/{ref}/choose.
type ChooseRequest struct {
	Run        string `json:"run"`
	Promote    bool   `json:"promote"`
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
	res, err := s.e.Choose(ctxOf(r), r.PathValue("ref"), req.Run, req.Promote)
	handle(w, http.StatusOK, res, err)
}
