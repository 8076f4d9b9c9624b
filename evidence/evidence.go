package evidence

import (
	"fmt"
	"sort"
	"strings"
)

// Check is the outcome of one command run for evidence.
type Check struct {
	Command  string  `json:"command"`
	Exit     int     `json:"exit"`
	Passed   bool    `json:"passed"`
	TimedOut bool    `json:"timed_out,omitempty"`
	Seconds  float64 `json:"seconds"`
	Output   string  `json:"output,omitempty"` // tail
	// Error says why the command could not be run ("" when it ran).
	Error string `json:"error,omitempty"`
}

// Ran reports whether c is the outcome of a command that ran.
func (c *Check) Ran() bool { return c != nil && c.Error == "" }

// Word is "passed", "failed", "timed out", "not run" (nil) or "error".
func (c *Check) Word() string {
	switch {
	case c == nil:
		return "not run"
	case c.Error != "":
		return "error"
	case c.TimedOut:
		return "timed out"
	case c.Passed:
		return "passed"
	}
	return "failed"
}

// Validity is what a fork's own new or changed tests prove.
type Validity string

// The validities of a fork's tests.
const (
	// NoTests: the fork added or changed no test file.
	NoTests Validity = ""
	// Valid: with the fork's test files, the test command fails on the
	// fork point's code, so passing it on the fork says something.
	Valid Validity = "valid"
	// ProvesNothing: with the fork's test files, the test command passes
	// on the fork point's code already: the tests cannot tell the fork
	// from the code it started from.
	ProvesNothing Validity = "proves_nothing"
	// Unchecked: the check could not be run.
	Unchecked Validity = "unchecked"
)

// Fork is the evidence gathered for one fork of a fork-run.
type Fork struct {
	// TestFiles are the test files the fork added, changed or deleted.
	TestFiles []string `json:"test_files,omitempty"`
	// AtForkPoint is the test command run on the fork point's code with
	// the fork's test files; nil when the fork touched no test file.
	AtForkPoint *Check   `json:"at_fork_point,omitempty"`
	Validity    Validity `json:"validity,omitempty"`
	// CrossFailed names the rivals whose valid tests this fork fails;
	// CrossPassed those whose valid tests it passes.
	CrossFailed []string `json:"cross_failed,omitempty"`
	CrossPassed []string `json:"cross_passed,omitempty"`
	// Holdout and Regression are the holdout and regression commands'
	// outcomes in the fork; nil when none is configured.
	Holdout    *Check `json:"holdout,omitempty"`
	Regression *Check `json:"regression,omitempty"`
	// Checks are the declared checks' outcomes (build, lint, type-check).
	Checks []*Check `json:"checks,omitempty"`
	// Flags are the red flags of the fork's diff.
	Flags []Flag `json:"red_flags,omitempty"`
}

// ValidityOf says what a fork's tests prove, given the test files it
// touched and the test command's outcome on the fork point with them.
func ValidityOf(testFiles []string, atForkPoint *Check) Validity {
	switch {
	case len(testFiles) == 0:
		return NoTests
	case !atForkPoint.Ran() || atForkPoint.TimedOut:
		return Unchecked
	case atForkPoint.Passed:
		return ProvesNothing
	}
	return Valid
}

// FailedChecks are the declared checks of f that ran and failed.
func (f *Fork) FailedChecks() []*Check {
	var out []*Check
	for _, c := range f.Checks {
		if c.Ran() && !c.Passed {
			out = append(out, c)
		}
	}
	return out
}

// Severe counts the flags of f that suggest the fork games its tests.
func (f *Fork) Severe() int {
	n := 0
	for _, fl := range f.Flags {
		if fl.Kind.Severe() {
			n++
		}
	}
	return n
}

// Lines describes f for a person, one line per kind of evidence; empty
// when there is none.
func (f *Fork) Lines() []string {
	if f == nil {
		return nil
	}
	var out []string
	switch f.Validity {
	case Valid:
		out = append(out, fmt.Sprintf("own tests: valid (%s fail on the fork point)", joinMax(f.TestFiles)))
	case ProvesNothing:
		out = append(out, fmt.Sprintf("own tests: prove nothing (%s pass on the fork point already)", joinMax(f.TestFiles)))
	case Unchecked:
		out = append(out, "own tests: could not be checked on the fork point ("+f.AtForkPoint.Word()+")")
	}
	if len(f.CrossFailed) > 0 {
		out = append(out, "fails the valid tests of "+strings.Join(f.CrossFailed, ", "))
	}
	if len(f.CrossPassed) > 0 {
		out = append(out, "passes the valid tests of "+strings.Join(f.CrossPassed, ", "))
	}
	if f.Holdout != nil {
		out = append(out, "holdout: "+f.Holdout.Word())
	}
	if f.Regression != nil {
		out = append(out, "regression: "+f.Regression.Word())
	}
	for _, c := range f.Checks {
		out = append(out, "check "+c.Command+": "+c.Word())
	}
	for _, fl := range f.Flags {
		out = append(out, "red flag: "+fl.String())
	}
	return out
}

// Short describes f in a few words for a table: "holdout passed,
// regression failed, own tests valid, fails 1 rival's tests, 2 red
// flags"; "—" when there is nothing.
func (f *Fork) Short() string {
	if f == nil {
		return "—"
	}
	var parts []string
	if f.Holdout != nil {
		parts = append(parts, "holdout "+f.Holdout.Word())
	}
	if f.Regression != nil {
		parts = append(parts, "regression "+f.Regression.Word())
	}
	if len(f.Checks) > 0 {
		parts = append(parts, fmt.Sprintf("checks %d/%d passed", len(f.Checks)-len(f.FailedChecks()), len(f.Checks)))
	}
	switch f.Validity {
	case Valid:
		parts = append(parts, "own tests valid")
	case ProvesNothing:
		parts = append(parts, "own tests prove nothing")
	}
	if n := len(f.CrossFailed); n > 0 {
		parts = append(parts, fmt.Sprintf("fails %d rival's tests", n))
	}
	if n := len(f.Flags); n > 0 {
		parts = append(parts, fmt.Sprintf("%d red flag(s)", n))
	}
	if len(parts) == 0 {
		return "—"
	}
	return strings.Join(parts, ", ")
}

// joinMax joins at most three paths, saying how many more there are.
func joinMax(paths []string) string {
	if len(paths) <= 3 {
		return strings.Join(paths, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(paths[:3], ", "), len(paths)-3)
}

// CrossResult is one fork's code run with a rival's test files.
type CrossResult struct {
	Fork, Rival string // the fork whose code ran, the rival whose tests did
	Passed      bool
}

// Cross sorts the cross-test results into each fork's CrossFailed and
// CrossPassed, counting only rivals whose tests are valid (validity by
// fork); forks maps fork names to their evidence.
func Cross(forks map[string]*Fork, results []CrossResult) {
	for _, r := range results {
		f, rival := forks[r.Fork], forks[r.Rival]
		if f == nil || rival == nil || rival.Validity != Valid || r.Fork == r.Rival {
			continue
		}
		if r.Passed {
			f.CrossPassed = append(f.CrossPassed, r.Rival)
		} else {
			f.CrossFailed = append(f.CrossFailed, r.Rival)
		}
	}
	for _, f := range forks {
		sort.Strings(f.CrossFailed)
		sort.Strings(f.CrossPassed)
	}
}
