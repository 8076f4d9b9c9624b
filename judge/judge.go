package judge

import (
	"context"
	"errors"
	"fmt"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/evidence"
)

// Sentinel errors of the judges. Test for them with errors.Is.
var (
	// ErrNoCandidates means there was no finished fork to judge.
	ErrNoCandidates = errors.New("no finished fork to judge")
	// ErrBadAnswer means a judge model's answer could not be used: the HTTP
	// call failed with an error status, or the answer was unparseable, named
	// an unknown candidate, or held a confidence or score outside [0, 1].
	ErrBadAnswer = errors.New("unusable answer from the judge model")
)

// Candidate is one finished fork's evidence, as the judge sees it.
type Candidate struct {
	Run          string  `json:"run"`            // run id (stable key)
	Name         string  `json:"name"`           // run name, e.g. "src-2"
	Approach     string  `json:"approach"`       // the approach the agent was given
	AgentExit    *int    `json:"agent_exit"`     // nil: unknown
	AgentResult  string  `json:"agent_result"`   // "success", "error" or "" from the agent's own final result
	Output       string  `json:"output"`         // tail of the agent's output
	Tested       bool    `json:"tested"`         // a test command ran
	TestsPassed  bool    `json:"tests_passed"`   // the test command exited 0
	TestTimedOut bool    `json:"test_timed_out"` // the test command was stopped at its timeout
	TestOutput   string  `json:"test_output"`    // tail of the test command's output
	FilesChanged int     `json:"files_changed"`
	LinesAdded   int     `json:"lines_added"`
	LinesDeleted int     `json:"lines_deleted"`
	Diff         string  `json:"-"`           // unified patch against the fork point
	MergeClean   bool    `json:"merge_clean"` // a merge dry-run into the source has no conflicts
	CostUSD      float64 `json:"cost_usd"`
	// NotReady says why the fork may not be merged as it stands ("" when
	// it may): its agent was denied tools, it changed nothing, its tests
	// failed, its merge conflicts. PermissionDenials counts the tool calls
	// its agent was denied.
	NotReady          string `json:"not_ready,omitempty"`
	PermissionDenials int    `json:"permission_denials,omitempty"`
	// Evidence is what fork-run learned about the fork beyond its own test
	// command: its tests' validity, cross-tests, holdout and regression
	// commands, red flags. Nil: none gathered.
	Evidence *evidence.Fork `json:"evidence,omitempty"`
}

// label returns the name to show for c: its Name, or its Run id.
func (c *Candidate) label() string {
	if c.Name != "" {
		return c.Name
	}
	return c.Run
}

// Verdict is a judge's decision; it is stored as JSON.
type Verdict struct {
	Judge  string `json:"judge"`  // "heuristic", "llm", "pairwise" or "vote"
	Winner string `json:"winner"` // run id of the winner; "" when there is none
	// Confidence, in [0, 1], is what the judge makes of the chance that
	// Winner is right; the heuristic's is calibrated (HeuristicCalibration)
	// from RawConfidence, its evidence's separation of the winner capped by
	// the winner's own evidence.
	Confidence    float64            `json:"confidence"`
	RawConfidence float64            `json:"raw_confidence,omitempty"`
	Scores        map[string]float64 `json:"scores"` // run id -> score in 0..1
	Rationale     string             `json:"rationale"`
	// CannotTell, when set, says that the evidence cannot separate the
	// leading candidates and what would (a holdout test, a regression
	// command); the confidence is then low.
	CannotTell string     `json:"cannot_tell,omitempty"`
	Rounds     []*Verdict `json:"rounds,omitempty"` // vote: each round's verdict; pairwise: each comparison's
	// Features, of the heuristic, are each candidate's goodness per
	// feature (run id -> values in the order of FeatureNames): what Learn
	// compares when a person chooses against the recommendation.
	Features map[string][]float64 `json:"features,omitempty"`
}

// Clears reports whether v names a winner with a confidence of at least
// threshold, that is whether the winner may be resolved automatically.
func (v *Verdict) Clears(threshold float64) bool {
	return v != nil && v.Winner != "" && v.Confidence >= threshold
}

// Judge picks a winner among candidates for the task. Every implementation
// returns ErrNoCandidates for an empty cands, and an error wrapping
// tine.ErrInvalid when a candidate has no run id or two share one. Vote
// calls one Judge from several goroutines at once, so implementations must
// be safe for concurrent use.
type Judge interface {
	Judge(ctx context.Context, task string, cands []Candidate) (*Verdict, error)
}

// checkCandidates returns ErrNoCandidates for an empty cands and an error
// for a missing or repeated run id, which would make Scores ambiguous.
func checkCandidates(cands []Candidate) error {
	if len(cands) == 0 {
		return ErrNoCandidates
	}
	seen := make(map[string]bool, len(cands))
	for i := range cands {
		run := cands[i].Run
		if run == "" {
			return fmt.Errorf("judge: candidate %d (%q) has no run id: %w", i, cands[i].Name, tine.ErrInvalid)
		}
		if seen[run] {
			return fmt.Errorf("judge: run %q is a candidate twice: %w", run, tine.ErrInvalid)
		}
		seen[run] = true
	}
	return nil
}
