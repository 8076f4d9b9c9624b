package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/access"
	"github.com/tinehq/tine/internal/mnt"
)

// TestAccess_OwnWorkspacesOnly: a person other than root and the daemon's
// user sees and acts only on their own workspaces and those granted to one
// of their groups; another user's are not found, never shown.
func TestAccess_OwnWorkspacesOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the workspaces belong to other users, whose directories they must be")
	}
	ctx := context.Background()
	root := t.TempDir()
	e := enginetest.Open(t, filepath.Join(root, "home"))
	for _, w := range []struct {
		name   string
		owner  int
		groups []int
	}{{"ann", 4001, nil}, {"bob", 4002, nil}, {"team", 4002, []int{4100}}} {
		dir := filepath.Join(root, w.name)
		os.MkdirAll(dir, 0o755)
		os.Chown(dir, w.owner, w.owner)
		_, err := e.Init(ctx, engine.InitOptions{Path: dir, Backend: "copy", Name: w.name, Owner: &engine.Owner{UID: w.owner, GID: w.owner}, Groups: w.groups})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Release(ctx, dir, true); mnt.UnmountAll(dir) })
	}
	t.Cleanup(func() { e.Close() })
	s := New(e, "")
	ann := access.New(4001, 4001)
	annInTeam := access.New(4001, 4001, 4100)
	do := func(c *access.Caller, method, path string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader("{}"))
		req = req.WithContext(context.WithValue(req.Context(), peerKey, peer{user: c}))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	names := func(c *access.Caller) []string {
		code, body := do(c, "GET", "/v1/workspaces")
		var st []engine.WorkspaceRecords
		if code != 200 || json.Unmarshal([]byte(body), &st) != nil {
			t.Fatalf("GET /v1/workspaces = %d %s", code, body)
		}
		var out []string
		for _, w := range st {
			out = append(out, w.Workspace.Name)
		}
		sort.Strings(out)
		return out
	}
	if got := strings.Join(names(ann), ","); got != "ann" {
		t.Errorf("ann sees workspaces %s, want only ann", got)
	}
	if got := strings.Join(names(annInTeam), ","); got != "ann,team" {
		t.Errorf("ann in group 4100 sees %s, want ann,team", got)
	}
	if got := strings.Join(names(access.New(0, 0)), ","); got != "ann,bob,team" {
		t.Errorf("root sees %s, want all", got)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/runs/bob%2Fsource"}, {"GET", "/v1/runs/bob%2Fsource/diff"}, {"POST", "/v1/runs/bob%2Fsource/stop"},
		{"POST", "/v1/runs/bob%2Fsource/fork"}, {"GET", "/v1/workspaces/bob"}, {"GET", "/v1/runs/nobody%2Fsource"},
		{"GET", "/v1/runs?workspace=bob"}, {"GET", "/v1/events?workspace=bob"},
		{"GET", "/v1/runs/bob%2Fsource/summary"}, {"GET", "/v1/runs/bob%2Fsource/path"}, {"GET", "/v1/runs/bob%2Fsource/logs"},
		{"GET", "/v1/runs/bob%2Fsource/logs/web?offset=0"}, {"POST", "/v1/runs/bob%2Fsource/ports"},
		{"GET", "/v1/groups/g00000000/export"}, {"GET", "/v1/approvals?workspace=bob"}, {"POST", "/v1/approvals/a00000000/approve"},
	} {
		code, body := do(ann, c.method, c.path)
		if code != http.StatusNotFound || !strings.Contains(body, "not_found") || strings.Contains(body, "4002") {
			t.Errorf("ann: %s %s = %d %s, want 404 saying nothing of bob's", c.method, c.path, code, body)
		}
	}
	for _, p := range []string{"/v1/runs/ann%2Fsource", "/v1/runs/ann%2Fsource/path", "/v1/runs/ann%2Fsource/logs", "/v1/approvals?workspace=ann"} {
		if code, body := do(ann, "GET", p); code != 200 {
			t.Errorf("ann: GET %s = %d %s", p, code, body)
		}
	}
	// A service's log is a name below the run's logs, not a path out of them.
	if code, body := do(ann, "GET", "/v1/runs/ann%2Fsource/logs/..%2F..%2F..%2Frun?offset=0"); code != http.StatusNotFound {
		t.Errorf("ann: a log path out of the run's logs = %d %s, want 404", code, body)
	}
	// The host's privileged ports are root's, not ann's to take through the daemon.
	req := httptest.NewRequest("POST", "/v1/runs/ann%2Fsource/ports", strings.NewReader(`{"port":80,"host":"0.0.0.0:80"}`))
	req = req.WithContext(context.WithValue(req.Context(), peerKey, peer{user: ann}))
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "1024") {
		t.Errorf("ann: publish on host port 80 = %d %s, want refused (403)", rec.Code, rec.Body.String())
	}
	code, body := do(ann, "GET", "/v1/events")
	if code != 200 || strings.Contains(body, `"bob"`) || !strings.Contains(body, "init") {
		t.Errorf("ann: GET /v1/events = %d, shows another's events or none of hers: %s", code, body)
	}
	var rows []RunRow
	_, body = do(ann, "GET", "/v1/runs")
	json.Unmarshal([]byte(body), &rows)
	if len(rows) != 1 || rows[0].WorkspaceName != "ann" {
		t.Errorf("ann: GET /v1/runs = %s, want her source only", body)
	}
}
