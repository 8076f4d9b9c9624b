package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/tinehq/tine/forkrun"
)

// forkRun is fork_run: a fork-run in the daemon when the input has a
// prompt, else a fork (running command in every fork, if given).
func (t *tools) forkRun(ctx context.Context, in ForkInput) (*answer, error) {
	if in.Prompt == "" {
		switch {
		case in.Agent != "" || in.AgentCmd != "" || in.Test != nil || in.TestTimeoutS != 0 || in.BudgetUSD != nil ||
			in.AggregateBudgetUSD != nil || in.MergeMode != "" || in.Judge != "" || in.Session != "" || in.Fresh:
			return nil, inputErr("agent, agent_cmd, test, budgets, merge_mode, judge, session and fresh belong to a fork-run: give prompt (the task) too")
		case in.Command == "":
			return nil, inputErr("fork_run runs something in every fork: give command (a shell command) or prompt (a task for an agent); fork only makes the forks")
		}
		return t.forkCommand(ctx, in)
	}
	req, err := forkRunRequest(in)
	if err != nil {
		return nil, err
	}
	run, err := t.runOrSelf(in.Run)
	if err != nil {
		return nil, err
	}
	req.Env = t.env
	st, err := t.api.ForkRun(ctx, run, req)
	if err != nil {
		return nil, unreachable(err)
	}
	if st.Queued {
		note := "Not started yet: " + st.Message + ". Then follow it with fork_run_report group=" + run + "."
		return &answer{Note: note, Data: map[string]any{"queued": true, "message": st.Message, "warnings": st.Warnings}}, nil
	}
	if st.Report == nil || st.Group == "" {
		return nil, fmt.Errorf("the daemon's answer to a fork-run has no group")
	}
	v := reportOf(st.Report)
	note := fmt.Sprintf("started a fork-run of %s in group %s: %d fork(s) (%s), agent %s, merge mode %s. It runs in the daemon; this call does not wait. "+
		"Follow it with fork_run_report group=%s (outcome %q until it ends) and cost group=%s; diff shows a fork's changes; cancel_fork_run group=%s stops it.",
		st.Report.Source, st.Group, len(v.Forks), forkNames(v.Forks), st.Report.Agent, st.Report.Mode, st.Group, forkrun.OutcomeRunning, st.Group, st.Group)
	if len(st.Warnings) > 0 {
		note += " Warnings: " + strings.Join(st.Warnings, "; ") + "."
	}
	return &answer{Note: note, Data: map[string]any{"group": st.Group, "report": v, "warnings": st.Warnings}}, nil
}

// forkRunRequest is the fork-run in asks for; what it leaves out comes
// from the run's tine.toml.
func forkRunRequest(in ForkInput) (forkrun.Request, error) {
	switch {
	case in.Command != "":
		return forkrun.Request{}, inputErr("command does not go with prompt: a fork-run runs an agent (agent, or agent_cmd for a shell command) in every fork")
	case in.Name != "":
		return forkrun.Request{}, inputErr("name does not go with prompt: a fork-run's forks are named after the run")
	}
	req := forkrun.Request{Prompt: in.Prompt, Approaches: in.Approaches, Agent: in.Agent, AgentCmd: in.AgentCmd,
		Test: in.Test, BudgetUSD: in.BudgetUSD, AggregateUSD: in.AggregateBudgetUSD, MergeMode: in.MergeMode,
		Judge: in.Judge, Live: in.Live, Session: in.Session, Fresh: in.Fresh}
	// One fork per approach unless copies says otherwise (the daemon's
	// own default makes at least forkrun.DefaultN).
	switch {
	case in.Copies != 0:
		req.N = &in.Copies
	case len(in.Approaches) > 0:
		req.N = ptr(len(in.Approaches))
	}
	if in.TimeoutS != 0 {
		req.AgentTimeoutS = &in.TimeoutS
	}
	if in.TestTimeoutS != 0 {
		req.TestTimeoutS = &in.TestTimeoutS
	}
	return req, nil
}

// reportView is a fork-run's report as fork_run_report shows it: what an
// agent needs to decide, without the agents' output.
type reportView struct {
	Group         string          `json:"group"`
	Source        string          `json:"source"`
	Outcome       string          `json:"outcome"`
	OutcomeDetail string          `json:"outcome_detail,omitempty"`
	Winner        string          `json:"winner,omitempty"`
	Verdict       *verdictView    `json:"verdict,omitempty"`
	JudgeError    string          `json:"judge_error,omitempty"`
	Conflicts     []string        `json:"conflicts,omitempty"`
	Notes         []string        `json:"notes,omitempty"`
	Forks         []forkRunView   `json:"forks"`
	TotalUSD      float64         `json:"total_usd"`
	Resolution    *resolutionView `json:"resolution,omitempty"`
}

// resolutionView is how the group was resolved, once it was.
type resolutionView struct {
	Action    string   `json:"action"` // merge, promote or discard
	Chosen    string   `json:"chosen,omitempty"`
	Discarded []string `json:"discarded"`
}

// verdictView is the judge's verdict without its per-fork scores (which
// are on the forks) and rounds.
type verdictView struct {
	Judge      string  `json:"judge"`
	Confidence float64 `json:"confidence"`
	Rationale  string  `json:"rationale"`
}

// forkRunView is one fork of a fork-run.
type forkRunView struct {
	Name         string        `json:"name"`
	Run          string        `json:"run"`
	Approach     string        `json:"approach,omitempty"`
	State        forkrun.State `json:"state"`
	Reason       string        `json:"reason,omitempty"`
	Tests        string        `json:"tests"` // passed, failed, timed_out or none
	FilesChanged int           `json:"files_changed"`
	LinesAdded   int           `json:"lines_added"`
	LinesDeleted int           `json:"lines_deleted"`
	CostUSD      float64       `json:"cost_usd"`
	Score        *float64      `json:"score,omitempty"` // the judge's, once it judged the fork
	Ready        bool          `json:"ready"`
}

func reportOf(rep *forkrun.Report) reportView {
	v := reportView{Group: rep.Group, Source: rep.Source, Outcome: rep.Outcome, OutcomeDetail: rep.OutcomeDetail,
		Winner: rep.Winner, JudgeError: rep.JudgeError, Conflicts: rep.Conflicts, Notes: rep.Notes,
		Forks: []forkRunView{}, TotalUSD: rep.TotalUSD()}
	if rep.Verdict != nil {
		v.Verdict = &verdictView{Judge: rep.Verdict.Judge, Confidence: rep.Verdict.Confidence, Rationale: rep.Verdict.Rationale}
	}
	if h := rep.Resolution; h != nil {
		v.Resolution = &resolutionView{Action: h.Action, Chosen: h.Chosen, Discarded: h.Discarded}
	}
	for _, f := range rep.Forks {
		fv := forkRunView{Name: f.Name, Run: f.Run, Approach: f.Approach, State: f.State, Reason: f.Reason,
			Tests: forkrun.TestWord(f.Test), FilesChanged: f.FilesChanged, LinesAdded: f.LinesAdded,
			LinesDeleted: f.LinesDeleted, CostUSD: f.CostUSD, Ready: f.Ready}
		if rep.Verdict != nil {
			if s, ok := rep.Verdict.Scores[f.Run]; ok {
				fv.Score = &s
			}
		}
		v.Forks = append(v.Forks, fv)
	}
	return v
}

// forkReport is GET /v1/groups/{group}/report.
func (t *tools) forkReport(ctx context.Context, group string) (*forkrun.Report, error) {
	if group == "" {
		return nil, inputErr("group is required")
	}
	rep, err := t.api.ForkRunReport(ctx, group)
	if err != nil {
		return nil, unreachable(err)
	}
	if rep.Group == "" {
		return nil, fmt.Errorf("the daemon's answer to a fork-run report names no group")
	}
	return rep, nil
}

func (t *tools) report(ctx context.Context, in GroupInput) (*answer, error) {
	rep, err := t.forkReport(ctx, in.Group)
	if err != nil {
		return nil, err
	}
	v := reportOf(rep)
	return &answer{Note: reportNote(v), Data: v}, nil
}

// reportNote says in a line or two where the fork-run stands and what to
// do next.
func reportNote(v reportView) string {
	if v.Outcome == forkrun.OutcomeRunning {
		done := 0
		for _, f := range v.Forks {
			if f.State.Terminal() {
				done++
			}
		}
		return fmt.Sprintf("fork-run %s is running: %d of %d fork(s) done, $%.4f spent. Call fork_run_report again later (cancel_fork_run stops it).", v.Group, done, len(v.Forks), v.TotalUSD)
	}
	note := fmt.Sprintf("fork-run %s: %s.", v.Group, v.Outcome)
	if v.OutcomeDetail != "" {
		note = fmt.Sprintf("fork-run %s: %s: %s.", v.Group, v.Outcome, strings.TrimSuffix(v.OutcomeDetail, "."))
	}
	if v.Resolution == nil && v.Winner != "" && (v.Outcome == forkrun.OutcomeAwaitingChoice || v.Outcome == forkrun.OutcomeReported) {
		note += fmt.Sprintf(" To keep %s: choose group=%s run=%s (from inside a run, a request a person approves).", v.Winner, v.Group, v.Winner)
	}
	return note
}

func forkNames(forks []forkRunView) string {
	names := make([]string, len(forks))
	for i, f := range forks {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
