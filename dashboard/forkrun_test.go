package dashboard

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/judge"
)

// hostileRationale is a judge's rationale that tries to become markup.
const hostileRationale = `fork two is smaller ` + hostileScript + ` and its tests pass`

// runningReport is a fork-run of f's group in progress: the first fork's
// agent runs, the second waits for a slot.
func (f *fixture) runningReport() *forkrun.Report {
	a, b := f.fork.Forks[0], f.fork.Forks[1]
	start := time.Now().Add(-90 * time.Second).UTC()
	return &forkrun.Report{
		Workspace: f.src.Workspace.ID, Group: f.fork.Group.ID, Source: f.src.Run.Name, SourceID: f.src.Run.ID,
		Prompt: "make it faster " + hostileScript, Agent: "claude", Mode: forkrun.Auto, JudgeKind: "heuristic",
		Threshold: 0.7, TestCmd: "go test ./...", Notes: []string{"N reduced to 2 " + hostileAttr},
		Outcome: forkrun.OutcomeRunning, StartedAt: start,
		Budget: budget.Spending{TotalUSD: 0.12, PerForkCap: 1, AggregateCap: 5},
		Forks: []*forkrun.Fork{
			{Index: 0, Run: a.ID, Name: a.Name, Approach: a.Approach, State: forkrun.Running, StartedAt: start, CostUSD: 0.12,
				Agent: agent.Snapshot{Output: "thinking " + hostileScript, ToolCallsTotal: 3, Commands: []string{"ls " + hostileAttr}, CommandsTotal: 1}},
			{Index: 1, Run: b.ID, Name: b.Name, Approach: b.Approach, State: forkrun.Pending},
		},
	}
}

// finishedReport is the same fork-run judged: the second fork won and
// awaits a person's choice.
func (f *fixture) finishedReport() *forkrun.Report {
	rep := f.runningReport()
	a, b := rep.Forks[0], rep.Forks[1]
	end := time.Now().UTC()
	exit := 0
	a.State, a.FinishedAt, a.FilesChanged, a.LinesAdded = forkrun.Finished, end.Add(-30*time.Second), 1, 1
	a.Test = &forkrun.Test{Command: "go test ./...", Exit: 1, Seconds: 4, Output: "FAIL " + hostileScript}
	a.Evidence = &evidence.Fork{Holdout: &evidence.Check{Command: "sh /srv/holdout.sh", Exit: 1, Output: "want 6 got 5 " + hostileScript},
		Regression: &evidence.Check{Command: "go test ./...", Passed: true}, Validity: evidence.ProvesNothing, TestFiles: []string{"calc_test.py"},
		AtForkPoint: &evidence.Check{Command: "pytest", Passed: true}, CrossFailed: []string{b.Name},
		Checks: []*evidence.Check{{Command: "go vet ./...", Exit: 2, Output: "vet: bad"}},
		Flags:  []evidence.Flag{{Kind: evidence.TestLiterals, Path: "calc.py", Detail: hostileScript}}}
	b.State, b.StartedAt, b.FinishedAt, b.CostUSD = forkrun.Finished, rep.StartedAt.Add(time.Second), end, 0.31
	b.FilesChanged, b.LinesAdded, b.LinesDeleted, b.MergeClean, b.Ready = 1, 1, 1, true, true
	b.Test = &forkrun.Test{Command: "go test ./...", Passed: true, Seconds: 3, Output: "ok"}
	b.Agent.ExitCode = &exit
	rep.Verdict = &judge.Verdict{Judge: "heuristic", Winner: b.Run, Confidence: 0.87, RawConfidence: 0.7, CannotTell: "Cannot tell " + hostileScript,
		Scores: map[string]float64{a.Run: 0.31, b.Run: 0.87}, Rationale: hostileRationale}
	rep.Budget.TotalUSD = 0.43
	rep.Outcome, rep.Winner = forkrun.OutcomeAwaitingChoice, b.Name
	rep.OutcomeDetail = b.Name + " is recommended " + hostileAttr
	rep.FinishedAt, rep.Seconds = end, end.Sub(rep.StartedAt).Seconds()
	rep.EarlyStop = &forkrun.EarlyStop{Fork: b.Name, Confidence: 0.87, Stopped: []string{"c-3 " + hostileScript}, SpentUSD: 0.05, SavedUSD: 0.26, SavedSeconds: 12}
	return rep
}

// writeReport stores rep as fork-run does: report.json and summary.json
// in the group's directory, each replaced atomically.
func (f *fixture) writeReport(rep *forkrun.Report) {
	f.t.Helper()
	lg := f.e.Layout().Group(rep.Workspace, rep.Group)
	if err := grouprec.Open(lg).SaveReport(rep, rep.Summary()); err != nil {
		f.t.Fatal(err)
	}
}

func TestHandler_ForkRun(t *testing.T) {
	f := newFixture(t)
	h := New(f.e, "")
	g := f.fork.Group.ID
	a, b := f.fork.Forks[0], f.fork.Forks[1]

	_, plain := get(t, h, "/ui/groups/"+g, nil)
	if strings.Contains(plain, "Fork-run") || !strings.Contains(plain, `id="forkrun"`) {
		t.Errorf("a group of tine fork shows a fork-run, or lacks the empty section the script fills")
	}

	f.writeReport(f.runningReport())
	cases := []struct {
		name, path string
		want       []string
	}{
		{"Running", "/ui/groups/" + g, []string{"Fork-run", `class="outcome oc-running"`, `data-running="1"`,
			`data-run="` + a.Name + `" data-state="running"`, `data-ticking data-elapsed="9`, "1m30s", "so far",
			"make it faster &lt;script&gt;", "auto", "$0.12", "per-fork cap $1.00", "aggregate cap $5.00", "N reduced to 2",
			`class="state st-pending"`, "3 tool calls"}},
		{"Fragment", "/ui/groups/" + g + "/forkrun", []string{`<section id="forkrun"`, `data-group="` + g + `"`, "st-running"}},
		{"Overview", "/ui/", []string{"fork-run · <span class=\"outcome oc-running\">running</span>", `class="fr-label"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := get(t, h, c.path, nil)
			if code != 200 {
				t.Fatalf("GET %s = %d:\n%s", c.path, code, body)
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: no %q in the page", c.path, w)
				}
			}
			checkEscaped(t, c.name, body)
		})
	}

	f.writeReport(f.finishedReport())
	t.Run("Unresolved", func(t *testing.T) {
		_, body := get(t, h, "/ui/groups/"+g, nil)
		checkEscaped(t, "unresolved", body)
		for _, w := range []string{"awaiting_choice", b.Name + " is recommended &#34;&gt;&lt;img"} {
			if !strings.Contains(body, w) {
				t.Errorf("no %q in the page", w)
			}
		}
	})
	resolution, _ := json.Marshal(grouprec.Resolution{Action: "merge", Chosen: b.Name, Parent: "source", Discarded: []string{a.Name}})
	writeFile(t, f.e.Layout().Group(f.src.Workspace.ID, g).Resolution(), string(resolution))
	t.Run("Finished", func(t *testing.T) {
		_, body := get(t, h, "/ui/groups/"+g, nil)
		checkEscaped(t, "finished", body)
		for _, w := range []string{
			`class="fr-fork winner" data-run="` + b.Name + `"`, "winner: <a", `class="judge-kind">heuristic`, `class="confidence">0.87`,
			"fork two is smaller &lt;script&gt;alert(1)&lt;/script&gt; and its tests pass", ">resolved<",
			b.Name + " was merged into source", `class="tests t-passed"`, `class="tests t-failed"`, "FAIL &lt;script&gt;",
			`<meter min="0" max="1" value="0.87">`, "0.31", "$0.43", "exit 0",
			`<td>passed</td><td class="evidence-short">—</td><td>$0.31</td>`, // the comparison's tests, evidence and cost columns
			`class="resolution">merge of ` + b.Name,
			"<li>holdout: failed</li>", "<li>red flag: test literals in calc.py (&lt;script&gt;", // the evidence
			"<li>regression: passed</li>", "<li>own tests: prove nothing (calc_test.py pass on the fork point already)</li>",
			"<li>fails the valid tests of " + b.Name + "</li>", "<li>check go vet ./...: failed</li>",
			`id="fr-holdout-` + a.ID + `"`, "want 6 got 5 &lt;script&gt;", `id="fr-check-0-` + a.ID + `"`, "vet: bad", // each evidence command's output
			`id="fr-forkpoint-` + a.ID + `"`, `id="fr-regression-` + a.ID + `"`,
			`class="evidence-short">holdout failed, regression passed, checks 0/1 passed, own tests prove nothing, fails 1 rival&#39;s tests, 1 red flag(s)</td>`, // in the comparison
			`class="muted raw-confidence">(raw 0.70)`, `class="cannot-tell">cannot tell: Cannot tell &lt;script&gt;`,
			"stopped early: " + b.Name + " cleared confidence 0.87; stopped c-3 &lt;script&gt;", "saved about $0.2600 and 12.0s", // --stop-when-confident
		} {
			if !strings.Contains(body, w) {
				t.Errorf("no %q in the page", w)
			}
		}
		if strings.Contains(body, "data-ticking") || strings.Contains(body, `data-running`) {
			t.Error("a finished fork-run still ticks")
		}
	})
	t.Run("Unreadable", func(t *testing.T) {
		writeFile(t, f.e.Layout().Group(f.src.Workspace.ID, g).Report(), "{not json")
		code, body := get(t, h, "/ui/groups/"+g, nil)
		if code != 200 || !strings.Contains(body, "report.json") || !strings.Contains(body, `class="error"`) {
			t.Errorf("an unreadable report = %d, want the page with the error:\n%s", code, body)
		}
	})
	if code, _ := get(t, h, "/ui/groups/gnothere/forkrun", nil); code != 404 {
		t.Errorf("the fork-run of an unknown group = %d, want 404", code)
	}
}

func TestSeconds(t *testing.T) {
	for in, want := range map[float64]string{-1: "0s", 0: "0s", 59.9: "59s", 60: "1m00s", 187: "3m07s", 3600: "1h00m", 3900: "1h05m"} {
		if got := seconds(in); got != want {
			t.Errorf("seconds(%v) = %q, want %q", in, got, want)
		}
	}
}
