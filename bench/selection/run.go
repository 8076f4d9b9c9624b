package selection

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/tinehq/tine/forkrun"
)

// Runner runs tasks through a tine binary.
type Runner struct {
	Tine string   // the tine binary
	Home string   // TINE_HOME
	Dir  string   // where tasks are written
	Env  []string // the environment of tine (TINE_HOME is added)
	// Keep leaves the workspaces under tine (Repo names them) instead of
	// releasing them after each fork-run.
	Keep bool
}

// Repo is where the repository of task t is put under tine.
func (r *Runner) Repo(t Task) string { return filepath.Join(r.Dir, t.Name, t.Name) }

// Outcome is one task and the report of its fork-run.
type Outcome struct {
	Task   Task
	Report *forkrun.Report
}

// Run writes task t, puts it under tine, runs fork-run with one fork per
// candidate (a command agent applying it), the visible test, the suite as
// the regression command and the holdout, in manual mode, and returns the
// report. The workspace is released afterwards.
func (r *Runner) Run(ctx context.Context, t Task) (*Outcome, error) {
	dir := filepath.Join(r.Dir, t.Name)
	if err := t.Write(dir); err != nil {
		return nil, err
	}
	repo := r.Repo(t)
	if _, err := r.tine(ctx, "init", repo); err != nil {
		return nil, err
	}
	if !r.Keep {
		defer r.tine(context.WithoutCancel(ctx), "release", "--force", repo)
	}
	args := []string{"fork-run", t.Name + "/source", "--json", "--prompt", t.Prompt, "-n", strconv.Itoa(len(t.Cands)),
		"--agent-cmd", "sh " + filepath.Join(dir, "apply.sh") + " " + filepath.Join(dir, "cands"),
		"--test", t.Test, "--regression-test", t.Regression,
		"--holdout-dir", filepath.Join(dir, "holdout"), "--holdout-test", "HOLDOUT=$" + forkrun.HoldoutEnv + "; " + t.HoldoutCmd,
		"--merge-mode", "manual", "--budget", "0"}
	for _, c := range t.Cands {
		args = append(args, "--approach", c.Approach)
	}
	out, err := r.tine(ctx, args...)
	var rep forkrun.Report
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		return nil, fmt.Errorf("%s: fork-run: %v: %v", t.Name, err, jerr)
	}
	return &Outcome{Task: t, Report: &rep}, nil
}

// tine runs the binary and returns its standard output; the error says
// the exit status and the standard error.
func (r *Runner) tine(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, r.Tine, args...)
	cmd.Env = append(append(os.Environ(), r.Env...), "TINE_HOME="+r.Home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("tine %s: %w: %s", args[0], err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}
