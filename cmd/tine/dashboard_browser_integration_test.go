//go:build linux

package main

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tinehq/tine/internal/browsertest"
	"github.com/tinehq/tine/internal/testkit"
)

// browser starts a headless Chromium with a fresh profile.
func browser(t *testing.T) context.Context {
	t.Helper()
	return browsertest.New(t, 120*time.Second)
}

// serveDashboard starts tine serve on a loopback TCP port and returns the
// dashboard's URL as it prints it (token included); what it logs after is
// read and dropped, so its access log never blocks it.
func (e *env) serveDashboard() string {
	e.t.Helper()
	d := e.serve("--listen", "127.0.0.1:0")
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line := <-d.lines:
			if u, ok := strings.CutPrefix(line, "tine serve: dashboard at "); ok {
				go func() {
					for range d.lines {
					}
				}()
				return u
			}
		case <-deadline:
			e.t.Fatal("tine serve printed no dashboard URL")
		}
	}
}

// browse runs steps in the browser, failing the test with step's name.
func browse(t *testing.T, ctx context.Context, step string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", step, err)
	}
}

// read runs a in the browser and returns its value, failing the test on
// error.
func read[T any](t *testing.T, ctx context.Context, step string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", step, err)
	}
	return v
}

// css is a CSS selector.
func css(sel string) chromedp.CSS { return chromedp.CSS(sel) }

// TestDashboard_CompareTwoForks: through the real tine serve, the compare
// selector of a group's page shows the diff from one fork's files to the
// other's (not each against the fork point), and keeps the pair chosen.
func TestDashboard_CompareTwoForks(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a.txt": "base\n", "same.txt": "base\n"})
	e.ok("init", ws)
	var fork struct {
		Group struct {
			ID string `json:"id"`
		} `json:"group"`
		Forks []jsonRun `json:"forks"`
	}
	e.okJSON(&fork, "fork", "source", "-n", "3", "--json")
	e.execSh("source-2", "echo two > a.txt; echo both > same.txt")
	e.execSh("source-3", "echo three > a.txt; echo both > same.txt; echo new > only3.txt")
	url := e.serveDashboard()
	ctx := browser(t)
	base := strings.SplitN(url, "/ui/", 2)[0]
	ids := map[string]string{}
	for _, f := range fork.Forks {
		ids[f.Name] = f.ID
	}

	browse(t, ctx, "compare source-2 with source-3",
		chromedp.Navigate(url), chromedp.WaitVisible(css("#workspaces")),
		chromedp.Navigate(base+"/ui/groups/"+fork.Group.ID), chromedp.WaitVisible(css("#pair-form")),
		chromedp.SetValue(css("#pair-a"), ids["source-2"]),
		chromedp.SetValue(css("#pair-b"), ids["source-3"]),
		chromedp.Click(css("#pair-go"), chromedp.NodeVisible),
		chromedp.WaitVisible(css("#pair-diff")))
	diff := read(t, ctx, "the diff", chromedp.Text(css("#pair-diff")))
	title := read(t, ctx, "the title", chromedp.Text(css("#pair-title")))
	a := read(t, ctx, "selector a", chromedp.Value(css("#pair-a")))
	b := read(t, ctx, "selector b", chromedp.Value(css("#pair-b")))
	if title != "source-2 → source-3" || a != ids["source-2"] || b != ids["source-3"] {
		t.Errorf("the selector shows %q and %q under %q, want source-2 and source-3 as compared", a, b, title)
	}
	for _, want := range []string{"-two", "+three", "+new", "only3.txt"} {
		if !strings.Contains(diff, want) {
			t.Errorf("the diff between the forks lacks %q:\n%s", want, diff)
		}
	}
	for _, not := range []string{"-base", "same.txt"} {
		if strings.Contains(diff, not) {
			t.Errorf("the diff between the forks has %q (a fork against its fork point, or a file both changed alike):\n%s", not, diff)
		}
	}
}

// TestDashboard_TreeOf50Forks: a group of 50 forks is drawn as one node
// that expands on a click, and the filter draws only the runs it matches.
func TestDashboard_TreeOf50Forks(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a.txt": "base\n", "tine.toml": "[fork]\nmax_branches = 64\n"})
	e.ok("init", ws)
	args := []string{"fork", "source", "-n", "50"}
	for i := range 50 {
		approach := "plain"
		if i == 41 {
			approach = "the needle"
		}
		args = append(args, "--approach", approach)
	}
	e.ok(args...)
	url := e.serveDashboard()
	ctx := browser(t)

	runNames := chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#workspaces svg a.node[data-run]")).map(n => n.dataset.run)`)
	browse(t, ctx, "the overview", chromedp.Navigate(url), chromedp.WaitVisible(css("#workspaces svg")))
	nodes := read(t, ctx, "runs drawn", runNames)
	collapsed := read(t, ctx, "groups collapsed", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#workspaces svg a.collapsed")).map(n => n.textContent.trim())`))
	if !slices.Equal(nodes, []string{"source"}) || len(collapsed) != 1 || !strings.Contains(collapsed[0], "50 forks") {
		t.Fatalf("the overview draws runs %q and collapsed groups %q; want source and one node of 50 forks", nodes, collapsed)
	}
	browse(t, ctx, "expand the group",
		chromedp.Click(css("#workspaces svg a.collapsed"), chromedp.NodeVisible),
		chromedp.WaitVisible(css(`#workspaces svg a.node[data-run="source-50"]`)))
	expanded := read(t, ctx, "runs drawn, expanded", runNames)
	if len(expanded) != 51 {
		t.Errorf("expanded, the tree draws %d runs, want 51", len(expanded))
	}
	browse(t, ctx, "filter",
		chromedp.SetValue(css("#tree-filter-text"), "needle"),
		chromedp.Submit(css("#tree-filter")),
		chromedp.WaitVisible(css("#tree-filter-clear")))
	filtered := read(t, ctx, "runs drawn, filtered", runNames)
	slices.Sort(filtered)
	if !slices.Equal(filtered, []string{"source", "source-42"}) {
		t.Errorf("filtered by 'needle', the tree draws %q, want source and source-42", filtered)
	}
}

// TestDashboard_ForkRunUpdatesTheOpenPage: a fork-run started from the
// CLI, through the real tine serve, updates the group page open in a
// browser within a second of its end, with no reload by hand.
func TestDashboard_ForkRunUpdatesTheOpenPage(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"a.txt": "base\n"})
	e.ok("init", ws)
	url := e.serveDashboard()
	ctx := browser(t)
	base := strings.SplitN(url, "/ui/", 2)[0]
	browse(t, ctx, "sign in", chromedp.Navigate(url), chromedp.WaitVisible(css("#workspaces")))

	// The agents take 4 s: time to open the page while they run (a fork
	// sees none of the source's later files, so nothing can signal them).
	cmd := exec.Command(tineBin, "fork-run", "source", "-n", "2", "--prompt", "write it", "--merge-mode", "manual",
		"--agent-cmd", "sleep 4; echo $TINE_FORK_INDEX > a.txt")
	cmd.Env = e.vars
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	group := ""
	for deadline := time.Now().Add(30 * time.Second); group == ""; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the fork-run made no group")
		}
		for _, r := range e.ls() {
			if r.Group != "" {
				group = r.Group
			}
		}
	}
	browse(t, ctx, "open the group page while it runs",
		chromedp.Navigate(base+"/ui/groups/"+group), chromedp.WaitVisible(css("#forkrun .outcome")))
	outcome := read(t, ctx, "the outcome", chromedp.Text(css("#forkrun .outcome")))
	if outcome != "running" {
		t.Fatalf("the fork-run's outcome on its page: %q, want running", outcome)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("tine fork-run: %v\n%s", err, out.String())
	}
	ended := time.Now()
	wctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](`document.querySelector("#forkrun .outcome").textContent != "running"`, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("the open page still said running %v after tine fork-run ended (%v)", time.Since(ended).Round(time.Millisecond), err)
	}
	t.Logf("the page showed the end %v after the CLI returned", time.Since(ended).Round(time.Millisecond))
}
