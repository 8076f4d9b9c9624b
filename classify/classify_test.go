package classify

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
)

// tableCase is one line of testdata/commands.tsv:
// command, scope, categories ("-" for none), source verdict, fork verdict.
// "⏎" in the command stands for a newline.
type tableCase struct {
	line         int
	cmd          string
	scope        Scope
	cats         []Category
	source, fork Verdict
}

func loadTable(tb testing.TB) []tableCase {
	tb.Helper()
	f, err := os.Open("testdata/commands.tsv")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var cases []tableCase
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 5 {
			tb.Fatalf("commands.tsv:%d: want 5 tab-separated columns, got %d", n, len(cols))
		}
		tc := tableCase{line: n, cmd: strings.ReplaceAll(cols[0], "⏎", "\n"), scope: Scope(cols[1]),
			source: Verdict(cols[3]), fork: Verdict(cols[4])}
		if cols[2] != "-" {
			for _, c := range strings.Split(cols[2], ",") {
				tc.cats = append(tc.cats, Category(c))
			}
		}
		cases = append(cases, tc)
	}
	return cases
}

func TestCommand_Table(t *testing.T) {
	cases := loadTable(t)
	if len(cases) < 150 {
		t.Errorf("table has %d cases, want at least 150", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.cmd, func(t *testing.T) {
			for _, r := range []struct {
				role Role
				want Verdict
			}{{Source, tc.source}, {Fork, tc.fork}} {
				d := Command(tc.cmd, Context{Role: r.role})
				if d.Scope != tc.scope || !slices.Equal(d.Categories, tc.cats) || d.Verdict != r.want {
					t.Errorf("line %d %s: got %s %v %s (%s), want %s %v %s",
						tc.line, r.role, d.Scope, d.Categories, d.Verdict, d.Reason, tc.scope, tc.cats, r.want)
				}
			}
		})
	}
}

func TestCommand_Decision(t *testing.T) {
	d := Command("cd web && pnpm up --latest", Context{Role: Source})
	if d.Verdict != ForkFirst || len(d.Approaches) != 2 || d.Approaches[0] != approaches[DependencyUpgrade][0] {
		t.Errorf("approaches: got %+v", d)
	}
	if !slices.Equal(d.Commands, []string{"pnpm up --latest"}) {
		t.Errorf("commands: got %q", d.Commands)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"scope":`, `"categories":`, `"verdict":`, `"reason":`, `"approaches":`, `"commands":`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("json %s lacks %s", b, key)
		}
	}
}

func TestCommand_ReasonByRole(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		role Role
		want string
	}{
		{"git push origin main", Source, "needs a person's approval"},
		{"git push origin main", Fork, "forks never touch the outside world"},
		{"git push origin main", "", "needs a person's approval"},
		{"rm -rf /", Fork, "unbounded"},
		{"npm update", Fork, "already in a fork"},
		{"if then fi (", Source, "could not parse"},
	} {
		if d := Command(tc.cmd, Context{Role: tc.role}); !strings.Contains(d.Reason, tc.want) {
			t.Errorf("%q as %q: reason %q lacks %q", tc.cmd, tc.role, d.Reason, tc.want)
		}
	}
}

func TestCommand_PromptHints(t *testing.T) {
	for _, tc := range []struct {
		cmd, prompt string
		want        Verdict
		cat         Category
	}{
		{"npm install", "upgrade react to 19", ForkFirst, DependencyUpgrade},
		{"npm install", "fix the failing test", Allow, ""},
		{"python scripts/rewrite_imports.py", "refactor all handlers to the new API", ForkFirst, BroadRefactor},
		{"make db", "migrate the schema to add a users table", ForkFirst, SchemaMigration},
		{"ls -la", "upgrade all dependencies", Allow, ""},
	} {
		d := Command(tc.cmd, Context{Role: Source, Prompt: tc.prompt})
		if d.Verdict != tc.want || tc.cat != "" && !slices.Contains(d.Categories, tc.cat) {
			t.Errorf("%q with %q: got %s %v", tc.cmd, tc.prompt, d.Verdict, d.Categories)
		}
	}
}

func TestPrompt(t *testing.T) {
	for _, tc := range []struct {
		prompt string
		want   []Category
	}{
		{"Upgrade React to 19", []Category{DependencyUpgrade}},
		{"please bump all dependencies", []Category{DependencyUpgrade}},
		{"migrate the schema so users have an email column", []Category{SchemaMigration}},
		{"add a column for the birthday", []Category{SchemaMigration}},
		{"refactor all the handlers", []Category{BroadRefactor}},
		{"rename Foo to Bar across the codebase", []Category{BroadRefactor}},
		{"regenerate the lockfile", []Category{LockfileRewrite}},
		{"clean up all untracked files", []Category{DestructiveCleanup}},
		{"drop the sessions table", []Category{DestructiveDatabase}},
		{"deploy it to production", []Category{ExternalMutation}},
		{"fix the typo in the README", nil},
		{"why does the test fail?", nil},
	} {
		if got := Prompt(tc.prompt); !slices.Equal(got, tc.want) {
			t.Errorf("Prompt(%q) = %v, want %v", tc.prompt, got, tc.want)
		}
	}
}

func FuzzCommand(f *testing.F) {
	for _, tc := range loadTable(f) {
		f.Add(tc.cmd, tc.cmd == "" || len(tc.cmd)%2 == 0)
	}
	f.Add("sh -c 'sh -c \"sh -c \\\"rm -rf /\\\"\"'", true)
	f.Add("$(", false)
	f.Add("cat <<EOF\nunterminated", true)
	f.Fuzz(func(t *testing.T, cmd string, fork bool) {
		role := Source
		if fork {
			role = Fork
		}
		d := Command(cmd, Context{Role: role})
		if !d.Verdict.Valid() || !d.Scope.Valid() || d.Reason == "" {
			t.Fatalf("Command(%q) = %+v", cmd, d)
		}
		if d.Scope == External && d.Verdict != Deny {
			t.Fatalf("external not denied: %q -> %+v", cmd, d)
		}
	})
}

func BenchmarkCommand(b *testing.B) {
	cases := loadTable(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		tc := cases[i%len(cases)]
		Command(tc.cmd, Context{Role: Source})
	}
}
