//go:build linux

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/postgres/pgtest"
)

// testFleetKey is the fleet key of the tests' nodes.
const testFleetKey = fleet.EnvKey + "=0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"

// apiGet is a GET of path on client cl: status, header and body.
func apiGet(t *testing.T, cl *http.Client, path string) (int, http.Header, string) {
	t.Helper()
	resp, err := cl.Get("http://tine" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// TestFleet_Forward: node B's API answers a request about a run of a
// workspace that lives on node A by forwarding it to A, signed with the
// fleet key, and passing A's answer back (before: 421 and A's address);
// A refuses a request that claims to be forwarded without the key's
// signature; and once A is dead, B answers at once that A does not
// answer, then that A is lost, rather than hanging.
func TestFleet_Forward(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, _ := fleetRepo(t)
	listenA := freeAddr(t)
	a := startNodeEnv(t, url, "fa", []string{testFleetKey}, "--listen", listenA)
	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)
	id := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--command", agentCmd, "-n", "1"))
	st := waitTasks(t, dev, 1, 3*time.Minute)
	tk := st.Tasks[0]
	if tk.State != fleet.TaskDone || tk.Node != "fa" || tk.Winner == "" {
		t.Fatalf("task %s: %s on %s (%s), winner %q", id, tk.State, tk.Node, tk.Reason, tk.Winner)
	}
	b := startNodeEnv(t, url, "fb", []string{testFleetKey})
	winner := "/v1/runs/" + tk.ID + "%2F" + tk.Winner

	code, h, body := apiGet(t, b.api(), winner+"/diff")
	if code != http.StatusOK || h.Get(fleet.HeaderNode) != "fa" || !regexp.MustCompile(`f\d+\.txt`).MatchString(body) {
		t.Fatalf("node fb's GET %s/diff, the run living on fa: %d (served by %q)\n%s\nwant 200 from fa with the winner's files", winner, code, h.Get(fleet.HeaderNode), body)
	}
	code, h, body = apiGet(t, b.api(), "/v1/workspaces/"+tk.ID)
	if code != http.StatusOK || h.Get(fleet.HeaderNode) != "fa" {
		t.Errorf("node fb's GET /v1/workspaces/%s: %d (served by %q)\n%s", tk.ID, code, h.Get(fleet.HeaderNode), body)
	}
	if code, h, _ = apiGet(t, b.api(), "/v1/runs/nosuchrun"); code != http.StatusNotFound || h.Get(fleet.HeaderNode) != "" {
		t.Errorf("node fb's GET of no run: %d, served by %q; want 404 from fb", code, h.Get(fleet.HeaderNode))
	}

	t.Run("Forged", func(t *testing.T) {
		req, _ := http.NewRequest("GET", "http://"+listenA+winner+"/diff", nil)
		req.Header.Set(fleet.HeaderHop, "fb")
		req.Header.Set(fleet.HeaderAuth, "v1 "+strings.Repeat("1", 10)+" "+strings.Repeat("ab", 32))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var e map[string]string
		json.NewDecoder(resp.Body).Decode(&e)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(e["error"], "fleet key") {
			t.Errorf("a forged forwarded request to fa: %d %v; want 401", resp.StatusCode, e)
		}
	})

	t.Run("DeadNode", func(t *testing.T) {
		a.cmd.Process.Kill()
		<-a.done
		t0 := time.Now()
		code, _, body := apiGet(t, b.api(), winner+"/diff")
		if code != http.StatusBadGateway && code != http.StatusServiceUnavailable || !strings.Contains(body, "node fa") || time.Since(t0) > 10*time.Second {
			t.Errorf("fb's GET of a run on the killed fa: %d after %v\n%s\nwant 502 or 503 naming fa, at once", code, time.Since(t0), body)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			code, _, body = apiGet(t, b.api(), winner+"/diff")
			var e map[string]string
			json.Unmarshal([]byte(body), &e)
			if code == http.StatusServiceUnavailable && e["code"] == "node_down" && strings.Contains(e["error"], "which is lost") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("fb's GET of a run on fa, lost: %d\n%s\nwant 503 saying fa is lost", code, body)
			}
			time.Sleep(300 * time.Millisecond)
		}
	})
}
