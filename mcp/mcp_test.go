package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/layer"
)

// The tools the issue names, and which of them change state.
var wantTools = map[string]string{
	"fork": "additive", "fork_run": "additive", "fork_run_report": "read-only", "cancel_fork_run": "destructive",
	"list_runs": "read-only", "compare": "read-only", "diff": "read-only", "cost": "read-only", "summary": "read-only", "ps": "read-only",
	"merge": "destructive", "choose": "destructive", "discard": "destructive", "rollback": "destructive",
	"effect": "additive", "screenshot": "read-only", "computer": "additive",
	"submit_tasks": "additive", "list_tasks": "read-only", "cancel_tasks": "destructive",
}

// openWorld are the tools that reach beyond tine (once a person approves).
var openWorld = map[string]bool{"effect": true, "submit_tasks": true}

func kindOf(a *sdk.ToolAnnotations) string {
	switch {
	case a == nil:
		return "unannotated"
	case a.ReadOnlyHint:
		return "read-only"
	case a.DestructiveHint != nil && !*a.DestructiveHint:
		return "additive"
	case a.DestructiveHint != nil:
		return "destructive"
	}
	return "unannotated"
}

func TestServer_ListTools(t *testing.T) {
	cs := session(t, Options{API: NewClient("/nonexistent", "")})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tool := range res.Tools {
		got[tool.Name] = true
		want, named := wantTools[tool.Name]
		if !named {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		if k := kindOf(tool.Annotations); k != want {
			t.Errorf("%s is annotated %s, want %s", tool.Name, k, want)
		}
		if tool.Description == "" || tool.Annotations.OpenWorldHint == nil || *tool.Annotations.OpenWorldHint != openWorld[tool.Name] {
			t.Errorf("%s: needs a description, and a closed world unless it reaches beyond tine", tool.Name)
		}
	}
	for name := range wantTools {
		if !got[name] {
			t.Errorf("tool %s missing", name)
		}
	}
}

// An agent's whole session on the host: fork two approaches, compare,
// diff, merge one (dry run, then for real), discard the other.
func TestServer_Session(t *testing.T) {
	d := newDaemon(t, map[string]string{"a.txt": "original\n"})
	cs := session(t, Options{API: NewClient(d.sock, "")})

	var fr forkAnswer
	text := ok(t, cs, "fork", map[string]any{"run": "source", "copies": 2, "approaches": []string{"rewrite", "patch"}}, &fr)
	if len(fr.Forks) != 2 || fr.Forks[0].Approach != "rewrite" || fr.Forks[1].Approach != "patch" || fr.Group == "" {
		t.Fatalf("fork_run: %s", text)
	}
	a, b := fr.Forks[0], fr.Forks[1]

	d.write(t, a.ID, "new.txt", "hello\n")
	d.write(t, a.ID, "a.txt", "rewritten\n")

	var cmp struct {
		Forks []struct {
			Changed int `json:"files_changed"`
		} `json:"forks"`
	}
	text = ok(t, cs, "compare", map[string]any{"group": fr.Group}, &cmp)
	if len(cmp.Forks) != 2 || cmp.Forks[0].Changed != 2 || cmp.Forks[1].Changed != 0 {
		t.Errorf("inspect_branches: %s", text)
	}
	var rows struct {
		Runs []struct {
			Name string `json:"name"`
		} `json:"runs"`
	}
	ok(t, cs, "list_runs", map[string]any{"run": "source"}, &rows)
	if len(rows.Runs) != 3 {
		t.Errorf("inspect_branches run=source: %+v", rows)
	}

	var diff struct {
		Changes []layer.Change `json:"changes"`
	}
	ok(t, cs, "diff", map[string]any{"run": a.Name}, &diff)
	if len(diff.Changes) != 2 || diff.Changes[0].Path != "a.txt" || diff.Changes[1].Path != "new.txt" {
		t.Errorf("diff_branches: %+v", diff.Changes)
	}
	if text := ok(t, cs, "diff", map[string]any{"run": a.Name, "patch": true}, nil); !strings.Contains(text, "+rewritten") || !strings.Contains(text, "+hello") {
		t.Errorf("diff_branches patch: %s", text)
	}

	text = ok(t, cs, "merge", map[string]any{"run": a.Name}, nil)
	if !strings.Contains(text, "Dry run") || d.read(t, "a.txt") != "original\n" {
		t.Fatalf("merge_or_select dry run: %s; source has %q", text, d.read(t, "a.txt"))
	}
	var mo mergeOut
	text = ok(t, cs, "merge", map[string]any{"run": a.Name, "dry_run": false}, &mo)
	if !mo.Applied || d.read(t, "a.txt") != "rewritten\n" || d.read(t, "new.txt") != "hello\n" {
		t.Fatalf("merge_or_select: %s", text)
	}

	if text := ok(t, cs, "cost", map[string]any{"group": fr.Group}, nil); !strings.Contains(text, "no cost recorded") {
		t.Errorf("fork_cost: %s", text)
	}
	text = ok(t, cs, "discard", map[string]any{"run": b.Name}, nil)
	if !strings.Contains(text, "discarded "+b.Name) {
		t.Errorf("terminate_branch: %s", text)
	}
	fails(t, cs, "diff", map[string]any{"run": b.ID}, "discarded")
}

func TestServer_Select(t *testing.T) {
	d := newDaemon(t, map[string]string{"a.txt": "original\n"})
	cs := session(t, Options{API: NewClient(d.sock, "")})
	var fr forkAnswer
	ok(t, cs, "fork", map[string]any{"run": "app/source", "approaches": []string{"one", "two", "three"}}, &fr)
	if len(fr.Forks) != 3 {
		t.Fatalf("fork: %+v", fr)
	}
	d.write(t, fr.Forks[1].ID, "a.txt", "two\n")

	args := map[string]any{"run": fr.Forks[1].Name, "group": fr.Group}
	text := ok(t, cs, "choose", args, nil)
	if !strings.Contains(text, "Dry run") || !strings.Contains(text, fr.Forks[0].Name) || d.read(t, "a.txt") != "original\n" {
		t.Fatalf("choose, dry run: %s", text)
	}
	args["dry_run"] = false
	text = ok(t, cs, "choose", args, nil)
	if d.read(t, "a.txt") != "two\n" || !strings.Contains(text, "discarded "+fr.Forks[0].Name+", "+fr.Forks[2].Name) {
		t.Errorf("choose: %s", text)
	}
	if text := ok(t, cs, "ps", map[string]any{"run": fr.Forks[1].ID}, nil); !strings.Contains(text, "1 path(s) changed") {
		t.Errorf("ps: %s", text)
	}
}

func TestServer_Rollback(t *testing.T) {
	d := newDaemon(t, map[string]string{"a.txt": "original\n"})
	cs := session(t, Options{API: NewClient(d.sock, "")})
	var fr forkAnswer
	ok(t, cs, "fork", map[string]any{"run": "source"}, &fr)
	d.write(t, fr.Forks[0].ID, "a.txt", "oops\n")
	ok(t, cs, "rollback", map[string]any{"run": fr.Forks[0].Name, "to": fr.ForkPoint}, nil)
	if got := d.readIn(t, fr.Forks[0].ID, "a.txt"); got != "original\n" {
		t.Errorf("after rollback the fork has %q", got)
	}
	text := ok(t, cs, "discard", map[string]any{"run": fr.Forks[0].Name}, nil)
	if !strings.Contains(text, "discarded") {
		t.Errorf("discard: %s", text)
	}
}

// Bad input and the daemon's refusals are tool errors of one line, never
// protocol errors.
func TestServer_Errors(t *testing.T) {
	d := newDaemon(t, map[string]string{"a.txt": "original\n"})
	cs := session(t, Options{API: NewClient(d.sock, "")})
	d.write(t, "source", "a.txt", "changed\n")
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"fork", map[string]any{"run": "source", "copies": 0}, "minimum"},
		{"fork_run", map[string]any{"run": "source", "copies": 17, "command": "true"}, "maximum"},
		{"fork", map[string]any{"copies": 1}, "run is required"},
		{"fork", map[string]any{"run": "nope"}, "not found"},
		{"fork", map[string]any{"run": "source", "copies": 1, "approaches": []string{"a", "b"}}, "2 approaches for 1 copies"},
		{"fork", map[string]any{"run": "source", "bogus": true}, "bogus"},
		{"fork", map[string]any{"run": "source", "command": "true"}, "command"},
		{"fork_run", map[string]any{"run": "source"}, "give command"},
		{"diff", map[string]any{}, "run"},
		{"diff", map[string]any{"run": "nope", "patch": true}, "not found"},
		{"compare", map[string]any{"group": "gnope0000"}, "not found"},
		{"compare", map[string]any{"group": ""}, "group is required"},
		{"cost", map[string]any{}, "run is required"},
		{"cost", map[string]any{"group": "g1", "run": "source"}, "not both"},
		{"merge", map[string]any{"run": "nope"}, "not found"},
		{"merge", map[string]any{"run": "source", "promote": true, "into": "x"}, "into does not go with promote"},
		{"choose", map[string]any{"group": "g"}, "run"},
		{"discard", map[string]any{"run": "nope"}, "not found"},
		{"summary", map[string]any{"run": "source"}, "not a fork"},
		{"cancel_fork_run", map[string]any{"group": "source"}, "no fork-run"},
		{"rollback", map[string]any{"run": "source", "to": "nope"}, "not found"},
	} {
		t.Run(c.tool, func(t *testing.T) { fails(t, cs, c.tool, c.args, c.want) })
	}
	if _, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "no_such_tool"}); err == nil {
		t.Error("an unknown tool is a protocol error")
	}
}

func TestServer_NoDaemon(t *testing.T) {
	cs := session(t, Options{API: NewClient(filepath.Join(t.TempDir(), "none.sock"), "")})
	fails(t, cs, "ps", map[string]any{"run": "source"}, "is tine serve running?")
	fails(t, cs, "diff", map[string]any{"run": "source", "patch": true}, "is tine serve running?")
}

// write puts a file into run's view, as an agent working in it would.
func (d *daemon) write(t *testing.T, run, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(d.path(t, run), name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (d *daemon) readIn(t *testing.T, run, name string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(d.path(t, run), name))
	return string(b)
}

// read reads a file of the source (the workspace directory).
func (d *daemon) read(t *testing.T, name string) string { return d.readIn(t, "source", name) }

func (d *daemon) path(t *testing.T, run string) string {
	t.Helper()
	r, err := d.e.FindRun(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	return d.e.Path(r.Workspace, r.Run)
}

// Tool results are framed as the MCP specification's examples: text
// content, and isError on failure.
func TestServer_FramingMatchesSpec(t *testing.T) {
	spec := fixture(t, "spec-2025-06-18.tool-results-and-errors.jsonl", 4)
	d := newDaemon(t, map[string]string{"a.txt": "x\n"})
	cs := session(t, Options{API: NewClient(d.sock, "")})
	res, _ := call(t, cs, "fork", map[string]any{"run": "nope"})
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	json.Unmarshal(b, &got)
	if !hasKeys(got, spec) || got["isError"] != true {
		t.Errorf("error result %s, want the shape of %v", b, spec)
	}
	gotItem, specItem := got["content"].([]any)[0].(map[string]any), spec["content"].([]any)[0].(map[string]any)
	if keysOf(gotItem) != keysOf(specItem) || gotItem["type"] != "text" {
		t.Errorf("content %v, want the shape of %v", gotItem, specItem)
	}
}

// fixture reads the result of the message with id from a spec fixture.
func fixture(t *testing.T, name string, id float64) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "shared", "fixtures", "agents", "mcp", name))
	if err != nil {
		t.Skipf("spec fixtures: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		var m struct {
			ID     float64        `json:"id"`
			Result map[string]any `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) == nil && m.ID == id && m.Result != nil {
			return m.Result
		}
	}
	t.Fatalf("%s: no result with id %v", name, id)
	return nil
}

func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return strings.Join(sortStrings(ks), ",")
}

// hasKeys reports whether got has every key of want.
func hasKeys(got, want map[string]any) bool {
	for k := range want {
		if _, ok := got[k]; !ok {
			return false
		}
	}
	return true
}
