//go:build linux

package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUser_DashboardThroughTheSystemDaemon: a normal user's tine dashboard
// prints a URL of the system daemon's dashboard with a token of their own;
// opened, it shows their workspace and fork, not root's nor another
// user's, whose pages are not found; they discard their own fork from it
// and are refused another's; the token opens no API, and once revoked
// nothing. Before, there was no tine dashboard and the system daemon's
// dashboard answered a normal user 403.
func TestUser_DashboardThroughTheSystemDaemon(t *testing.T) {
	e, ann, sock, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	var fr struct {
		Forks []struct{ ID, Name string } `json:"forks"`
	}
	ann.okJSON(dir, &fr, "fork", "app/source", "-n", "2", "--json")
	mine, mine2 := fr.Forks[0], fr.Forks[1]

	rootDir := e.workspaceDir("rootsws")
	e.ok("init", rootDir)
	e.ok("fork", "rootsws/source", "-n", "1")
	roots := lsRow(t, e.ls(), "rootsws/source-1")

	// Another normal user's workspace, through the same daemon.
	other := asUser(t, "nobody", sock)
	otherDir := filepath.Join(publicDir(t), "othersws")
	os.Mkdir(otherDir, 0o755)
	os.Chown(otherDir, other.uid, other.gid)
	e.ws = append(e.ws, otherDir)
	other.ok(otherDir, "init", ".")
	other.ok(otherDir, "fork", "othersws/source", "-n", "1")
	others := lsRow(t, e.ls(), "othersws/source-1")

	link := strings.TrimSpace(ann.ok(dir, "dashboard"))
	var js struct {
		URL, Token string
		UID        int
		All        bool
	}
	ann.okJSON(dir, &js, "dashboard", "--json")
	if !strings.HasPrefix(link, "http://127.0.0.1:") || js.URL != link || js.UID != ann.uid || js.All || !strings.Contains(link, "token=") {
		t.Fatalf("tine dashboard as tineuser: %q, --json %+v", link, js)
	}
	u, _ := url.Parse(link)
	base := u.Scheme + "://" + u.Host
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := browser.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, page := get(strings.TrimPrefix(link, base)) // sets the cookie, redirects to /ui/
	if code != 200 || !strings.Contains(page, "app") || !strings.Contains(page, mine.Name) {
		t.Fatalf("the user's dashboard: %d, want their workspace app and fork %s:\n%s", code, mine.Name, page)
	}
	for _, not := range []string{"rootsws", "othersws", roots.ID, others.ID} {
		if strings.Contains(page, not) {
			t.Errorf("the user's dashboard shows %s, not theirs", not)
		}
	}
	code, runPage := get("/ui/runs/" + mine.ID)
	if code != 200 {
		t.Errorf("their fork's page: %d, want 200", code)
	}
	for _, id := range []string{roots.ID, others.ID} {
		if code, body := get("/ui/runs/" + id); code != http.StatusNotFound || strings.Contains(body, "rootsws") || strings.Contains(body, "othersws") {
			t.Errorf("another's run %s: %d, want 404 saying nothing of it", id, code)
		}
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(runPage)
	if csrf == nil {
		t.Fatalf("no CSRF token in the run's page:\n%s", runPage)
	}
	post := func(path string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(url.Values{"csrf": {csrf[1]}, "confirm": {"1"}, "force": {"1"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", base)
		resp, err := (&http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, id := range []string{roots.ID, others.ID} {
		if code := post("/ui/runs/" + id + "/discard"); code != http.StatusNotFound {
			t.Errorf("discard of another's run %s from the user's dashboard: %d, want 404", id, code)
		}
	}
	if code := post("/ui/runs/" + mine.ID + "/discard"); code != http.StatusSeeOther {
		t.Errorf("discard of their own fork: %d, want 303", code)
	}
	for _, r := range []struct {
		ls    []jsonLsRow
		name  string
		state string
	}{{e.ls("--all"), "app/" + mine.Name, "discarded"}, {e.ls(), "rootsws/source-1", "active"}, {e.ls(), "othersws/source-1", "active"}} {
		if got := lsRow(t, r.ls, r.name).State; got != r.state {
			t.Errorf("%s is %s after the user's discards, want %s", r.name, got, r.state)
		}
	}

	// The token opens the dashboard only: not the API, not the metrics.
	for _, p := range []string{"/v1/runs", "/metrics"} {
		req, _ := http.NewRequest("GET", base+p, nil)
		req.Header.Set("Authorization", "Bearer "+js.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s with the user's dashboard token: %d, want 401", p, resp.StatusCode)
		}
	}

	// Revoked, the token (and its cookie) opens nothing; a new one works.
	ann.ok(dir, "dashboard", "--revoke")
	if code, _ := get("/ui/runs/" + mine2.ID); code != http.StatusUnauthorized {
		t.Errorf("the revoked token's cookie: %d, want 401", code)
	}
	fresh := strings.TrimSpace(ann.ok(dir, "dashboard"))
	if fresh == link {
		t.Error("tine dashboard after --revoke printed the revoked token")
	}
	if code, page := get(strings.TrimPrefix(fresh, base)); code != 200 || !strings.Contains(page, mine2.Name) {
		t.Errorf("the new token: %d", code)
	}

	// Root's tine dashboard sees every workspace.
	var rl struct{ URL string }
	e.okJSON(&rl, "dashboard", "--json")
	jar2, _ := cookiejar.New(nil)
	resp, err := (&http.Client{Jar: jar2}).Get(rl.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"app", "rootsws", "othersws"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("root's dashboard does not show %s", want)
		}
	}
}

// lsRow is the row of run name (WORKSPACE/RUN) in rows.
func lsRow(t *testing.T, rows []jsonLsRow, name string) jsonLsRow {
	t.Helper()
	for _, r := range rows {
		if r.WorkspaceName+"/"+r.Name == name {
			return r
		}
	}
	t.Fatalf("no run %s in tine ls", name)
	return jsonLsRow{}
}
