package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// Cells are a person's: every cell route refuses a request signed by a
// run (the acting run in its context), before it reads the body or
// touches the run.
func TestCells_RefuseARun(t *testing.T) {
	s := &Server{}
	actor := &engine.Ref{Run: &tine.Run{ID: "r1", Name: "source", Role: tine.RoleSource}}
	for name, h := range map[string]http.HandlerFunc{"run": s.runCell, "show": s.cell, "promote": s.promoteCell, "replay": s.replayCell} {
		req := httptest.NewRequest("POST", "/v1/runs/r1/cells", strings.NewReader(`{"args":["true"],"write":["x"]}`))
		req = req.WithContext(context.WithValue(req.Context(), actorKey, actor))
		rec := httptest.NewRecorder()
		h(rec, req)
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "by a person") {
			t.Errorf("%s from inside a run: %d %s", name, rec.Code, rec.Body)
		}
	}
}

// Only a person carries .git internals: a merge asked from inside a run
// with include_git_internals is refused before the run is looked up or
// anything planned (issue 31: a fork's hook would run as the person).
func TestMerge_ARunMayNotIncludeGitInternals(t *testing.T) {
	s := &Server{}
	actor := &engine.Ref{Run: &tine.Run{ID: "r1", Name: "source-1", Role: tine.RoleFork}}
	req := httptest.NewRequest("POST", "/v1/runs/r1/merge", strings.NewReader(`{"include_git_internals":true}`))
	req = req.WithContext(context.WithValue(req.Context(), actorKey, actor))
	rec := httptest.NewRecorder()
	s.merge(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "only a person may") {
		t.Errorf("include_git_internals from inside a run: %d %s", rec.Code, rec.Body)
	}
}
