package httpapi

import (
	"net/http"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/runtime"
)

// Cells and combines are a person's: a run may not make one (its own forks come from
// tine fork-self and fork-run), so every cell route refuses a run's
// capability. A person reaches only cells of runs they own (ownRun).

// CombineRequest is the body of POST /v1/groups/{ref}/combine.
type CombineRequest struct {
	Takes  []engine.Take `json:"takes"`
	DryRun bool          `json:"dry_run"`
}

// combine joins chosen paths of several forks of a group into its parent
// (tine combine): a person's, like a cell.
func (s *Server) combine(w http.ResponseWriter, r *http.Request) {
	var req CombineRequest
	if !personsOnly(w, r, "a combine is a person's, not asked from inside a run (MCP merge asks for a merge)") || !decodeOrFail(w, r, &req) {
		return
	}
	res, err := s.e.Combine(ctxOf(r), r.PathValue("ref"), req.Takes, req.DryRun)
	if err != nil && res != nil && res.Plan != nil { // a conflict: the plan says where
		writeErrWith(w, err, res)
		return
	}
	handle(w, http.StatusOK, res, err)
}

// CellPromoteRequest is the body of POST /v1/runs/{ref}/cell/promote.
type CellPromoteRequest struct {
	Paths  []string `json:"paths"`
	DryRun bool     `json:"dry_run"`
}

// cellsPersonOnly refuses a request signed by a run.
func cellsPersonOnly(w http.ResponseWriter, r *http.Request) bool {
	return personsOnly(w, r, "cells are made and promoted by a person, not from inside a run")
}

func (s *Server) runCell(w http.ResponseWriter, r *http.Request) {
	var o runtime.CellOptions
	if !cellsPersonOnly(w, r) || !decodeOrFail(w, r, &o) {
		return
	}
	c, err := s.rt.RunCell(ctxOf(r), r.PathValue("ref"), o)
	madeCell(w, c, err)
}

// madeCell answers with a new cell: 201 with its record, or the error with
// the record when the command ran but something after it failed.
func madeCell(w http.ResponseWriter, c *runtime.Cell, err error) {
	if err != nil && c != nil {
		writeErrWith(w, err, c)
		return
	}
	handle(w, http.StatusCreated, c, err)
}

func (s *Server) cell(w http.ResponseWriter, r *http.Request) {
	if !cellsPersonOnly(w, r) {
		return
	}
	c, err := s.rt.CellOf(r.Context(), r.PathValue("ref"))
	handle(w, http.StatusOK, c, err)
}

func (s *Server) promoteCell(w http.ResponseWriter, r *http.Request) {
	var req CellPromoteRequest
	if !cellsPersonOnly(w, r) || !decodeOrFail(w, r, &req) {
		return
	}
	res, err := s.rt.PromoteCell(ctxOf(r), r.PathValue("ref"), req.Paths, req.DryRun)
	if err != nil && res != nil {
		writeErrWith(w, err, res)
		return
	}
	handle(w, http.StatusOK, res, err)
}

func (s *Server) replayCell(w http.ResponseWriter, r *http.Request) {
	if !cellsPersonOnly(w, r) {
		return
	}
	c, err := s.rt.ReplayCell(ctxOf(r), r.PathValue("ref"))
	madeCell(w, c, err)
}
