package selection

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestTasks_Shape(t *testing.T) {
	tasks := Tasks()
	if len(tasks) < 30 {
		t.Errorf("%d tasks, want at least 30", len(tasks))
	}
	langs, names := map[string]int{}, map[string]bool{}
	indistinct := 0
	for _, task := range tasks {
		langs[task.Lang]++
		if names[task.Name] {
			t.Errorf("task %s twice", task.Name)
		}
		names[task.Name] = true
		if n := len(task.Cands); n < 3 || n > 5 {
			t.Errorf("%s: %d candidates, want 3 to 5", task.Name, n)
		}
		correct := 0
		for _, c := range task.Cands {
			if Correct(c.Kind) {
				correct++
			}
		}
		if correct == 0 || correct == len(task.Cands) {
			t.Errorf("%s: %d of %d candidates correct, want some but not all", task.Name, correct, len(task.Cands))
		}
		if task.Indistinct {
			indistinct++
		}
		if strings.Contains(task.Prompt, "holdout") {
			t.Errorf("%s: the prompt mentions the holdout", task.Name)
		}
	}
	if len(langs) < 3 || indistinct == 0 {
		t.Errorf("languages %v, %d indistinct tasks; want 3 languages and some indistinct tasks", langs, indistinct)
	}
}

// TestTasks_Labels checks every candidate's known quality against the
// commands, outside tine: the visible test fails at the fork point, each
// candidate passes or fails the visible test, the suite and the holdout as
// its kind says. It runs python3, go and sh for every task (about a minute);
// -short skips it, -run TestTasks_Labels/NAME picks tasks.
func TestTasks_Labels(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every candidate's commands; without -short only")
	}
	for _, task := range Tasks() {
		t.Run(task.Name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := task.Write(dir); err != nil {
				t.Fatal(err)
			}
			base := filepath.Join(dir, task.Name)
			if sh(t, base, dir, task.Test) {
				t.Errorf("the visible test passes at the fork point")
			}
			for _, c := range task.Cands {
				ws := filepath.Join(dir, "ws-"+c.Approach)
				if err := exec.Command("cp", "-R", base, ws).Run(); err != nil {
					t.Fatal(err)
				}
				if err := writeFiles(ws, c.Files); err != nil {
					t.Fatal(err)
				}
				visible, suite, holdout := sh(t, ws, dir, task.Test), sh(t, ws, dir, task.Regression), sh(t, ws, dir, task.HoldoutCmd)
				wantVisible := c.Kind != Noop
				wantSuite := c.Kind != Noop && c.Kind != BreakOther
				if visible != wantVisible || holdout != Correct(c.Kind) || suite != wantSuite && c.Kind != Weaken && c.Kind != Skip {
					t.Errorf("%s (%s): visible %v suite %v holdout %v; want %v %v %v", c.Approach, c.Kind, visible, suite, holdout, wantVisible, wantSuite, Correct(c.Kind))
				}
			}
		})
	}
}

// sh runs script in dir with HOLDOUT set and reports whether it passed.
func sh(t *testing.T, dir, task, script string) bool {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOLDOUT="+filepath.Join(task, "holdout"))
	out, err := cmd.CombinedOutput()
	if err != nil && testing.Verbose() {
		t.Logf("%s in %s: %v\n%s", script, filepath.Base(dir), err, out)
	}
	return err == nil
}
