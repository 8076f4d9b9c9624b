package dashboard

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
)

// Hostile text put where people and agents write freely: approaches and
// checkpoint labels.
const (
	hostileScript = `<script>alert(1)</script>`
	hostileAttr   = `"><img src=x onerror=alert(1)>`
)

// fixture is an engine with one workspace forked into a group of two.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	e     *engine.Engine
	src   engine.Ref
	fork  *engine.ForkResult
	wsDir string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	w := enginetest.New(t, enginetest.Options{Home: t.TempDir(), Path: filepath.Join(t.TempDir(), "app"),
		Files: map[string]string{"main.txt": "hello\n"}})
	e, src := w.Engine, w.Source
	f := &fixture{t: t, ctx: ctx, e: e, src: src, wsDir: w.Path}
	var err error
	if _, err := e.Checkpoint(ctx, src.Run.ID, hostileAttr); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	f.fork, err = e.Fork(ctx, src.Run.ID, engine.ForkOptions{Copies: 2, Approaches: []string{hostileScript, hostileAttr}})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	return f
}

// write puts content at rel in fork i's view.
func (f *fixture) write(i int, rel, content string) {
	f.t.Helper()
	writeFile(f.t, filepath.Join(f.e.Path(f.src.Workspace, f.fork.Forks[i]), rel), content)
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// csrfOf fetches the group page and returns the CSRF token its forms carry.
func (f *fixture) csrfOf(h http.Handler) string {
	t := f.t
	t.Helper()
	_, body := get(t, h, "/ui/groups/"+f.fork.Group.ID, nil)
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token in the overview:\n%s", body)
	}
	return m[1]
}

func get(t *testing.T, h http.Handler, path string, hdr http.Header) (int, string) {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

func post(t *testing.T, h http.Handler, path string, form url.Values, hdr http.Header) (int, string, http.Header) {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range hdr {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b), rec.Header()
}

// checkEscaped fails if a hostile string reached the page as markup.
func checkEscaped(t *testing.T, page, body string) {
	t.Helper()
	for _, bad := range []string{hostileScript, hostileAttr, "<img", "<script>alert"} {
		if strings.Contains(body, bad) {
			t.Errorf("%s: hostile text %q rendered as markup", page, bad)
		}
	}
}

func TestHandler_Pages(t *testing.T) {
	f := newFixture(t)
	f.write(0, "main.txt", "hello from fork one\n")
	h := New(f.e, "")
	g := f.fork.Group.ID
	a, b := f.fork.Forks[0], f.fork.Forks[1]
	cases := []struct {
		name, path string
		code       int
		want       []string
	}{
		{"Overview", "/ui/", 200, []string{"<svg", a.Name, b.Name, "&lt;script&gt;alert(1)&lt;/script&gt;", "group " + g, "Activity", "<footer class=\"muted small\">tine v"}},
		{"Group", "/ui/groups/" + g, 200, []string{`class="winner"`, "recommended", "—", "hello from fork one", "choose (merge)", "discard all"}},
		{"GroupPair", "/ui/groups/" + g + "?a=" + a.ID + "&b=" + b.ID, 200, []string{"1 path(s) differ", "main.txt"}},
		{"GroupPairOutsider", "/ui/groups/" + g + "?a=" + a.ID + "&b=" + f.src.Run.ID, 400, nil},
		{"Run", "/ui/runs/" + a.ID, 200, []string{a.Name, "rollback to", "discard", "Service logs"}},
		{"RunByName", "/ui/runs/" + url.PathEscape(f.src.Workspace.Name+"/"+a.Name), 200, []string{a.ID}},
		{"UnknownGroup", "/ui/groups/gnothere", 404, []string{"404"}},
		{"UnknownRun", "/ui/runs/nothere", 404, []string{"404"}},
		{"UnknownPage", "/ui/nothing", 404, nil},
		{"Asset", "/ui/assets/app.js", 200, []string{"EventSource"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := get(t, h, c.path, nil)
			if code != c.code {
				t.Fatalf("GET %s = %d, want %d:\n%s", c.path, code, c.code, body)
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: no %q in the page", c.path, w)
				}
			}
			checkEscaped(t, c.name, body)
		})
	}
}

func TestHandler_CSRF(t *testing.T) {
	f := newFixture(t)
	h := New(f.e, "")
	tok := f.csrfOf(h)
	path := "/ui/groups/" + f.fork.Group.ID + "/choose"
	cases := []struct {
		name string
		form url.Values
		hdr  http.Header
		code int
	}{
		{"NoToken", url.Values{"mode": {"discard"}}, nil, 403},
		{"WrongToken", url.Values{"mode": {"discard"}, "csrf": {"00"}}, nil, 403},
		{"OtherOrigin", url.Values{"mode": {"discard"}, "csrf": {tok}}, http.Header{"Origin": {"http://evil.example"}}, 403},
		{"CrossSite", url.Values{"mode": {"discard"}, "csrf": {tok}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}, 403},
		{"SameOrigin", url.Values{"mode": {"discard"}, "csrf": {tok}}, http.Header{"Origin": {"http://example.com"}}, 200},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body, _ := post(t, h, path, c.form, c.hdr)
			if code != c.code {
				t.Fatalf("POST = %d, want %d:\n%s", code, c.code, body)
			}
		})
	}
	for _, r := range f.fork.Forks {
		if ref, _ := f.e.FindRun(f.ctx, r.ID); !ref.Run.Active() {
			t.Errorf("%s was discarded by a refused or unconfirmed request", r.Name)
		}
	}
}

func TestHandler_Token(t *testing.T) {
	f := newFixture(t)
	h := New(f.e, "s3cret")
	if code, _ := get(t, h, "/ui/", nil); code != 401 {
		t.Errorf("GET without token = %d, want 401", code)
	}
	if code, _ := get(t, h, "/ui/", http.Header{"Authorization": {"Bearer wrong"}}); code != 401 {
		t.Errorf("GET with a wrong token = %d, want 401", code)
	}
	if code, _, _ := post(t, h, "/ui/runs/x/discard", url.Values{}, nil); code != 401 {
		t.Errorf("POST without token = %d, want 401", code)
	}
	if code, _ := get(t, h, "/ui/", http.Header{"Authorization": {"Bearer s3cret"}}); code != 200 {
		t.Errorf("GET with the bearer token = %d, want 200", code)
	}
	req := httptest.NewRequest("GET", "/ui/groups/x?token=s3cret", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/ui/groups/x" {
		t.Fatalf("?token= visit = %d to %q, want 303 to /ui/groups/x", rec.Code, rec.Header().Get("Location"))
	}
	cookie := rec.Result().Cookies()[0]
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Errorf("token cookie %+v is not HttpOnly and SameSite=Strict", cookie)
	}
	if code, _ := get(t, h, "/ui/", http.Header{"Cookie": {cookie.String()}}); code != 200 {
		t.Errorf("GET with the cookie = %d, want 200", code)
	}
}

func TestHandler_Choose(t *testing.T) {
	f := newFixture(t)
	f.write(1, "main.txt", "fork two wins\n")
	h := New(f.e, "")
	tok := f.csrfOf(h)
	path := "/ui/groups/" + f.fork.Group.ID + "/choose"
	form := url.Values{"csrf": {tok}, "mode": {"merge"}, "run": {f.fork.Forks[1].ID}}
	code, body, _ := post(t, h, path, form, nil)
	if code != 200 || !strings.Contains(body, "merge plan") || !strings.Contains(body, "take") || !strings.Contains(body, `name="confirm" value="1"`) {
		t.Fatalf("dry run = %d, want the plan and a confirmation form:\n%s", code, body)
	}
	checkEscaped(t, "confirm", body)
	if got := readFile(t, filepath.Join(f.wsDir, "main.txt")); got != "hello\n" {
		t.Fatalf("the dry run wrote the source: %q", got)
	}
	form.Set("confirm", "1")
	code, _, hdr := post(t, h, path, form, nil)
	if code != http.StatusSeeOther || !strings.HasSuffix(hdr.Get("Location"), "?done=merge") {
		t.Fatalf("confirm = %d to %q, want 303 back to the group", code, hdr.Get("Location"))
	}
	if got := readFile(t, filepath.Join(f.wsDir, "main.txt")); got != "fork two wins\n" {
		t.Errorf("source main.txt = %q after the merge", got)
	}
	for _, bad := range []url.Values{{"mode": {"sideways"}}, {"mode": {"merge"}, "run": {"nothere"}}} {
		bad.Set("csrf", tok)
		if code, body, _ := post(t, h, path, bad, nil); code == 200 || code == 303 {
			t.Errorf("choose %v = %d, want an error:\n%s", bad, code, body)
		}
	}
	if code, _, _ := post(t, h, "/ui/groups/gnothere/choose", url.Values{"csrf": {tok}, "mode": {"discard"}}, nil); code != 404 {
		t.Errorf("choose in an unknown group = %d, want 404", code)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestHandler_RunActions(t *testing.T) {
	f := newFixture(t)
	f.write(0, "new.txt", "work\n")
	h := New(f.e, "")
	tok := f.csrfOf(h)
	run := f.fork.Forks[0]
	code, body, _ := post(t, h, "/ui/runs/"+run.ID+"/rollback", url.Values{"csrf": {tok}, "to": {f.fork.Version.ID}}, nil)
	if code != 200 || !strings.Contains(body, "new.txt") || !strings.Contains(body, "confirm") {
		t.Fatalf("rollback dry run = %d:\n%s", code, body)
	}
	code, _, _ = post(t, h, "/ui/runs/"+run.ID+"/rollback", url.Values{"csrf": {tok}, "to": {f.fork.Version.ID}, "confirm": {"1"}}, nil)
	if code != http.StatusSeeOther {
		t.Fatalf("rollback = %d, want 303", code)
	}
	if _, err := os.Stat(filepath.Join(f.e.Path(f.src.Workspace, run), "new.txt")); !os.IsNotExist(err) {
		t.Errorf("new.txt survived the rollback: %v", err)
	}
	if code, _, _ := post(t, h, "/ui/runs/"+run.ID+"/rollback", url.Values{"csrf": {tok}, "to": {"vnothere"}}, nil); code != 404 {
		t.Errorf("rollback to an unknown version = %d, want 404", code)
	}
	other := f.fork.Forks[1]
	f.write(1, "x.txt", "unmerged\n")
	code, body, _ = post(t, h, "/ui/runs/"+other.ID+"/discard", url.Values{"csrf": {tok}}, nil)
	if code != 200 || !strings.Contains(body, "x.txt") || !strings.Contains(body, `name="force"`) {
		t.Fatalf("discard dry run = %d:\n%s", code, body)
	}
	if code, _, _ = post(t, h, "/ui/runs/"+other.ID+"/discard", url.Values{"csrf": {tok}, "confirm": {"1"}}, nil); code != 409 {
		t.Errorf("discard of unmerged work without force = %d, want 409", code)
	}
	if code, _, _ = post(t, h, "/ui/runs/"+other.ID+"/discard", url.Values{"csrf": {tok}, "confirm": {"1"}, "force": {"1"}}, nil); code != 303 {
		t.Errorf("forced discard = %d, want 303", code)
	}
	if code, _, _ = post(t, h, "/ui/runs/rnothere/discard", url.Values{"csrf": {tok}}, nil); code != 404 {
		t.Errorf("discard of an unknown run = %d, want 404", code)
	}
}

// A pending effect says on the overview exactly what approving it sends.
func TestHandler_ApprovalOfAnEffectSaysWhatItSends(t *testing.T) {
	f := newFixture(t)
	h := New(f.e, "")
	ans, err := control.Of(f.e).RequestEffect(f.ctx, f.src, effect.Request{Kind: effect.HTTP, Method: "POST", URL: "https://deploy.example/v1/go", Body: `{"env":"staging"}`})
	if err != nil {
		t.Fatal(err)
	}
	_, body := get(t, h, "/ui/", nil)
	if !strings.Contains(body, ans.Approval.ID) || !strings.Contains(body, "approving sends: <span class=\"mono\">POST https://deploy.example/v1/go") {
		t.Errorf("the overview does not say what approving %s sends:\n%s", ans.Approval.ID, body)
	}
}

func TestHandler_Approvals(t *testing.T) {
	f := newFixture(t)
	f.write(0, "main.txt", "approved\n")
	h := New(f.e, "")
	tok := f.csrfOf(h)
	actor, err := f.e.FindRun(f.ctx, f.fork.Forks[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	merge, err := control.Of(f.e).RequestResolution(f.ctx, actor, control.Resolution{Action: "merge", Run: actor.Run.ID})
	if err != nil {
		t.Fatalf("RequestResolution: %v", err)
	}
	_, body := get(t, h, "/ui/", nil)
	if !strings.Contains(body, merge.ID) || !strings.Contains(body, "Approve") {
		t.Fatalf("the overview does not offer approval %s:\n%s", merge.ID, body)
	}
	if code, _, _ := post(t, h, "/ui/approvals/"+merge.ID+"/approve", url.Values{}, nil); code != 403 {
		t.Errorf("approve without CSRF token = %d, want 403", code)
	}
	code, _, hdr := post(t, h, "/ui/approvals/"+merge.ID+"/approve", url.Values{"csrf": {tok}}, nil)
	if code != 303 || hdr.Get("Location") != "/ui/?done=approve" {
		t.Fatalf("approve = %d to %q", code, hdr.Get("Location"))
	}
	if got := readFile(t, filepath.Join(f.wsDir, "main.txt")); got != "approved\n" {
		t.Errorf("source main.txt = %q after the approved merge", got)
	}
	if code, _, _ := post(t, h, "/ui/approvals/"+merge.ID+"/approve", url.Values{"csrf": {tok}}, nil); code != 403 && code != 409 {
		t.Errorf("approving a used approval = %d, want a refusal", code)
	}
	if code, _, _ := post(t, h, "/ui/approvals/anothere/refuse", url.Values{"csrf": {tok}}, nil); code != 404 {
		t.Errorf("refusing an unknown approval = %d, want 404", code)
	}
}
