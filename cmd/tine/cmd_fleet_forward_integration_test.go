//go:build linux

package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
	bListen := freeAddr(t)
	b := startNodeEnv(t, url, "fb", []string{testFleetKey}, "--listen", bListen)
	winner := "/v1/runs/" + tk.ID + "%2F" + tk.Winner

	code, h, body := apiGet(t, b.api(), winner+"/diff")
	if code != http.StatusOK || h.Get(fleet.HeaderNode) != "fa" || !regexp.MustCompile(`f\d+\.txt`).MatchString(body) {
		t.Fatalf("node fb's GET %s/diff, the run living on fa: %d (served by %q)\n%s\nwant 200 from fa with the winner's files", winner, code, h.Get(fleet.HeaderNode), body)
	}
	code, h, body = apiGet(t, b.api(), "/v1/workspaces/"+tk.ID)
	if code != http.StatusOK || h.Get(fleet.HeaderNode) != "fa" {
		t.Errorf("node fb's GET /v1/workspaces/%s: %d (served by %q)\n%s", tk.ID, code, h.Get(fleet.HeaderNode), body)
	}
	var full struct {
		Report struct{ Group string }
	}
	if _, _, body = apiGet(t, b.api(), "/v1/fleet/tasks/"+tk.ID); json.Unmarshal([]byte(body), &full) != nil || full.Report.Group == "" {
		t.Fatalf("task %s's report: %s", tk.ID, body)
	}
	code, h, body = apiGet(t, b.api(), "/v1/groups/"+full.Report.Group+"/report")
	if code != http.StatusOK || h.Get(fleet.HeaderNode) != "fa" {
		t.Errorf("node fb's GET of the report of group %s, living on fa: %d (served by %q)\n%s\nwant 200 from fa", full.Report.Group, code, h.Get(fleet.HeaderNode), clip(body))
	}
	if code, h, _ = apiGet(t, b.api(), "/v1/runs/nosuchrun"); code != http.StatusNotFound || h.Get(fleet.HeaderNode) != "" {
		t.Errorf("node fb's GET of no run: %d, served by %q; want 404 from fb", code, h.Get(fleet.HeaderNode))
	}

	t.Run("Dashboard", func(t *testing.T) {
		token, err := os.ReadFile(filepath.Join(b.e.home, "token"))
		if err != nil {
			t.Fatal(err)
		}
		get := func(path string) (int, string) {
			req, _ := http.NewRequest("GET", "http://"+bListen+path, nil)
			req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			page, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(page)
		}
		code, page := get("/ui/runs/" + tk.ID + "%2F" + tk.Winner)
		if code != http.StatusConflict || !strings.Contains(page, "lives on node fa") || !strings.Contains(page, listenA) {
			t.Errorf("node fb's dashboard page of a run on fa: %d\n%s\nwant 409 naming fa and its address", code, clip(page))
		}
		local := b.e.workspaceDir("local") // made on fb with no daemon: fb's own, claimed when asked
		b.e.ok("init", local)
		code, own := get("/ui/runs/local%2Fsource")
		csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(own)
		if code != http.StatusOK || csrf == nil {
			t.Fatalf("node fb's dashboard page of its own run: %d\n%s", code, clip(own))
		}
		req, _ := http.NewRequest("POST", "http://"+bListen+"/ui/runs/"+tk.ID+"%2F"+tk.Winner+"/discard",
			strings.NewReader("confirm=1&force=1&csrf="+csrf[1]))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusConflict {
			t.Errorf("node fb's dashboard discard of a run on fa: %d; want 409, nothing done", resp.StatusCode)
		}
		if code, _, body := apiGet(t, a.api(), winner); code != http.StatusOK || !strings.Contains(body, `"state": "active"`) && !strings.Contains(body, `"state":"active"`) {
			t.Errorf("the run on fa after fb's dashboard was asked to discard it: %d\n%s\nwant it active", code, clip(body))
		}
	})

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

// TestFleet_HomeOfAnUnrecordedWorkspace: a workspace made with the engine
// directly (tine init with no daemon) has no home on record. A node
// without its files refuses requests about it (409 no_home, saying why),
// where before it answered them itself, from files it does not have; the
// node whose state directory holds it records it as living there when it
// starts, and from then on the other nodes forward to it. tine fetch
// through a node other than the workspace's is forwarded to the home
// node too, which forks the run and brings the winner in there; before,
// the node asked forked a run whose files it did not have.
func TestFleet_HomeOfAnUnrecordedWorkspace(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	url := pgtest.URL(t)
	repo, _ := fleetRepo(t)
	b := startNodeEnv(t, url, "hb", []string{testFleetKey})
	home := newEnv(t)
	home.vars = append(home.vars, "TINE_STORE_URL="+url)
	ws := home.workspaceDir("pre")
	hostSh(t, ws, "git clone -q "+repo+" .")
	home.ok("init", ws)
	var runs []struct{ Workspace string }
	home.okJSON(&runs, "ls", "--json")
	if len(runs) != 1 {
		t.Fatalf("runs: %+v", runs)
	}
	path := "/v1/workspaces/" + runs[0].Workspace

	code, h, body := apiGet(t, b.api(), path)
	var e map[string]string
	json.Unmarshal([]byte(body), &e)
	if code != http.StatusConflict || e["code"] != "no_home" || !strings.Contains(e["error"], "its files are not on node hb") || h.Get(fleet.HeaderNode) != "" {
		t.Fatalf("node hb's GET %s, the workspace's files on no node: %d (served by %q)\n%s\nwant 409 no_home from hb", path, code, h.Get(fleet.HeaderNode), body)
	}

	startNodeIn(t, home, url, "ha", []string{testFleetKey}, "--listen", freeAddr(t))
	code, h, body = apiGet(t, b.api(), path)
	if code != http.StatusOK || h.Get(fleet.HeaderNode) != "ha" {
		t.Fatalf("node hb's GET %s once node ha, which holds its files, started: %d (served by %q)\n%s\nwant 200 from ha", path, code, h.Get(fleet.HeaderNode), body)
	}

	dev := newEnv(t)
	dev.vars = append(dev.vars, "TINE_FLEET_URL="+url)
	id := strings.TrimSpace(dev.ok("submit", "--repo", repo, "--command", agentCmd, "-n", "1"))
	if tk := waitTasks(t, dev, 1, 3*time.Minute).Tasks[0]; tk.State != fleet.TaskDone || tk.Winner == "" {
		t.Fatalf("task %s: %s (%s), winner %q", id, tk.State, tk.Reason, tk.Winner)
	}
	resp, err := b.api().Post("http://tine/v1/fleet/tasks/"+id+"/fetch", "application/json", strings.NewReader(`{"run": "pre/source"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || resp.Header.Get(fleet.HeaderNode) != "ha" {
		t.Fatalf("tine fetch through node hb into a run living on ha: %d (served by %q)\n%s\nwant 201 from ha", resp.StatusCode, resp.Header.Get(fleet.HeaderNode), out)
	}
	if got := home.ok("diff", id); !regexp.MustCompile(`f\d+\.txt`).MatchString(got) {
		t.Errorf("the fetched fork on ha, its diff:\n%s\nwant the winner's files", got)
	}
}
