package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/forkrun"
)

// fakeStarter records the fork-runs asked of it and answers with group
// and warnings, or err.
type fakeStarter struct {
	group    string
	warnings []string
	err      error

	calls int
	ref   string
	req   forkrun.Request
}

func (s *fakeStarter) start(_ context.Context, ref string, req forkrun.Request) (string, []string, error) {
	s.calls++
	s.ref, s.req = ref, req
	if s.err != nil {
		return "", nil, s.err
	}
	return s.group, s.warnings, nil
}

func TestHandler_ForkRunForm(t *testing.T) {
	f := newFixture(t)
	run := f.fork.Forks[0]
	action := `action="/ui/runs/` + run.ID + `/fork-run"`
	_, plain := get(t, New(f.e, ""), "/ui/runs/"+run.ID, nil)
	if strings.Contains(plain, action) || strings.Contains(plain, "start fork-run") {
		t.Error("a dashboard without a starter offers the fork-run form")
	}
	writeFile(t, filepath.Join(f.e.Path(f.src.Workspace, run), "tine.toml"), "[fork]\nagent = \"codex\"\ntest_command = \"make check\"\nmerge_mode = \"manual\"\ndefault_budget_usd = 2.5\n")
	h := New(f.e, "", WithForkRuns((&fakeStarter{}).start))
	code, body := get(t, h, "/ui/runs/"+run.ID, nil)
	if code != 200 {
		t.Fatalf("run page = %d:\n%s", code, body)
	}
	for _, w := range []string{action, `name="prompt"`, `name="approaches"`, `name="agent_cmd"`, `placeholder="codex"`,
		`placeholder="make check"`, `placeholder="$2.50"`, `<option value="">default (manual)</option>`,
		`<option value="vote">vote</option>`, `<option value="">default (heuristic)</option>`, "start fork-run"} {
		if !strings.Contains(body, w) {
			t.Errorf("no %q in the run page", w)
		}
	}
	if _, err := f.e.Discard(f.ctx, f.fork.Forks[1].ID, true); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, h, "/ui/runs/"+f.fork.Forks[1].ID, nil); strings.Contains(body, "start fork-run") {
		t.Error("a discarded run offers the fork-run form")
	}
}

// full is a form with every field set; hostile text where people type freely.
func full(csrf string) url.Values {
	return url.Values{"csrf": {csrf}, "prompt": {"fix it\r\n" + hostileScript}, "n": {" 2 "},
		"approaches": {"minimal\r\n\r\n  rewrite " + hostileAttr + " \r\n"}, "agent": {"fixer"}, "agent_cmd": {""},
		"test": {"go test ./..."}, "merge_mode": {"vote"}, "judge": {"llm"}, "budget": {"1.5"},
		"holdout": {" sh /srv/holdout.sh "}, "regression": {"go test -count=1 ./..."}}
}

func TestHandler_StartForkRun(t *testing.T) {
	f := newFixture(t)
	s := &fakeStarter{group: f.fork.Group.ID, warnings: []string{"tine.toml:3: unknown key " + hostileScript}}
	h := New(f.e, "", WithForkRuns(s.start))
	tok := f.csrfOf(h)
	run := f.src.Run
	path := "/ui/runs/" + run.ID + "/fork-run"

	code, _, hdr := post(t, h, path, full(tok), nil)
	if code != http.StatusSeeOther || hdr.Get("Location") != "/ui/groups/"+f.fork.Group.ID+"?done=forkrun" {
		t.Fatalf("start = %d to %q, want 303 to the group page", code, hdr.Get("Location"))
	}
	n, budget, test, holdout, regression := 2, 1.5, "go test ./...", "sh /srv/holdout.sh", "go test -count=1 ./..."
	want := forkrun.Request{Prompt: "fix it\n" + hostileScript, N: &n, Approaches: []string{"minimal", "rewrite " + hostileAttr},
		Agent: "fixer", Test: &test, MergeMode: "vote", Judge: "llm", BudgetUSD: &budget, Holdout: &holdout, Regression: &regression}
	if s.ref != run.ID || !reflect.DeepEqual(s.req, want) {
		t.Errorf("the starter got %q %+v,\nwant %q %+v", s.ref, s.req, run.ID, want)
	}
	_, body := get(t, h, hdr.Get("Location"), nil)
	checkEscaped(t, "group after start", body)
	for _, w := range []string{"Fork-run started", `id="start-warnings"`, "unknown key &lt;script&gt;"} {
		if !strings.Contains(body, w) {
			t.Errorf("no %q in the group page after the start", w)
		}
	}
	if _, body := get(t, h, "/ui/groups/"+f.fork.Group.ID, nil); strings.Contains(body, "start-warnings") {
		t.Error("the start warnings show on a plain visit to the group page")
	}

	// Fields left empty stay unset, for tine.toml to fill.
	code, _, _ = post(t, h, path, url.Values{"csrf": {tok}, "prompt": {"p"}, "n": {""}, "budget": {" "}, "merge_mode": {""}, "agent_cmd": {" echo hi "}}, nil)
	if want := (forkrun.Request{Prompt: "p", AgentCmd: "echo hi"}); code != http.StatusSeeOther || !reflect.DeepEqual(s.req, want) {
		t.Errorf("a sparse form = %d, the starter got %+v; want 303 and %+v", code, s.req, want)
	}
}

// Values refused by the form or by the starter bring the run page back
// with the error and what the person typed; nothing starts on a refusal.
func TestHandler_StartForkRunRefused(t *testing.T) {
	f := newFixture(t)
	s := &fakeStarter{group: f.fork.Group.ID}
	h := New(f.e, "", WithForkRuns(s.start))
	tok := f.csrfOf(h)
	path := "/ui/runs/" + f.src.Run.ID + "/fork-run"
	with := func(k, v string) url.Values {
		form := full(tok)
		form.Set(k, v)
		return form
	}
	cases := []struct {
		name     string
		form     url.Values
		err      error
		code     int
		want     string
		starterN int
	}{
		{"NoPrompt", with("prompt", " \r\n "), nil, 400, "a fork-run needs a prompt", 0},
		{"BadN", with("n", "two"), nil, 400, `number of forks &#34;two&#34;`, 0},
		{"ZeroN", with("n", "0"), nil, 400, "number of forks", 0},
		{"BadBudget", with("budget", "-1"), nil, 400, `per-fork budget &#34;-1&#34;`, 0},
		{"NaNBudget", with("budget", "NaN"), nil, 400, "per-fork budget", 0},
		{"BadMode", with("merge_mode", "sometimes"), nil, 400, "merge mode", 0},
		{"BadJudge", with("judge", "coin"), nil, 400, "judge", 0},
		{"NoBinary", full(tok), fmt.Errorf("agent program %q not found on PATH: %w", hostileScript, tine.ErrUnsupported), 501,
			"agent program &#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34; not found on PATH", 1},
		{"Invalid", full(tok), fmt.Errorf("-n 9 is over [fork] max_branches = 8: %w", tine.ErrInvalid), 400, "max_branches = 8", 1},
		{"ShuttingDown", full(tok), fmt.Errorf("the daemon is shutting down: %w", tine.ErrState), 409, "shutting down", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s.calls, s.err = 0, c.err
			code, body, _ := post(t, h, path, c.form, nil)
			if code != c.code {
				t.Fatalf("POST = %d, want %d:\n%s", code, c.code, body)
			}
			if s.calls != c.starterN {
				t.Errorf("the starter was called %d time(s), want %d", s.calls, c.starterN)
			}
			checkEscaped(t, c.name, body)
			want := []string{`id="forkrun-error"`, c.want, "<details class=\"start-forkrun\" open>",
				"rewrite &#34;&gt;&lt;img src=x", `value="fixer"`, `value="go test ./..."`}
			for _, sel := range []string{c.form.Get("merge_mode"), c.form.Get("judge")} {
				if sel == "vote" || sel == "llm" { // a value the selects offer stays selected
					want = append(want, `<option value="`+sel+`" selected>`)
				}
			}
			for _, w := range want {
				if !strings.Contains(body, w) {
					t.Errorf("no %q in the page", w)
				}
			}
			if strings.Contains(body, `data-live="1"`) {
				t.Error("the page answering the form is live: the script would fetch the form's address")
			}
		})
	}
}

func TestHandler_StartForkRunGuards(t *testing.T) {
	f := newFixture(t)
	s := &fakeStarter{group: f.fork.Group.ID}
	h := New(f.e, "", WithForkRuns(s.start))
	tok := f.csrfOf(h)
	path := "/ui/runs/" + f.src.Run.ID + "/fork-run"
	form := full(tok)
	form.Del("csrf")
	if code, _, _ := post(t, h, path, form, nil); code != http.StatusForbidden {
		t.Errorf("without the CSRF token = %d, want 403", code)
	}
	if code, _, _ := post(t, h, path, full(tok), http.Header{"Origin": {"http://evil.example"}}); code != http.StatusForbidden {
		t.Errorf("from another origin = %d, want 403", code)
	}
	if code, _, _ := post(t, h, "/ui/runs/rnothere/fork-run", full(tok), nil); code != http.StatusNotFound {
		t.Errorf("of an unknown run = %d, want 404", code)
	}
	if _, err := f.e.Discard(f.ctx, f.fork.Forks[0].ID, true); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := post(t, h, "/ui/runs/"+f.fork.Forks[0].ID+"/fork-run", full(tok), nil); code != http.StatusConflict {
		t.Errorf("of a discarded run = %d, want 409", code)
	}
	if s.calls != 0 {
		t.Errorf("the starter was called %d time(s) by refused requests", s.calls)
	}
	plain := New(f.e, "")
	if code, body, _ := post(t, plain, path, full(f.csrfOf(plain)), nil); code != http.StatusNotImplemented || !strings.Contains(body, "tine fork-run") {
		t.Errorf("without a starter = %d, want 501:\n%s", code, body)
	}
}

func TestStartedForkRuns(t *testing.T) {
	var s startedForkRuns
	for i := range maxStarted + 5 {
		s.put(fmt.Sprint("g", i), []string{fmt.Sprint("w", i)})
	}
	if s.get("g0") != nil || s.get("g4") != nil || !reflect.DeepEqual(s.get("g5"), []string{"w5"}) {
		t.Errorf("kept %d group(s); want the newest %d", len(s.warn), maxStarted)
	}
	if len(s.warn) != maxStarted || len(s.groups) != maxStarted {
		t.Errorf("kept %d/%d, want %d", len(s.warn), len(s.groups), maxStarted)
	}
}
