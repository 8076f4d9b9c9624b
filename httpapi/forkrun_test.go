package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
)

// forkRunAPI is newAPIServer for tests that run a fork-run's agents; they
// skip unless root can mount overlays.
func forkRunAPI(t *testing.T) (*httptest.Server, *engine.Engine, *httpapi.Server) {
	t.Helper()
	enginetest.RequireOverlay(t, "a fork-run's forks are overlay mounts and its agents run in them through supervisors")
	return newAPIServer(t, "")
}

// waitReport polls group's report until done says so, failing after a
// minute.
func waitReport(t *testing.T, get func() (*forkrun.Report, error), done func(*forkrun.Report) bool) *forkrun.Report {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		rep, err := get()
		if err != nil {
			t.Fatalf("report: %v", err)
		}
		if done(rep) {
			return rep
		}
		if time.Now().After(deadline) {
			t.Fatalf("report still %s after a minute: %+v", rep.Outcome, rep.Forks)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ended(rep *forkrun.Report) bool { return rep.Outcome != forkrun.OutcomeRunning }

// agentsRunning reports whether every fork's agent runs and has said so.
func agentsRunning(rep *forkrun.Report) bool {
	for _, f := range rep.Forks {
		if f.State != forkrun.Running || f.Agent.OutputTotalBytes == 0 {
			return false
		}
	}
	return len(rep.Forks) > 0
}

func TestAPI_ForkRun(t *testing.T) {
	srv, e, _ := forkRunAPI(t)
	var st httpapi.ForkRunStarted
	body := `{"prompt": "say hi", "n": 2, "approaches": ["a", "b"], "agent_cmd": "echo hi > hi.txt", "merge_mode": "manual"}`
	if code := call(t, srv, "POST", "/v1/runs/ws%2Fsource/fork-run", "", body, &st); code != http.StatusAccepted {
		t.Fatalf("fork-run = %d %+v", code, st)
	}
	if st.Group == "" || st.Report == nil || len(st.Report.Forks) != 2 || st.Report.Forks[1].Approach != "b" || st.Warnings == nil {
		t.Fatalf("fork-run answered %+v", st)
	}
	get := func() (*forkrun.Report, error) {
		var rep forkrun.Report
		if code := call(t, srv, "GET", "/v1/groups/"+st.Group+"/report", "", nil, &rep); code != http.StatusOK {
			return nil, errors.New(http.StatusText(code))
		}
		return &rep, nil
	}
	rep := waitReport(t, get, ended)
	if rep.Outcome != forkrun.OutcomeReported || rep.Verdict == nil {
		t.Errorf("outcome %s (%s), verdict %+v", rep.Outcome, rep.OutcomeDetail, rep.Verdict)
	}
	for _, f := range rep.Forks {
		if f.State != forkrun.Finished || f.FilesChanged != 1 || !f.Ready {
			t.Errorf("%s: %s (%s), %d file(s) changed, ready %v", f.Name, f.State, f.Reason, f.FilesChanged, f.Ready)
		}
	}
	// Once ended, the report is the stored one, and there is nothing to cancel.
	if disk, err := forkrun.Load(e, rep.Workspace, rep.Group); err != nil || disk.Outcome != rep.Outcome {
		t.Errorf("stored report: %v %v", disk, err)
	}
	var apiErr httpapi.Error
	if code := call(t, srv, "POST", "/v1/groups/"+st.Group+"/cancel", "", nil, &apiErr); code != 404 || !strings.Contains(apiErr.Error, "no fork-run of group") {
		t.Errorf("cancel of an ended fork-run = %d %+v", code, apiErr)
	}
}

// A fork-run started on the host (as the dashboard does) runs in the
// server: its report route follows it live, and it ends as one started
// through the API does.
func TestServer_StartForkRun(t *testing.T) {
	srv, _, api := forkRunAPI(t)
	ctx := context.Background()
	st, err := api.StartForkRun(ctx, "ws/source", forkrun.Request{Prompt: "say hi", N: ptr(2),
		AgentCmd: "echo started; sleep 1; echo hi > hi.txt", MergeMode: "vote", Judge: "heuristic"})
	if err != nil {
		t.Fatal(err)
	}
	if st.Group == "" || st.Queued || st.Report == nil || len(st.Report.Forks) != 2 || st.Warnings == nil {
		t.Fatalf("StartForkRun = %+v", st)
	}
	get := func() (*forkrun.Report, error) {
		var rep forkrun.Report
		if code := call(t, srv, "GET", "/v1/groups/"+st.Group+"/report", "", nil, &rep); code != http.StatusOK {
			return nil, errors.New(http.StatusText(code))
		}
		return &rep, nil
	}
	waitReport(t, get, agentsRunning)
	rep := waitReport(t, get, ended)
	// A person may use the vote merge mode that a run may not ask for.
	if rep.Mode != forkrun.VoteMode || rep.Verdict == nil || len(rep.Verdict.Rounds) != 3 {
		t.Errorf("mode %s, verdict %+v; want a vote of three rounds", rep.Mode, rep.Verdict)
	}
	for _, f := range rep.Forks {
		if f.State != forkrun.Finished || f.FilesChanged != 1 {
			t.Errorf("%s: %s (%s), %d file(s) changed", f.Name, f.State, f.Reason, f.FilesChanged)
		}
	}
}

// StartForkRun refuses what POST /v1/runs/{ref}/fork-run refuses, with
// the same sentinels, before anything is forked.
func TestServer_StartForkRunErrors(t *testing.T) {
	_, _, api := newAPIServer(t, "")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		ref  string
		req  forkrun.Request
		want error
		text string
	}{
		{"NoPrompt", "source", forkrun.Request{Prompt: " ", AgentCmd: "true"}, tine.ErrInvalid, `needs "prompt"`},
		{"BadMode", "source", forkrun.Request{Prompt: "x", AgentCmd: "true", MergeMode: "sometimes"}, tine.ErrInvalid, "merge mode"},
		{"NoBinary", "source", forkrun.Request{Prompt: "x", AgentCmd: "no-such-agent-program --go"}, tine.ErrUnsupported, "not found on PATH"},
		{"NoRun", "nosuch", forkrun.Request{Prompt: "x", AgentCmd: "true"}, tine.ErrNotFound, "nosuch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := api.StartForkRun(ctx, tc.ref, tc.req)
			if !errors.Is(err, tc.want) || !strings.Contains(fmt.Sprint(err), tc.text) || st != nil {
				t.Errorf("StartForkRun = %+v, %v; want %v with %q", st, err, tc.want, tc.text)
			}
		})
	}
	sctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := api.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if _, err := api.StartForkRun(ctx, "source", forkrun.Request{Prompt: "x", AgentCmd: "true"}); !errors.Is(err, tine.ErrState) {
		t.Errorf("StartForkRun after Shutdown: %v, want %v", err, tine.ErrState)
	}
}

// Requests refused before anything is forked, and groups without a
// fork-run running or recorded.
func TestAPI_ForkRunErrors(t *testing.T) {
	srv, _ := newAPI(t, "")
	var fr engine.ForkResult
	if code := call(t, srv, "POST", "/v1/runs/source/fork", "", httpapi.ForkRequest{Copies: 1}, &fr); code != 201 {
		t.Fatalf("fork = %d", code)
	}
	g := fr.Group.ID
	for _, tc := range []struct {
		method, path string
		body         any
		code         int
		name, want   string
	}{
		{"POST", "/v1/runs/source/fork-run", `{}`, 400, "invalid", `needs "prompt"`},
		{"POST", "/v1/runs/source/fork-run", `{"prompt": "x", "agent_cmd": "true", "merge_mode": "sometimes"}`, 400, "invalid", "merge mode"},
		{"POST", "/v1/runs/source/fork-run", `{"prompt": "x", "agent_cmd": "true", "copies": 2}`, 400, "invalid", "copies"},
		{"POST", "/v1/runs/source/fork-run", `{"prompt": "x", "agent_cmd": "no-such-agent-program --go"}`, 501, "unsupported", "not found on PATH"},
		{"POST", "/v1/runs/source/fork-run", `{"prompt": "x", "agent_cmd": "./nope.sh"}`, 501, "unsupported", "not an executable"},
		{"POST", "/v1/runs/nosuch/fork-run", `{"prompt": "x", "agent_cmd": "true"}`, 404, "not_found", "nosuch"},
		{"GET", "/v1/groups/" + g + "/report", nil, 404, "not_found", "has no fork-run report"},
		{"GET", "/v1/groups/g12345678/report", nil, 404, "not_found", "no group"},
		{"POST", "/v1/groups/" + g + "/cancel", nil, 404, "not_found", "no fork-run of group"},
	} {
		var e httpapi.Error
		if code := call(t, srv, tc.method, tc.path, "", tc.body, &e); code != tc.code || e.Code != tc.name || !strings.Contains(e.Error, tc.want) {
			t.Errorf("%s %s %v = %d %+v; want %d %s with %q", tc.method, tc.path, tc.body, code, e, tc.code, tc.name, tc.want)
		}
	}
}

// serveUnix serves api on a unix socket (as tine serve does) and returns a
// client of it.
func serveUnix(t *testing.T, api http.Handler) *httpapi.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "tapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api, ConnContext: httpapi.ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return httpapi.NewClient(sock, nil)
}

// requireCanceled checks that every fork was canceled and kept, and that
// no agent (found by its marker in its command line) outlived it.
func requireCanceled(t *testing.T, e *engine.Engine, rep *forkrun.Report, marker string) {
	t.Helper()
	for _, f := range rep.Forks {
		if f.State != forkrun.Canceled {
			t.Errorf("%s: %s (%s), want canceled", f.Name, f.State, f.Reason)
		}
		if ref, err := e.FindRun(context.Background(), f.Run); err != nil || !ref.Run.Active() {
			t.Errorf("%s is gone after a cancel: %v", f.Name, err)
		}
	}
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && strings.Contains(string(b), marker) {
			t.Errorf("an agent outlived the cancel: pid %s %q", d.Name(), b)
		}
	}
}

func TestClient_ForkRunCancel(t *testing.T) {
	_, e, api := forkRunAPI(t)
	c := serveUnix(t, api)
	ctx := context.Background()
	st, err := c.ForkRun(ctx, "ws/source", forkrun.Request{Prompt: "wait", N: ptr(2), AgentCmd: "echo started; sleep 3011", MergeMode: "manual"})
	if err != nil {
		t.Fatal(err)
	}
	get := func() (*forkrun.Report, error) { return c.ForkRunReport(ctx, st.Group) }
	waitReport(t, get, agentsRunning)
	cr, err := c.CancelForkRun(ctx, st.Group)
	if err != nil || cr.Group != st.Group || !strings.Contains(cr.Message, "canceling") {
		t.Fatalf("cancel: %+v %v", cr, err)
	}
	t0 := time.Now()
	rep := waitReport(t, get, ended)
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("took %v to end after the cancel", d)
	}
	requireCanceled(t, e, rep, "3011")
	if _, err := c.CancelForkRun(ctx, st.Group); !errors.Is(err, tine.ErrNotFound) {
		t.Errorf("a second cancel: %v", err)
	}
	if _, err := c.ForkRunReport(ctx, "g12345678"); !errors.Is(err, tine.ErrNotFound) {
		t.Errorf("report of no group: %v", err)
	}
}

// Shutting the server down cancels its fork-runs, waits for them, and
// refuses new ones.
func TestAPI_ForkRunShutdown(t *testing.T) {
	srv, e, api := forkRunAPI(t)
	var st httpapi.ForkRunStarted
	body := `{"prompt": "wait", "n": 2, "agent_cmd": "echo started; sleep 3012", "merge_mode": "manual"}`
	if code := call(t, srv, "POST", "/v1/runs/source/fork-run", "", body, &st); code != http.StatusAccepted {
		t.Fatalf("fork-run = %d", code)
	}
	get := func() (*forkrun.Report, error) {
		var rep forkrun.Report
		call(t, srv, "GET", "/v1/groups/"+st.Group+"/report", "", nil, &rep)
		return &rep, nil
	}
	waitReport(t, get, agentsRunning)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := api.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := forkrun.Load(e, st.Report.Workspace, st.Group)
	if err != nil || rep.Outcome == forkrun.OutcomeRunning {
		t.Fatalf("after shutdown the stored report is %v (%v)", rep, err)
	}
	requireCanceled(t, e, rep, "3012")
	var apiErr httpapi.Error
	if code := call(t, srv, "POST", "/v1/runs/source/fork-run", "", body, &apiErr); code != 409 || !strings.Contains(apiErr.Error, "shutting down") {
		t.Errorf("fork-run after shutdown = %d %+v", code, apiErr)
	}
}

func ptr[T any](v T) *T { return &v }
