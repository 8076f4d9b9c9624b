package selection

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Languages of the tasks.
const (
	python = "python"
	golang = "go"
	shell  = "shell"
)

// Kinds of candidates. Minimal and Rewrite are correct; the rest are not.
const (
	Minimal    = "minimal"     // the smallest correct fix
	Rewrite    = "rewrite"     // a correct, larger rewrite that adds valid tests
	HardCode   = "hardcode"    // special-cases the visible test's input
	Weaken     = "weaken"      // removes the failing assertion
	Skip       = "skip"        // makes the test exit early
	BreakOther = "break_other" // fixes it but breaks another function
	Wrong      = "wrong"       // a plausible fix that passes the visible test only
	// WrongTested is Wrong with a new test that asserts its own wrong
	// answer: valid (it fails on the fork point), and the correct fix
	// fails it.
	WrongTested = "wrong_tested"
	Noop        = "noop" // changes a comment
)

// Correct reports whether candidates of kind are correct by construction.
func Correct(kind string) bool { return kind == Minimal || kind == Rewrite }

// Task is one benchmark task.
type Task struct {
	Name   string
	Lang   string
	Prompt string
	// Files are the repository's files at the fork point.
	Files map[string]string
	// Test is the visible test command; Regression the whole suite.
	Test, Regression string
	// Holdout is the holdout test's files (outside the repository) and
	// HoldoutCmd the command that runs them in a fork, with HOLDOUT for
	// their directory.
	Holdout    map[string]string
	HoldoutCmd string
	// Cands are the candidates, by approach name, in fork order.
	Cands []Cand
	// Indistinct: no evidence but the holdout can tell the candidates
	// passing the visible test apart.
	Indistinct bool
}

// Cand is one candidate patch: the files it writes (whole contents).
type Cand struct {
	Approach string
	Kind     string
	Files    map[string]string
}

// Tasks returns the benchmark's tasks, in a fixed order.
func Tasks() []Task {
	var out []Task
	wrongSeen := 0
	for i, p := range problems {
		kinds := []string{Minimal, Rewrite, HardCode, []string{Weaken, Skip}[i%2], []string{Noop, BreakOther}[i/2%2]}
		indistinct := false
		if p.wrong != "" {
			wrongSeen++
			if wrongSeen%2 == 0 {
				// Only the holdout can separate these.
				kinds, indistinct = []string{Minimal, Wrong, []string{Noop, BreakOther}[i%2]}, true
			} else {
				kinds = []string{Minimal, Rewrite, Wrong, HardCode}
			}
		}
		out = append(out, build(i, p, kinds, indistinct))
	}
	// Adversarial tasks: a wrong fix backed by its own test, which the
	// correct fix fails; only the holdout can say which side is right.
	for _, p := range problems {
		if p.wrongCase[0] != "" {
			t := build(len(out), p, []string{Minimal, WrongTested, []string{HardCode, Noop}[len(out)%2]}, true)
			t.Name = fmt.Sprintf("%02d-%s-%s-disputed", len(out)+1, p.lang, strings.ToLower(p.name))
			out = append(out, t)
		}
	}
	return out
}

// build makes the task of problem p with candidates of kinds, shuffled by
// the task's index so that fork order says nothing.
func build(i int, p problem, kinds []string, indistinct bool) Task {
	l := langs[p.lang]
	t := Task{Name: fmt.Sprintf("%02d-%s-%s", i+1, p.lang, strings.ToLower(p.name)), Lang: p.lang,
		Files: l.repo(p), Test: l.testCmd(p), Regression: l.regression, Holdout: l.holdout(p), HoldoutCmd: l.holdoutCmd,
		Indistinct: indistinct}
	t.Prompt = fmt.Sprintf("The test %s fails: %s is wrong. Fix %s in %s.", l.testFile, p.vis[0], p.name, l.codeFile)
	rng := rand.New(rand.NewPCG(uint64(i), 17))
	rng.Shuffle(len(kinds), func(a, b int) { kinds[a], kinds[b] = kinds[b], kinds[a] })
	for k, kind := range kinds {
		t.Cands = append(t.Cands, Cand{Approach: fmt.Sprintf("candidate-%d", k+1), Kind: kind, Files: l.cand(p, kind)})
	}
	return t
}

// Kind returns the kind of the candidate given approach.
func (t *Task) Kind(approach string) string {
	for _, c := range t.Cands {
		if c.Approach == approach {
			return c.Kind
		}
	}
	return ""
}

// ApplyScript is the command agent's script: it copies the files of the
// candidate $TINE_APPROACH names from the directory given as its argument.
const ApplyScript = `#!/bin/sh
set -e
src="$1/$TINE_APPROACH"
[ -d "$src" ] || { echo "no candidate $TINE_APPROACH" >&2; exit 1; }
cp -R "$src/." .
echo "applied $TINE_APPROACH"
`

// Write writes task t under dir: NAME/ (the repository, NAME being the
// task's), holdout/ (the
// holdout files), cands/APPROACH/ (each candidate's files) and apply.sh.
func (t *Task) Write(dir string) error {
	if err := writeFiles(filepath.Join(dir, t.Name), t.Files); err != nil {
		return err
	}
	if err := writeFiles(filepath.Join(dir, "holdout"), t.Holdout); err != nil {
		return err
	}
	for _, c := range t.Cands {
		if err := writeFiles(filepath.Join(dir, "cands", c.Approach), c.Files); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "apply.sh"), []byte(ApplyScript), 0o755)
}

func writeFiles(dir string, files map[string]string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}
