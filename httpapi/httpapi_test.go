package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/httpapi"
)

// newAPI serves a fresh state directory with one workspace ("ws") holding
// a file, with the copy backend unless root can use overlay.
func newAPI(t testing.TB, token string) (*httptest.Server, *engine.Engine) {
	t.Helper()
	srv, e, _ := newAPIServer(t, token)
	return srv, e
}

// newAPIServer is newAPI, with the API server itself; at cleanup its
// fork-runs are shut down before the workspace is released.
func newAPIServer(t testing.TB, token string) (*httptest.Server, *engine.Engine, *httpapi.Server) {
	t.Helper()
	backend := "copy"
	if os.Geteuid() == 0 {
		backend = "overlay"
	}
	e := enginetest.New(t, enginetest.Options{Backend: backend, Files: map[string]string{"a.txt": "a\n"}}).Engine
	api := httpapi.New(e, token)
	srv := httptest.NewServer(api)
	t.Cleanup(func() { // before the workspace is released
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := api.Shutdown(ctx); err != nil {
			t.Errorf("shutting the API down: %v", err)
		}
	})
	return srv, e, api
}

func call(t *testing.T, srv *httptest.Server, method, path, token string, body any, out any) int {
	t.Helper()
	var rd *bytes.Reader
	if s, ok := body.(string); ok {
		rd = bytes.NewReader([]byte(s))
	} else {
		b, _ := json.Marshal(body)
		if body == nil {
			b = nil
		}
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, srv.URL+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decoding: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

func TestAPI_ForkListMergeDiscard(t *testing.T) {
	srv, e := newAPI(t, "")
	var rows []httpapi.RunRow
	if code := call(t, srv, "GET", "/v1/runs", "", nil, &rows); code != 200 || len(rows) != 1 || rows[0].Name != "source" {
		t.Fatalf("GET /v1/runs = %d %+v", code, rows)
	}
	var fr engine.ForkResult
	code := call(t, srv, "POST", "/v1/runs/ws%2Fsource/fork", "", httpapi.ForkRequest{Copies: 2, Approaches: []string{"x", "y"}}, &fr)
	if code != 201 || len(fr.Forks) != 2 || fr.Forks[1].Approach != "y" {
		t.Fatalf("fork = %d %+v", code, fr)
	}
	call(t, srv, "GET", "/v1/runs", "", nil, &rows)
	if len(rows) != 3 {
		t.Errorf("%d runs after forking 2", len(rows))
	}
	r, _ := e.FindRun(context.Background(), "source-1")
	os.WriteFile(filepath.Join(e.Path(r.Workspace, r.Run), "b.txt"), []byte("b\n"), 0o644)
	var mr engine.MergeResult
	if code := call(t, srv, "POST", "/v1/runs/source-1/merge", "", httpapi.MergeRequest{DryRun: true}, &mr); code != 200 || !mr.DryRun || len(mr.Plan.Entries) != 1 {
		t.Errorf("merge dry run = %d %+v", code, mr)
	}
	var diff struct {
		Changes []map[string]any `json:"changes"`
	}
	if code := call(t, srv, "GET", "/v1/runs/source-1/diff", "", nil, &diff); code != 200 || len(diff.Changes) != 1 {
		t.Errorf("diff = %d %+v", code, diff)
	}
	var apiErr httpapi.Error
	if code := call(t, srv, "POST", "/v1/runs/source-1/discard", "", nil, &apiErr); code != 409 || apiErr.Code != "unmerged" {
		t.Errorf("discard of unmerged work = %d %+v", code, apiErr)
	}
	// The API's words, not the CLI's flag; the parts say which is the option.
	if strings.Contains(apiErr.Error, "--") || !strings.Contains(apiErr.Error, "use force to discard anyway") ||
		tine.JoinParts(apiErr.Parts, tine.Option.String) != apiErr.Error {
		t.Errorf("discard of unmerged work: %+v, want the option named as the API's field, with its parts", apiErr)
	}
	if code := call(t, srv, "POST", "/v1/runs/source-1/merge", "", nil, &mr); code != 200 || !mr.Applied {
		t.Errorf("merge = %d %+v", code, mr)
	}
	var evs []map[string]any
	if code := call(t, srv, "GET", "/v1/events?workspace=ws&limit=3", "", nil, &evs); code != 200 || len(evs) != 3 {
		t.Errorf("events = %d, %d events", code, len(evs))
	}
}

func TestAPI_Errors(t *testing.T) {
	srv, _ := newAPI(t, "")
	for _, tc := range []struct {
		method, path string
		body         any
		code         int
		name         string
	}{
		{"GET", "/v1/runs/nosuch", nil, 404, "not_found"},
		{"POST", "/v1/runs/source/fork", `{"copies": 0}`, 400, "invalid"},
		{"POST", "/v1/runs/source/fork", `{"copies": 1, "colour": "red"}`, 400, "invalid"},
		{"POST", "/v1/runs/source/fork", `{not json`, 400, "invalid"},
		{"POST", "/v1/runs/source/rollback", `{}`, 400, "invalid"},
		{"GET", "/v1/events?after=x", nil, 400, "invalid"},
		{"GET", "/v1/groups/g12345678/compare", nil, 404, "not_found"},
	} {
		var e httpapi.Error
		if code := call(t, srv, tc.method, tc.path, "", tc.body, &e); code != tc.code || e.Code != tc.name || e.Error == "" {
			t.Errorf("%s %s %v = %d %+v; want %d %s", tc.method, tc.path, tc.body, code, e, tc.code, tc.name)
		}
	}
}

func TestAPI_Token(t *testing.T) {
	srv, _ := newAPI(t, "s3cret-token-of-at-least-some-length")
	for _, tok := range []string{"", "wrong"} {
		var e httpapi.Error
		if code := call(t, srv, "GET", "/v1/runs", tok, nil, &e); code != 401 || e.Code != "unauthorized" {
			t.Errorf("token %q: %d %+v", tok, code, e)
		}
	}
	if code := call(t, srv, "GET", "/v1/runs", "s3cret-token-of-at-least-some-length", nil, nil); code != 200 {
		t.Errorf("right token: %d", code)
	}
}

// 100 clients at once: reads never fail, forks of one run serialise and
// each succeeds, and the store ends with exactly the forks made.
func TestAPI_ConcurrentClients(t *testing.T) {
	srv, _ := newAPI(t, "")
	const clients, forks = 100, 10
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			method, path, body, want := "GET", "/v1/runs", "", 200
			switch {
			case i < forks:
				method, path, body, want = "POST", "/v1/runs/source/fork", fmt.Sprintf(`{"name": "c%d"}`, i), 201
			case i%3 == 0:
				path = "/v1/workspaces/ws"
			case i%3 == 1:
				path = "/v1/events?limit=5"
			}
			req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader([]byte(body)))
			resp, err := srv.Client().Do(req)
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != want {
				errs <- fmt.Errorf("%s %s: %d, want %d", method, path, resp.StatusCode, want)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var rows []httpapi.RunRow
	call(t, srv, "GET", "/v1/runs", "", nil, &rows)
	if len(rows) != 1+forks {
		t.Errorf("%d runs after %d concurrent forks, want %d", len(rows), forks, 1+forks)
	}
}
