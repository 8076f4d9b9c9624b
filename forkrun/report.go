package forkrun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/budget"
	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/judge"
	"github.com/tinehq/tine/layout"
)

// State is where one fork of a fork-run stands.
type State string

// The states of a fork. Only Finished forks are judged.
const (
	Pending      State = "pending"       // waiting for a slot (--parallel)
	Running      State = "running"       // the agent runs
	Testing      State = "testing"       // the agent ended; the test command runs
	Finished     State = "finished"      // the agent exited 0 with a result that is not an error, and tests ran
	Failed       State = "failed"        // the agent could not be started, exited non-zero, reported an error or no result
	BudgetKilled State = "budget_killed" // stopped for crossing a budget cap
	TimedOut     State = "timed_out"     // stopped at the agent timeout
	Canceled     State = "canceled"      // stopped because the fork-run was interrupted
	StoppedEarly State = "stopped_early" // stopped by --stop-when-confident once another fork sufficed; changes kept
)

// Judgeable reports whether a fork in state s may be judged.
func (s State) Judgeable() bool { return s == Finished }

// Terminal reports whether s is final.
func (s State) Terminal() bool {
	return s != Pending && s != Running && s != Testing
}

// Test is a test command's outcome in one fork.
type Test struct {
	Command  string  `json:"command"`
	Exit     int     `json:"exit"`
	Passed   bool    `json:"passed"`
	TimedOut bool    `json:"timed_out,omitempty"`
	Seconds  float64 `json:"seconds"`
	Output   string  `json:"output"` // tail of stdout and stderr
}

// Fork is one fork of a fork-run and its evidence.
type Fork struct {
	Index    int    `json:"index"`
	Run      string `json:"run"`  // id
	Name     string `json:"name"` // e.g. app-2
	Approach string `json:"approach"`
	Account  string `json:"account,omitempty"`
	State    State  `json:"state"`
	// Reason says why a fork failed or was stopped.
	Reason string `json:"reason,omitempty"`
	// Agent is the agent's evidence: output tail, tool calls, commands,
	// tokens, cost, exit status, wall time. AgentLog is the full output.
	Agent       agent.Snapshot `json:"agent"`
	AgentStderr string         `json:"agent_stderr,omitempty"` // tail
	AgentLog    string         `json:"agent_log,omitempty"`
	Test        *Test          `json:"test,omitempty"`
	// What the fork changed, and whether its merge into the source is clean.
	FilesChanged int      `json:"files_changed"`
	LinesAdded   int      `json:"lines_added"`
	LinesDeleted int      `json:"lines_deleted"`
	MergeClean   bool     `json:"merge_clean"`
	Conflicts    []string `json:"conflicts,omitempty"`
	// CostUSD is what the budget pool counted for the fork.
	CostUSD    float64   `json:"cost_usd"`
	StartedAt  time.Time `json:"started_at,omitzero"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	// Ready: finished, the agent did its work (no permission denied), it
	// changed something, tests passed (or none configured) and a clean
	// merge. NotReady says why not.
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
	// Evidence is what the checks after the agents learned about the
	// fork: its tests' validity, cross-tests, holdout and regression
	// commands, red flags of its diff. Nil until then.
	Evidence *evidence.Fork `json:"evidence,omitempty"`
	// Screen, for a fork whose display was up when its agent and tests had
	// finished, is its final screen: a PNG in the group's directory, at
	// this path relative to it (ScreenFile).
	Screen string `json:"screen,omitempty"`
}

// ScreenFile is where, relative to its group's directory, a fork-run keeps
// the final screen of fork run (an id).
func ScreenFile(run string) string { return filepath.Join("screens", run+".png") }

// Elapsed is how long the fork has run so far (or ran).
func (f *Fork) Elapsed(now time.Time) time.Duration {
	switch {
	case f.StartedAt.IsZero():
		return 0
	case f.FinishedAt.IsZero():
		return now.Sub(f.StartedAt)
	}
	return f.FinishedAt.Sub(f.StartedAt)
}

// The outcomes of a fork-run.
const (
	OutcomeRunning        = "running"
	OutcomeMerged         = "merged"          // the winner was merged, the rest discarded
	OutcomeAwaitingChoice = "awaiting_choice" // a winner is recommended; tine choose resolves
	OutcomeReported       = "reported"        // manual mode: nothing resolved
	OutcomeConflict       = "conflict"        // the winner's merge had conflicts; nothing written
	OutcomeNoWinner       = "no_winner"       // nothing judgeable, or no winner cleared the threshold in auto/vote
	OutcomeFailed         = "failed"          // the fork-run itself failed
	OutcomeCanceled       = "canceled"        // interrupted; nothing judged or resolved
	OutcomeAbandoned      = "abandoned"       // the process running it died before it ended
	// OutcomeResolved: after the fork-run ended without resolving the
	// group, a person (tine choose, the dashboard) resolved it.
	OutcomeResolved = "resolved"
)

// Report is everything a fork-run learned; it is stored as report.json in
// the group's directory and printed by --json.
type Report struct {
	// Head is the report's version, first in the file (grouprec.Head).
	grouprec.Head
	Workspace string    `json:"workspace"`
	Group     string    `json:"group"`
	Source    string    `json:"source"`    // the forked run, by name
	SourceID  string    `json:"source_id"` // and id
	Prompt    string    `json:"prompt"`
	Agent     string    `json:"agent"` // claude, codex or command
	Mode      MergeMode `json:"merge_mode"`
	JudgeKind string    `json:"judge"`
	Threshold float64   `json:"confidence_threshold"`
	TestCmd   string    `json:"test_command,omitempty"`
	Notes     []string  `json:"notes,omitempty"` // e.g. N reduced to the number of accounts
	// Withheld names the variables of the caller's environment that the
	// forks' agents do not get: secrets by [secrets] and tine's defaults,
	// less what the agent authenticates with (agent.Credentials).
	Withheld []string `json:"withheld,omitempty"`
	// Conversation is the agent session the forks continued; nil when they
	// started new conversations.
	Conversation *Conversation   `json:"conversation,omitempty"`
	Forks        []*Fork         `json:"forks"`
	Budget       budget.Spending `json:"budget"`
	Verdict      *judge.Verdict  `json:"verdict,omitempty"`
	// EarlyStop is what --stop-when-confident stopped and saved; nil when
	// it stopped nothing.
	EarlyStop  *EarlyStop `json:"early_stop,omitempty"`
	JudgeError string     `json:"judge_error,omitempty"`
	Outcome    string     `json:"outcome"`
	// OutcomeDetail says what happened in a sentence; Winner is the
	// recommended or merged fork's name; Conflicts lists conflicting paths.
	OutcomeDetail string `json:"outcome_detail,omitempty"`
	// Error is the error the fork-run ended with ("" when none): what
	// tine fork-run prints and exits non-zero with. ErrorCode is its
	// kind (package errcode's code), so a client of the daemon exits
	// with the same status.
	Error      string    `json:"error,omitempty"`
	ErrorCode  string    `json:"error_code,omitempty"`
	Winner     string    `json:"winner,omitempty"`
	Conflicts  []string  `json:"conflicts,omitempty"`
	Discarded  []string  `json:"discarded,omitempty"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Seconds    float64   `json:"seconds"`
	// Owner is the process running the fork-run (the CLI or the daemon),
	// so that a reader can tell a fork-run still under way from one whose
	// process died.
	Owner *Owner `json:"owner,omitempty"`
	// Resolution is how the group was resolved once the fork-run ended (a
	// person's tine choose, or auto mode's merge); nil while unresolved.
	Resolution *grouprec.Resolution `json:"resolution,omitempty"`
}

// Owner identifies a process incarnation: its pid and start time.
type Owner struct {
	Pid       int    `json:"pid"`
	StartTime string `json:"start_time"`
}

// self is the process running this fork-run.
func self() *Owner {
	st, err := procfs.Read("", os.Getpid())
	if err != nil {
		return nil
	}
	return &Owner{Pid: st.Pid, StartTime: st.StartTime}
}

// alive reports whether o's process still runs (as the same incarnation).
func (o *Owner) alive() bool {
	st, err := procfs.Read("", o.Pid)
	return err == nil && st.StartTime == o.StartTime && st.State != 'Z'
}

// Fork returns the fork with run id or name ref; nil when there is none
// (or r is nil).
func (r *Report) Fork(ref string) *Fork {
	if r == nil {
		return nil
	}
	for _, f := range r.Forks {
		if f.Run == ref || f.Name == ref {
			return f
		}
	}
	return nil
}

// TotalUSD is what all forks spent.
func (r *Report) TotalUSD() float64 { return r.Budget.TotalUSD }

// clone returns a deep enough copy for a reader that must not race the
// writer: forks are copied.
func (r *Report) clone() *Report {
	c := *r
	c.Forks = make([]*Fork, len(r.Forks))
	for i, f := range r.Forks {
		cf := *f
		c.Forks[i] = &cf
	}
	c.Notes = append([]string(nil), r.Notes...)
	c.Withheld = append([]string(nil), r.Withheld...)
	return &c
}

// Summary is the short form of a report kept in history.jsonl.
type Summary struct {
	Group      string        `json:"group"`
	Source     string        `json:"source"`
	Prompt     string        `json:"prompt"`
	Agent      string        `json:"agent"`
	Mode       string        `json:"merge_mode"`
	Judge      string        `json:"judge"`
	Winner     string        `json:"winner,omitempty"`
	Confidence float64       `json:"confidence"`
	Outcome    string        `json:"outcome"`
	TotalUSD   float64       `json:"total_usd"`
	Seconds    float64       `json:"seconds"`
	Forks      []SummaryFork `json:"forks"`
}

// SummaryFork is one fork's line in a Summary.
type SummaryFork struct {
	Name     string  `json:"name"`
	Approach string  `json:"approach"`
	State    State   `json:"state"`
	Tests    string  `json:"tests"` // passed, failed, timed_out or none
	CostUSD  float64 `json:"cost_usd"`
	Score    float64 `json:"score"`
}

// Summary returns the short form of r.
func (r *Report) Summary() Summary {
	s := Summary{Group: r.Group, Source: r.Source, Prompt: clip(r.Prompt, 500), Agent: r.Agent, Mode: string(r.Mode),
		Judge: r.JudgeKind, Winner: r.Winner, Outcome: r.Outcome, TotalUSD: r.TotalUSD(), Seconds: r.Seconds}
	if r.Verdict != nil {
		s.Confidence = r.Verdict.Confidence
	}
	for _, f := range r.Forks {
		sf := SummaryFork{Name: f.Name, Approach: f.Approach, State: f.State, Tests: TestWord(f.Test), CostUSD: f.CostUSD}
		if r.Verdict != nil {
			sf.Score = r.Verdict.Scores[f.Run]
		}
		s.Forks = append(s.Forks, sf)
	}
	return s
}

// TestWord is "passed", "failed", "timed_out" or "none".
func TestWord(t *Test) string {
	switch {
	case t == nil:
		return "none"
	case t.TimedOut:
		return "timed_out"
	case t.Passed:
		return "passed"
	}
	return "failed"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// save writes a copy of the report and its summary into the group's
// directory g (see grouprec.Group.SaveReport): the copy takes the next
// version, r is left as it is for whoever reads it meanwhile.
func (r *Report) save(g layout.Group) error {
	c := r.clone()
	return grouprec.Open(g).SaveReport(c, c.Summary())
}

// Load reads the stored report of group ref (an id, or a run of it).
func Load(e StateDir, ws, group string) (*Report, error) {
	rec := grouprec.Open(e.Layout().Group(ws, group))
	var r Report
	err := rec.LoadReport(&r)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("group %s has no fork-run report (it was forked by tine fork, not tine fork-run): %w", group, tine.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	if r.Outcome == OutcomeRunning && r.Owner != nil && !r.Owner.alive() {
		r.Outcome = OutcomeAbandoned
		r.OutcomeDetail = fmt.Sprintf("the process running it (pid %d) ended before the fork-run did; the forks are kept: inspect them with tine summary, resolve them with tine choose or tine discard", r.Owner.Pid)
		for _, f := range r.Forks {
			if !f.State.Terminal() {
				f.State, f.Reason = Canceled, "the fork-run's process ended"
			}
		}
	}
	if h := rec.Resolution(); h != nil {
		r.Resolution = h
		if r.Outcome != OutcomeMerged && r.Outcome != OutcomeRunning {
			r.Outcome, r.OutcomeDetail = OutcomeResolved, resolvedDetail(h)
		}
	}
	return &r, nil
}

// LoadSummary reads the short form of group's report, with the group's
// resolution applied as Load does; for listings.
func LoadSummary(e StateDir, ws, group string) (*Summary, error) {
	rec := grouprec.Open(e.Layout().Group(ws, group))
	var s Summary
	if err := rec.LoadSummary(&s); err != nil {
		return nil, err
	}
	if s.Outcome == OutcomeRunning { // still under way, or abandoned?
		if r, err := Load(e, ws, group); err == nil {
			s.Outcome = r.Outcome
		}
	}
	if h := rec.Resolution(); h != nil && s.Outcome != OutcomeMerged && s.Outcome != OutcomeRunning {
		s.Outcome = OutcomeResolved
	}
	return &s, nil
}

// resolvedDetail says how a person resolved the group.
func resolvedDetail(h *grouprec.Resolution) string {
	what := "the forks were discarded"
	if h.Chosen != "" {
		what = h.Chosen + " was " + map[string]string{"merge": "merged into ", "promote": "promoted over "}[h.Action] + h.Parent
	}
	return fmt.Sprintf("resolved by a person at %s: %s", h.Time.Format("2006-01-02 15:04:05"), what)
}

// Spend is what a fork-run's forks spent, as its budget pool counted it:
// what tine cost and the MCP tool cost show.
type Spend struct {
	Group           string      `json:"group"`
	Outcome         string      `json:"outcome"`
	Forks           []ForkSpend `json:"forks"`
	TotalUSD        float64     `json:"total_usd"`
	PerForkCapUSD   float64     `json:"per_fork_cap_usd"`  // 0: no cap
	AggregateCapUSD float64     `json:"aggregate_cap_usd"` // 0: no cap
}

// ForkSpend is one fork's line in a Spend.
type ForkSpend struct {
	Name    string  `json:"name"`
	Run     string  `json:"run"`
	State   State   `json:"state"`
	Account string  `json:"account,omitempty"`
	Tokens  int64   `json:"tokens"`
	USD     float64 `json:"usd"`
}

// Caps says the caps, as "per fork $5.00, all forks none".
func (s Spend) Caps() string {
	return "per fork " + capText(s.PerForkCapUSD) + ", all forks " + capText(s.AggregateCapUSD)
}

func capText(usd float64) string {
	if usd <= 0 {
		return "none"
	}
	return fmt.Sprintf("$%.2f", usd)
}

// Spend returns what r's forks spent.
func (r *Report) Spend() Spend {
	v := Spend{Group: r.Group, Outcome: r.Outcome, Forks: []ForkSpend{}, TotalUSD: r.TotalUSD(),
		PerForkCapUSD: r.Budget.PerForkCap, AggregateCapUSD: r.Budget.AggregateCap}
	for _, f := range r.Forks {
		v.Forks = append(v.Forks, ForkSpend{Name: f.Name, Run: f.Run, State: f.State, Account: f.Account,
			Tokens: f.Agent.Tokens.Total(), USD: f.CostUSD})
	}
	return v
}
