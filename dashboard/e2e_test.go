package dashboard

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/browsertest"
)

// browser starts a headless Chromium with a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.New(t, 90*time.Second)
}

// artifacts is where screenshots go: $TINE_ARTIFACTS or a temp dir.
func artifacts(t *testing.T) string {
	dir := os.Getenv("TINE_ARTIFACTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestEndToEnd_Chromium(t *testing.T) {
	f := newFixture(t)
	srv := httptest.NewServer(New(f.e, ""))
	t.Cleanup(srv.Close)
	ctx := browser(t) // cancelled before srv.Close, so the event stream ends first
	f.write(1, "main.txt", "the winner's text\n")
	winner := f.fork.Forks[1]

	do(t, ctx, "overview", chromedp.Navigate(srv.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS(`svg.tree`)))
	svg := value(t, ctx, "tree", chromedp.OuterHTML(chromedp.CSS(`svg.tree`)))
	screenshot(t, ctx, "overview.png")
	for _, r := range f.fork.Forks {
		if !strings.Contains(svg, `data-run="`+r.Name+`"`) {
			t.Errorf("the tree has no node for %s:\n%s", r.Name, svg)
		}
	}
	do(t, ctx, "group page",
		chromedp.Click(chromedp.CSS(`table.groups a[href="/ui/groups/`+f.fork.Group.ID+`"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`tr.winner`)))
	winnerRow := value(t, ctx, "winner row", chromedp.Text(chromedp.CSS(`tr.winner`)))
	if !strings.Contains(winnerRow, winner.Name) || !strings.Contains(winnerRow, "recommended") {
		t.Errorf("the highlighted row is %q, want %s recommended", winnerRow, winner.Name)
	}
	screenshot(t, ctx, "group-page.png")
	alertsFired(t, ctx)

	do(t, ctx, "choose (merge)",
		chromedp.Click(chromedp.CSS(`button.choose-merge[data-run="`+winner.Name+`"]`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`section.plan`)))
	plan := value(t, ctx, "plan", chromedp.Text(chromedp.CSS(`section.plan`)))
	do(t, ctx, "confirm", chromedp.Click(chromedp.CSS(`button.confirm`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`p.done`)))
	if !strings.Contains(plan, "main.txt") || !strings.Contains(plan, "take") {
		t.Errorf("the plan shown was %q, want main.txt taken", plan)
	}
	if got := readFile(t, filepath.Join(f.e.Path(f.src.Workspace, f.src.Run), "main.txt")); got != "the winner's text\n" {
		t.Errorf("source main.txt = %q after confirming the merge", got)
	}
	approveInBrowser(t, ctx, f, srv.URL)
}

// approveInBrowser has a fresh fork ask for its merge, then approves it
// with the overview's button.
func approveInBrowser(t *testing.T, ctx context.Context, f *fixture, base string) {
	res, err := f.e.Fork(f.ctx, f.src.Run.ID, engine.ForkOptions{Copies: 1, Name: "asker", Approaches: []string{hostileScript}})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	actor := engine.Ref{Workspace: f.src.Workspace, Run: res.Forks[0]}
	writeFile(t, filepath.Join(f.e.Path(actor.Workspace, actor.Run), "asked.txt"), "please merge\n")
	a, err := control.Of(f.e).RequestResolution(f.ctx, actor, control.Resolution{Action: "merge", Run: actor.Run.ID})
	if err != nil {
		t.Fatalf("RequestResolution: %v", err)
	}
	button := chromedp.CSS(`#approval-` + a.ID + ` button.approve`)
	do(t, ctx, "approve", chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible(button),
		chromedp.Click(button, chromedp.NodeVisible), chromedp.WaitVisible(chromedp.CSS(`p.done`)))
	if got := readFile(t, filepath.Join(f.wsDir, "asked.txt")); got != "please merge\n" {
		t.Errorf("asked.txt in the source = %q after approving", got)
	}
	alertsFired(t, ctx)
}

// do runs steps in the browser, failing the test at the first error.
func do(t *testing.T, ctx context.Context, step string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// value runs a and returns its value, failing the test on error.
func value[T any](t *testing.T, ctx context.Context, step string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return v
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png := value(t, ctx, "screenshot", chromedp.FullScreenshot(100))
	p := filepath.Join(artifacts(t), name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// alertsFired fails if hostile text became an element of the page.
func alertsFired(t *testing.T, ctx context.Context) {
	t.Helper()
	n := value(t, ctx, "count injected elements",
		chromedp.Evaluate[int](`document.querySelectorAll('img[src="x"], script:not([src])').length`))
	if n != 0 {
		t.Errorf("%d injected element(s) on the page", n)
	}
}

// TestEndToEnd_ForkRun opens the group page of a fork-run in progress,
// sees a running fork's elapsed time tick, then sees the page follow the
// report to its verdict without a reload: the winner highlighted with the
// judge's rationale, the agent output the person opened still open.
func TestEndToEnd_ForkRun(t *testing.T) {
	f := newFixture(t)
	f.writeReport(f.runningReport())
	srv := httptest.NewServer(New(f.e, ""))
	t.Cleanup(srv.Close)
	ctx := browser(t)
	a, b := f.fork.Forks[0], f.fork.Forks[1]
	running := chromedp.CSS(`.fr-fork[data-run="` + a.Name + `"][data-state="running"]`)
	elapsed := chromedp.CSS(`.fr-fork[data-run="` + a.Name + `"] .elapsed`)
	output := `#fr-out-` + a.ID

	do(t, ctx, "group page", chromedp.Navigate(srv.URL+"/ui/groups/"+f.fork.Group.ID), chromedp.WaitVisible(running),
		chromedp.Click(chromedp.CSS(output+` summary`), chromedp.NodeVisible))
	first := value(t, ctx, "elapsed", chromedp.Text(elapsed))
	do(t, ctx, "wait for a tick", chromedp.Sleep(1500*time.Millisecond))
	if second := value(t, ctx, "elapsed", chromedp.Text(elapsed)); second == first {
		t.Errorf("the running fork's elapsed time stayed %q", first)
	}
	screenshot(t, ctx, "forkrun-running.png")
	value(t, ctx, "mark the page", chromedp.Evaluate[int](`window.tineMark = 7`))

	f.writeReport(f.finishedReport())
	do(t, ctx, "the verdict arrives", chromedp.WaitVisible(chromedp.CSS(`.fr-fork.winner`)))
	winner := value(t, ctx, "winner", chromedp.Text(chromedp.CSS(`.fr-fork.winner`)))
	if !strings.Contains(winner, b.Name) || !strings.Contains(winner, "passed") {
		t.Errorf("the highlighted fork is %q, want %s with passing tests", winner, b.Name)
	}
	rationale := value(t, ctx, "rationale", chromedp.Text(chromedp.CSS(`#verdict .rationale`)))
	if rationale != hostileRationale {
		t.Errorf("the rationale shown is %q, want %q as text", rationale, hostileRationale)
	}
	verdict := value(t, ctx, "verdict", chromedp.Text(chromedp.CSS(`#verdict`)))
	if !strings.Contains(verdict, "heuristic") || !strings.Contains(verdict, "0.87") {
		t.Errorf("the verdict box says %q, want the judge and its confidence", verdict)
	}
	if mark := value(t, ctx, "page mark", chromedp.Evaluate[int](`window.tineMark || 0`)); mark != 7 {
		t.Error("the page was reloaded; want the fork-run section swapped in place")
	}
	if open := value(t, ctx, "details", chromedp.Evaluate[bool](`document.querySelector("`+output+`").open`)); !open {
		t.Error("the agent output the person opened was closed by the update")
	}
	alertsFired(t, ctx)
	screenshot(t, ctx, "forkrun-finished.png")

	do(t, ctx, "overview", chromedp.Navigate(srv.URL+"/ui/"), chromedp.WaitVisible(chromedp.CSS(`a.fr-mark`)))
	if mark := value(t, ctx, "mark", chromedp.Text(chromedp.CSS(`a.fr-mark`))); !strings.Contains(mark, "awaiting_choice") {
		t.Errorf("the overview marks the group %q, want its outcome", mark)
	}
	alertsFired(t, ctx)
	screenshot(t, ctx, "overview-forkrun.png")
}

// daemon is an engine whose one workspace ("app") has the overlay backend,
// with the API server that runs its fork-runs, as tine serve has; it skips
// unless root can mount overlays. At cleanup the server's fork-runs are
// shut down before the workspace is released.
func daemon(t *testing.T) (*engine.Engine, engine.Ref, *httpapi.Server) {
	t.Helper()
	enginetest.RequireOverlay(t, "a fork-run's forks are overlay mounts and its agents run in them through supervisors")
	ctx := context.Background()
	root := t.TempDir()
	w := enginetest.New(t, enginetest.Options{Backend: "overlay", Home: filepath.Join(root, "home"), Path: filepath.Join(root, "app"),
		Files: map[string]string{"main.txt": "hello\n"}})
	api := httpapi.New(w.Engine, "")
	t.Cleanup(func() { // before the workspace is released
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := api.Shutdown(sctx); err != nil {
			t.Errorf("shutting the API down: %v", err)
		}
	})
	return w.Engine, w.Source, api
}

// starter is how tine serve lets the dashboard start fork-runs in api.
func starter(api *httpapi.Server) ForkRunStarter {
	return func(ctx context.Context, ref string, req forkrun.Request) (string, []string, error) {
		st, err := api.StartForkRun(ctx, ref, req)
		if err != nil {
			return "", nil, err
		}
		return st.Group, st.Warnings, nil
	}
}

// TestEndToEnd_StartForkRun fills a run page's fork-run form in the
// browser, with the daemon's starter and a command agent, lands on the
// group page and sees the fork-run run and end there without a reload.
func TestEndToEnd_StartForkRun(t *testing.T) {
	e, src, api := daemon(t)
	srv := httptest.NewServer(New(e, "", WithForkRuns(starter(api))))
	t.Cleanup(srv.Close)
	ctx := browser(t)

	do(t, ctx, "run page", chromedp.Navigate(srv.URL+"/ui/runs/"+src.Run.ID),
		chromedp.Click(chromedp.CSS(`details.start-forkrun summary`), chromedp.NodeVisible),
		chromedp.SendKeys(chromedp.CSS(`#fr-prompt`), "write hi.txt", chromedp.NodeVisible),
		chromedp.SetValue(chromedp.CSS(`#fr-n`), "2"),
		chromedp.SetValue(chromedp.CSS(`#fr-approaches`), "short\nlong"),
		chromedp.SetValue(chromedp.CSS(`#fr-agent-cmd`), "echo started; sleep 2; echo hi > hi.txt"),
		chromedp.SetValue(chromedp.CSS(`#fr-test`), "test -f hi.txt"),
		chromedp.SetValue(chromedp.CSS(`#fr-merge`), "manual"))
	screenshot(t, ctx, "forkrun-form.png")
	do(t, ctx, "start", chromedp.Click(chromedp.CSS(`button.start-forkrun`), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`p.done`)))
	loc := value(t, ctx, "location", chromedp.Location())
	if !strings.Contains(loc, "/ui/groups/g") || !strings.HasSuffix(loc, "?done=forkrun") {
		t.Fatalf("the form led to %s, want the group page", loc)
	}
	do(t, ctx, "forks run", chromedp.WaitVisible(chromedp.CSS(`.fr-fork[data-state="running"]`)))
	value(t, ctx, "mark the page", chromedp.Evaluate[int](`window.tineMark = 7`))
	screenshot(t, ctx, "forkrun-started.png")

	do(t, ctx, "the fork-run ends", chromedp.WaitVisible(chromedp.CSS(`.outcome.oc-reported`)))
	if mark := value(t, ctx, "page mark", chromedp.Evaluate[int](`window.tineMark || 0`)); mark != 7 {
		t.Error("the page was reloaded; want the fork-run section swapped in place")
	}
	n := value(t, ctx, "finished forks", chromedp.Evaluate[int](
		`document.querySelectorAll('.fr-fork[data-state="finished"] .tests.t-passed').length`))
	// One JS call: the section may be swapped between a query and a read.
	approaches := value(t, ctx, "approaches", chromedp.Evaluate[string](
		`(document.querySelector('.fr-forks') || {}).textContent || ''`))
	if n != 2 || !strings.Contains(approaches, "short") || !strings.Contains(approaches, "long") {
		t.Errorf("%d fork(s) finished with passing tests, approaches %q; want both", n, approaches)
	}
	// The rest of the page follows the fork-run's events: the forks' diffs.
	do(t, ctx, "the diffs arrive", chromedp.Poll[chromedp.Void](
		`document.querySelectorAll('#diffs pre.diff').length === 2`, chromedp.WithPollingTimeout(30*time.Second)))
	screenshot(t, ctx, "forkrun-started-finished.png")
}
