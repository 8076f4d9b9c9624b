package httpapi

import (
	"context"
	"net/http"
	"net/url"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/forkrun"
)

// judgeStats answers GET /v1/judge/stats: how the judges fared with the
// people who chose, counting the groups of the workspaces the caller may
// use (every one for root), with their heuristic weights. A person's.
func (s *Server) judgeStats(w http.ResponseWriter, r *http.Request) {
	if !s.personOnly(w, r) {
		return
	}
	var mayUse func(*tine.Workspace) bool
	if c := callerOf(r); c != nil {
		mayUse = c.MayUse
	}
	st, err := forkrun.JudgeStatsOf(r.Context(), s.e, mayUse)
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// resetJudgeWeights answers POST /v1/workspaces/{ref}/judge-weights/reset:
// the heuristic judge's learned weights of the workspace are forgotten. A
// person's.
func (s *Server) resetJudgeWeights(w http.ResponseWriter, r *http.Request) {
	if !s.personOnly(w, r) {
		return
	}
	ws, err := s.e.FindWorkspace(r.Context(), r.PathValue("ref"))
	if err == nil {
		err = control.Of(s.e).ResetJudgeWeights(ctxOf(r), ws.Name)
	}
	if err != nil {
		writeErr(w, err)
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Workspace string `json:"workspace"`
	}{ws.Name})
}

// JudgeStats is tine judge stats through the daemon: the groups of the
// caller's workspaces.
func (c *Client) JudgeStats(ctx context.Context) (forkrun.JudgeStats, error) {
	st, err := get[forkrun.JudgeStats](ctx, c, "/v1/judge/stats")
	return *st, err
}

// ResetJudgeWeights forgets the heuristic judge's learned weights of
// workspace ws.
func (c *Client) ResetJudgeWeights(ctx context.Context, ws string) error {
	_, err := c.Do(ctx, http.MethodPost, "/v1/workspaces/"+url.PathEscape(ws)+"/judge-weights/reset", nil, nil)
	return err
}
