package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
)

// recorder is a Doer that records each request and answers with code and
// ans (as JSON).
type recorder struct {
	sent []string
	code int
	ans  any
	err  error
}

func (r *recorder) Do(_ context.Context, method, path string, body, out any) (int, error) {
	r.sent = append(r.sent, method+" "+path)
	if r.err != nil {
		return r.code, r.err
	}
	if out != nil {
		b, _ := json.Marshal(r.ans)
		json.Unmarshal(b, out)
	}
	return r.code, nil
}

func (r *recorder) Text(_ context.Context, path string, limit int) (string, int64, error) {
	r.sent = append(r.sent, "TEXT "+path)
	return "", 0, nil
}

// Each typed method sends its route, with its reference escaped.
func TestCalls_Routes(t *testing.T) {
	ctx := context.Background()
	for want, call := range map[string]func(*httpapi.Client){
		"GET /v1/workspaces":                          func(c *httpapi.Client) { c.Workspaces(ctx) },
		"GET /v1/workspaces/app":                      func(c *httpapi.Client) { c.Workspace(ctx, "app") },
		"POST /v1/workspaces":                         func(c *httpapi.Client) { c.Init(ctx, httpapi.InitRequest{}) },
		"POST /v1/workspaces/%2Fsrv%2Fapp/release":    func(c *httpapi.Client) { c.Release(ctx, "/srv/app", httpapi.ReleaseRequest{}) },
		"GET /v1/runs":                                func(c *httpapi.Client) { c.Runs(ctx, "", false) },
		"GET /v1/runs?all=true&workspace=a+b":         func(c *httpapi.Client) { c.Runs(ctx, "a b", true) },
		"GET /v1/runs/app%2Fsource":                   func(c *httpapi.Client) { c.PS(ctx, "app/source") },
		"GET /v1/runs/r1/path":                        func(c *httpapi.Client) { c.Path(ctx, "r1") },
		"GET /v1/runs/r1/summary":                     func(c *httpapi.Client) { c.Summary(ctx, "r1") },
		"GET /v1/runs/r1/diff":                        func(c *httpapi.Client) { c.Diff(ctx, "r1") },
		"TEXT /v1/runs/r1/diff?patch=true":            func(c *httpapi.Client) { c.Patch(ctx, "r1", 10) },
		"GET /v1/runs/r1/events":                      func(c *httpapi.Client) { c.RunEvents(ctx, "r1") },
		"GET /v1/events?after=7&workspace=app":        func(c *httpapi.Client) { c.Events(ctx, "app", 7) },
		"GET /v1/runs/r1/logs?service=web&service=db": func(c *httpapi.Client) { c.Logs(ctx, "r1", []string{"web", "db"}) },
		"GET /v1/runs/r1/logs/a%2Fb?offset=12":        func(c *httpapi.Client) { c.LogChunk(ctx, "r1", "a/b", 12) },
		"POST /v1/runs/r1/ports":                      func(c *httpapi.Client) { c.Publish(ctx, "r1", httpapi.PublishRequest{}) },
		"POST /v1/runs/r1/fork":                       func(c *httpapi.Client) { c.Fork(ctx, "r1", httpapi.ForkRequest{}) },
		"POST /v1/runs/r1/fork-run":                   func(c *httpapi.Client) { c.ForkRun(ctx, "r1", forkrun.Request{}) },
		"POST /v1/runs/r1/exec":                       func(c *httpapi.Client) { c.Exec(ctx, "r1", httpapi.ExecRequest{}) },
		"POST /v1/runs/r1/evidence":                   func(c *httpapi.Client) { c.Evidence(ctx, "r1", httpapi.EvidenceRequest{}) },
		"POST /v1/hooks/timing":                       func(c *httpapi.Client) { c.HookTiming(ctx, httpapi.HookTiming{}) },
		"POST /v1/runs/r1/checkpoint":                 func(c *httpapi.Client) { c.Checkpoint(ctx, "r1", httpapi.CheckpointRequest{}) },
		"POST /v1/runs/r1/rollback":                   func(c *httpapi.Client) { c.Rollback(ctx, "r1", httpapi.RollbackRequest{}) },
		"POST /v1/runs/r1/discard":                    func(c *httpapi.Client) { c.Discard(ctx, "r1", httpapi.DiscardRequest{}) },
		"POST /v1/runs/r1/merge":                      func(c *httpapi.Client) { c.Merge(ctx, "r1", httpapi.MergeRequest{}) },
		"POST /v1/runs/r1/promote":                    func(c *httpapi.Client) { c.Promote(ctx, "r1", httpapi.PromoteRequest{}) },
		"POST /v1/runs/r1/effects":                    func(c *httpapi.Client) { c.Effect(ctx, "r1", effect.Request{}) },
		"POST /v1/runs/r1/start":                      func(c *httpapi.Client) { c.Start(ctx, "r1", httpapi.StartRequest{}) },
		"POST /v1/runs/r1/stop":                       func(c *httpapi.Client) { c.Stop(ctx, "r1") },
		"GET /v1/groups/g1/compare":                   func(c *httpapi.Client) { c.Compare(ctx, "g1") },
		"GET /v1/groups/g1/export":                    func(c *httpapi.Client) { c.Export(ctx, "g1") },
		"POST /v1/groups/g1/choose":                   func(c *httpapi.Client) { c.Choose(ctx, "g1", httpapi.ChooseRequest{}) },
		"GET /v1/groups/g1/report":                    func(c *httpapi.Client) { c.ForkRunReport(ctx, "g1") },
		"POST /v1/groups/g1/cancel":                   func(c *httpapi.Client) { c.CancelForkRun(ctx, "g1") },
		"GET /v1/approvals?workspace=":                func(c *httpapi.Client) { c.Approvals(ctx, "") },
		"POST /v1/approvals/a%2F1/approve":            func(c *httpapi.Client) { c.Approve(ctx, "a/1", httpapi.DecideRequest{}) },
		"POST /v1/approvals/a1/refuse":                func(c *httpapi.Client) { c.Refuse(ctx, "a1", httpapi.DecideRequest{}) },
	} {
		r := &recorder{code: http.StatusOK}
		call(httpapi.Over(r))
		if len(r.sent) != 1 || r.sent[0] != want {
			t.Errorf("sent %q, want %q", r.sent, want)
		}
	}
	if got := httpapi.AttachPath("app/source"); got != "/v1/runs/app%2Fsource/attach" {
		t.Errorf("AttachPath = %q", got)
	}
}

// An action answered 202 is Pending, never the result; any other answer
// is the result; an error keeps what came beside it.
func TestCalls_Pending(t *testing.T) {
	ctx := context.Background()
	ap := &tine.Approval{ID: "a1", Action: tine.ActionMerge}
	res, p, err := httpapi.Over(&recorder{code: http.StatusAccepted, ans: map[string]any{"approval": ap, "message": "waiting"}}).Merge(ctx, "r1", httpapi.MergeRequest{})
	if err != nil || p == nil || p.Approval.ID != "a1" || p.Message != "waiting" || res == nil || res.Plan != nil {
		t.Errorf("202 merge: %+v %+v %v", res, p, err)
	}
	_, p, err = httpapi.Over(&recorder{code: http.StatusAccepted, ans: map[string]any{"queued": true, "message": "later"}}).Fork(ctx, "r1", httpapi.ForkRequest{})
	if err != nil || p == nil || !p.Queued || p.Message != "later" {
		t.Errorf("202 fork: %+v %v", p, err)
	}
	if _, _, err := httpapi.Over(&recorder{code: http.StatusAccepted, ans: map[string]any{}}).Discard(ctx, "r1", httpapi.DiscardRequest{}); err == nil {
		t.Error("a 202 without an approval or a queued fork is not an error")
	}
	d, p, err := httpapi.Over(&recorder{code: http.StatusOK, ans: map[string]any{"discarded": []*tine.Run{{Name: "source-2"}}}}).Discard(ctx, "r1", httpapi.DiscardRequest{})
	if err != nil || p != nil || len(d.Discarded) != 1 || d.Discarded[0].Name != "source-2" {
		t.Errorf("200 discard: %+v %+v %v", d, p, err)
	}
	boom := fmt.Errorf("no run: %w", tine.ErrNotFound)
	st, err := httpapi.Over(&recorder{code: http.StatusNotFound, err: boom}).Start(ctx, "r1", httpapi.StartRequest{})
	if !errors.Is(err, tine.ErrNotFound) || st == nil {
		t.Errorf("error start: %+v %v (the value is never nil)", st, err)
	}
}
