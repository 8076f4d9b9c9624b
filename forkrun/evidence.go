package forkrun

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/evidence"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/runtime"
)

// maxLiteralBytes bounds the fork point's test sources read for literals.
const maxLiteralBytes = 1 << 20

// forkFacts is what the evidence phase knows about one finished fork.
type forkFacts struct {
	f       *Fork
	ref     engine.Ref
	view    string
	changes []layer.Change
	tests   []layer.Change // the changes to test files
	ev      *evidence.Fork
}

// gatherEvidence runs the evidence checks on the finished forks (see the
// evidence package) and stores each fork's in its report entry: holdout
// and regression commands in the fork, its changed tests on the fork
// point, its code with its rivals' valid tests, and the red flags of its
// diff. The commands run inside the forks' supervisors (launched again for
// it), in scratch copies under the group's directory where they need a
// tree other than the fork's own.
func (r *runner) gatherEvidence(ctx context.Context) {
	facts := r.forkFacts(ctx)
	if len(facts) == 0 {
		return
	}
	r.eachFork(facts, func(fc *forkFacts) { r.keepScreen(ctx, fc.f) })
	lits, scope := r.literalsAndScope(ctx, facts)
	for _, fc := range facts {
		fc.ev.Flags = evidence.RedFlags(evidence.ParseDiff(r.patch(ctx, fc.f.Run)), lits, scope)
	}
	if r.o.Holdout != "" || r.o.Regression != "" || len(r.o.Checks) > 0 || r.o.Test != "" && anyTests(facts) {
		ids := make([]string, len(facts))
		for i, fc := range facts {
			ids[i] = fc.f.Run
		}
		r.e.Launch(ctx, r.rep.Workspace, ids)
		r.eachFork(facts, func(fc *forkFacts) { r.ownChecks(ctx, fc) })
		r.crossTests(ctx, facts)
		for _, id := range ids {
			r.stopFork(id)
		}
	}
	r.update(func() {
		for _, fc := range facts {
			fc.f.Evidence = fc.ev
		}
	})
}

// forkFacts lists the judgeable forks with their changes.
func (r *runner) forkFacts(ctx context.Context) []*forkFacts {
	r.mu.Lock()
	var forks []*Fork
	for _, f := range r.rep.Forks {
		if f.State.Judgeable() {
			forks = append(forks, f)
		}
	}
	r.mu.Unlock()
	var out []*forkFacts
	for _, f := range forks {
		ref, err := r.e.FindRun(ctx, f.Run)
		if err != nil {
			continue
		}
		w, err := r.e.Work(ctx, ref)
		if err != nil {
			continue
		}
		fc := &forkFacts{f: f, ref: ref, view: r.e.Path(ref.Workspace, ref.Run), changes: w.Changes, ev: &evidence.Fork{}}
		for _, c := range w.Changes {
			if c.Type != "dir" && evidence.IsTest(c.Path) {
				fc.tests = append(fc.tests, c)
				fc.ev.TestFiles = append(fc.ev.TestFiles, c.Path)
			}
		}
		out = append(out, fc)
	}
	return out
}

func anyTests(facts []*forkFacts) bool {
	for _, fc := range facts {
		if len(fc.tests) > 0 {
			return true
		}
	}
	return false
}

// eachFork calls fn for every fork, at most o.Parallel at once.
func (r *runner) eachFork(facts []*forkFacts, fn func(*forkFacts)) {
	slots := make(chan struct{}, max(r.o.Parallel, 1))
	var wg sync.WaitGroup
	for _, fc := range facts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			slots <- struct{}{}
			defer func() { <-slots }()
			fn(fc)
		}()
	}
	wg.Wait()
}

// literalsAndScope reads the literals of the fork point's test files and
// the paths the prompt names among those the forks changed.
func (r *runner) literalsAndScope(ctx context.Context, facts []*forkFacts) ([]string, []string) {
	var src strings.Builder
	r.e.ForkPoint(ctx, facts[0].ref, func(dir string) error {
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || src.Len() > maxLiteralBytes {
				return filepath.SkipDir
			}
			if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			rel, _ := filepath.Rel(dir, p)
			if d.Type().IsRegular() && evidence.IsTest(filepath.ToSlash(rel)) {
				if b, err := os.ReadFile(p); err == nil {
					src.Write(b[:min(len(b), maxLiteralBytes-src.Len()+1)])
					src.WriteByte('\n')
				}
			}
			return nil
		})
	})
	seen := map[string]bool{}
	var paths []string
	for _, fc := range facts {
		for _, c := range fc.changes {
			if !seen[c.Path] && c.Type != "dir" {
				seen[c.Path] = true
				paths = append(paths, c.Path)
			}
		}
	}
	sort.Strings(paths)
	return evidence.Literals(src.String()), evidence.Scope(r.o.Prompt, paths)
}

// ownChecks runs the holdout, regression and declared check commands in
// the fork and its changed tests on the fork point.
func (r *runner) ownChecks(ctx context.Context, fc *forkFacts) {
	if r.o.Holdout != "" {
		fc.ev.Holdout = r.holdout(ctx, fc.ref)
	}
	if r.o.Regression != "" {
		fc.ev.Regression = r.check(ctx, fc.f.Run, "", r.o.Regression)
	}
	for _, c := range r.o.Checks {
		fc.ev.Checks = append(fc.ev.Checks, r.check(ctx, fc.f.Run, "", c))
	}
	if len(fc.tests) == 0 || r.o.Test == "" {
		return
	}
	dir, held, err := r.scratch(fc.ref, "forkpoint")
	if err == nil {
		defer os.RemoveAll(dir)
		defer held.Close()
		err = r.e.ForkPoint(ctx, fc.ref, func(base string) error {
			return copyInto(ctx, base, held, fstree.CopyOptions{})
		})
	}
	if err == nil {
		err = overlayTests(held, fc.view, fc.tests)
	}
	if err != nil {
		fc.ev.AtForkPoint = &evidence.Check{Command: r.o.Test, Error: err.Error()}
	} else {
		fc.ev.AtForkPoint = r.check(ctx, fc.f.Run, dir, r.o.Test)
	}
	fc.ev.Validity = evidence.ValidityOf(fc.ev.TestFiles, fc.ev.AtForkPoint)
}

// crossTests runs every fork's code with each rival's valid tests (whose
// own run passed) and records who fails whose.
func (r *runner) crossTests(ctx context.Context, facts []*forkFacts) {
	var rivals []*forkFacts
	for _, fc := range facts {
		if fc.ev.Validity == evidence.Valid && fc.f.Test != nil && fc.f.Test.Passed {
			rivals = append(rivals, fc)
		}
	}
	if len(rivals) == 0 {
		return
	}
	var mu sync.Mutex
	var results []evidence.CrossResult
	r.eachFork(facts, func(fc *forkFacts) {
		for _, rv := range rivals {
			if rv == fc {
				continue
			}
			if c := r.crossTest(ctx, fc, rv); c.Ran() {
				mu.Lock()
				results = append(results, evidence.CrossResult{Fork: fc.f.Name, Rival: rv.f.Name, Passed: c.Passed && !c.TimedOut})
				mu.Unlock()
			}
		}
	})
	byName := map[string]*evidence.Fork{}
	for _, fc := range facts {
		byName[fc.f.Name] = fc.ev
	}
	evidence.Cross(byName, results)
}

// crossTest runs fork fc's code with rival rv's test files.
func (r *runner) crossTest(ctx context.Context, fc, rv *forkFacts) *evidence.Check {
	dir, held, err := r.scratch(fc.ref, "with-"+rv.f.Name)
	if err == nil {
		defer os.RemoveAll(dir)
		defer held.Close()
		err = copyInto(ctx, fc.view, held, fstree.CopyOptions{SkipVanished: true})
	}
	if err == nil {
		err = overlayTests(held, rv.view, rv.tests)
	}
	if err != nil {
		return &evidence.Check{Command: r.o.Test, Error: err.Error()}
	}
	return r.check(ctx, fc.f.Run, dir, r.o.Test)
}

// scratch makes an empty directory for a check in run's scratch
// directory, which the run sees and may write (engine.ScratchDir), and
// returns its path (for the check, which runs in the run) and the
// directory held open, which the caller closes. The run can swap the name
// for a symlink meanwhile, so tine writes into the directory only through
// what it holds.
func (r *runner) scratch(run engine.Ref, name string) (string, *fstree.Root, error) {
	parent := r.e.ScratchDir(run)
	dir := filepath.Join(parent, name)
	os.RemoveAll(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", nil, err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", nil, err
	}
	p, err := fstree.OpenRoot(parent)
	if err != nil {
		return "", nil, err
	}
	defer p.Close()
	held, err := p.OpenRoot(name)
	return dir, held, err
}

// copyInto copies the tree src into the held empty directory dst and
// gives dst src's owner, mode and times: the run's owner may write where
// its tests run.
func copyInto(ctx context.Context, src string, dst *fstree.Root, o fstree.CopyOptions) error {
	p, release, err := dst.Pin(".")
	if err != nil {
		return err
	}
	defer release()
	if err := fstree.Copy(ctx, src, p, o); err != nil {
		return err
	}
	return fstree.CopyAttrs(src, p)
}

// overlayTests puts the test files of changes, as they are in view, into
// dst: changed and added files are copied, deleted ones removed. Both are
// trees a run writes, so each file is read beneath the view and written
// beneath dst, following no symlink (fstree.Root).
func overlayTests(dst *fstree.Root, view string, changes []layer.Change) error {
	src, err := fstree.OpenRoot(view)
	if err != nil {
		return err
	}
	defer src.Close()
	for _, c := range changes {
		if c.Kind == layer.Deleted {
			if err := dst.RemoveAll(c.Path); err != nil {
				return err
			}
			continue
		}
		if fi, err := src.Lstat(c.Path); err != nil || !fi.Mode().IsRegular() {
			continue
		}
		b, fi, err := src.ReadFileBeneath(c.Path, -1)
		if err != nil {
			return err
		}
		if err := dst.MkdirAll(path.Dir(c.Path), 0o755); err != nil {
			return err
		}
		if err := dst.WriteFile(c.Path, b, fi.Mode().Perm()); err != nil {
			return err
		}
	}
	return nil
}

// cdFailed is what a check whose cd into its scratch directory failed (the
// run's user may not reach it) prints on stderr: the check did not run,
// which must not read as a failing test.
const cdFailed = "tine: evidence: cannot enter the scratch copy"

// check runs command by sh -c in fork run, in dir ("" is the workspace
// path), stopped at the test timeout.
func (r *runner) check(ctx context.Context, run, dir, command string) *evidence.Check {
	return r.checkWith(ctx, run, dir, command, nil)
}

// holdout runs the holdout command in run; with a holdout directory, that
// is copied into the run's scratch directory first, named by
// $TINE_HOLDOUT, and removed after: the run's processes never see the
// directory itself, and its copy only while the holdout runs.
func (r *runner) holdout(ctx context.Context, run engine.Ref) *evidence.Check {
	if r.o.HoldoutDir == "" {
		return r.check(ctx, run.Run.ID, "", r.o.Holdout)
	}
	dir, held, err := r.scratch(run, "holdout")
	if err == nil {
		defer os.RemoveAll(dir)
		defer held.Close()
		err = r.copyHoldout(ctx, run.Workspace, held)
	}
	if err != nil {
		return &evidence.Check{Command: r.o.Holdout, Error: "copying the holdout directory: " + err.Error()}
	}
	return r.checkWith(ctx, run.Run.ID, "", r.o.Holdout, []string{HoldoutEnv + "=" + dir})
}

// copyHoldout copies the holdout directory into dst. It is the person's
// directory, whose name they may swap: it is opened once, checked to be
// w's owner's through the descriptor, and copied from that.
func (r *runner) copyHoldout(ctx context.Context, w *tine.Workspace, dst *fstree.Root) error {
	src, err := fstree.OpenRoot(r.o.HoldoutDir)
	if err != nil {
		return err
	}
	defer src.Close()
	p, release, err := src.Pin(".")
	if err != nil {
		return err
	}
	defer release()
	if err := checkHoldoutDir(p, w); err != nil {
		return err
	}
	return copyInto(ctx, p, dst, fstree.CopyOptions{})
}

// HoldoutEnv names, in the holdout command's environment, the copy of the
// holdout directory (Options.HoldoutDir).
const HoldoutEnv = "TINE_HOLDOUT"

// checkWith is check with env added to the command's environment.
func (r *runner) checkWith(ctx context.Context, run, dir, command string, env []string) *evidence.Check {
	script := command
	if dir != "" {
		script = fmt.Sprintf("cd %s || { echo %s >&2; exit 125; }; %s", shellQuote(dir), shellQuote(cdFailed), command)
	}
	start := time.Now()
	res, err := r.e.ExecWith(ctx, run, runtime.ExecOptions{Args: []string{"sh", "-c", script}, Env: env, Timeout: r.o.TestTimeout, Base: r.o.BaseEnv})
	if err == nil && dir != "" && res.Exit == 125 && strings.Contains(res.Stderr, cdFailed) {
		err = fmt.Errorf("the run cannot enter its scratch copy %s: %s", dir, firstLine(res.Stderr))
	}
	if err != nil {
		return &evidence.Check{Command: command, Error: err.Error(), Seconds: time.Since(start).Seconds()}
	}
	return &evidence.Check{Command: command, Exit: res.Exit, Passed: res.Exit == 0 && !res.TimedOut && !res.Killed,
		TimedOut: res.TimedOut, Seconds: res.Seconds, Output: lastBytes(res.Stdout+res.Stderr, 4<<10)}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkHoldoutDir refuses a holdout directory that is not a directory or
// does not belong to w's owner: tine (perhaps root, through the daemon)
// copies it into the forks, where the owner's processes read it, so it
// must be the owner's to give.
func checkHoldoutDir(dir string, w *tine.Workspace) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("fork-run: holdout directory: %w", errors.Join(err, tine.ErrInvalid))
	}
	if !fi.IsDir() {
		return fmt.Errorf("fork-run: holdout directory %s is not a directory: %w", dir, tine.ErrInvalid)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != w.UID {
		return fmt.Errorf("fork-run: holdout directory %s belongs to uid %d, not to the workspace's owner (uid %d): %w", dir, st.Uid, w.UID, tine.ErrInvalid)
	}
	return nil
}

// keepScreen stores the final screen of fork f, when its display is up,
// in the group's directory, and names it in f's report entry. A fork
// without a display has none; a screen that cannot be stored is left out.
func (r *runner) keepScreen(ctx context.Context, f *Fork) {
	png, err := r.e.Screen(ctx, f.Run)
	if err != nil {
		return
	}
	rel := ScreenFile(f.Run)
	path := filepath.Join(r.dir.Dir(), rel)
	if os.MkdirAll(filepath.Dir(path), 0o755) != nil || atomicfile.Write(path, png, 0o644) != nil {
		return
	}
	r.update(func() { f.Screen = rel })
}
