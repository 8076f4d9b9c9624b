//go:build linux

package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
)

// The fault-injection suite of issue 18 for the operations on runs: fork,
// checkpoint, rollback, promote, discard, the seal by rename and the
// compaction past the depth limit, and merge through the engine. Each case
// makes a workspace with user files and a fork with changes, runs the
// operation in a re-executed test binary that SIGKILLs itself at fault
// point N (TINE_TEST_KILL_AT=op:N), then opens the engine as the next
// command would and checks that every live run shows exactly its files
// before or after the operation (as the store says), that the store and the
// directories agree, that tine doctor has nothing to repair, and that the
// operation retried succeeds. N counts up until the helper finishes.

// Environment of the helper process.
const (
	opHelperEnv  = "TINE_ENGINE_OP_FAULT"   // the operation
	opHomeEnv    = "TINE_ENGINE_OP_HOME"    // the state directory
	opArgEnv     = "TINE_ENGINE_OP_ARG"     // the run it applies to
	opArg2Env    = "TINE_ENGINE_OP_ARG2"    // rollback: the version
	opVariantEnv = "TINE_ENGINE_OP_VARIANT" // "move", "compact" or ""
	opMergeEnv   = "TINE_ENGINE_OP_MERGE"   // merge: "store:N" or "apply:MICROSECONDS"
)

// TestOpFaultHelperProcess is not a test: re-executed by the suite, it
// opens the engine (sweeping) and runs one operation, dying where
// TINE_TEST_KILL_AT (or, for merge, TINE_ENGINE_OP_MERGE) says.
func TestOpFaultHelperProcess(t *testing.T) {
	op := os.Getenv(opHelperEnv)
	if op == "" {
		t.Skip("helper process for the fault tests")
	}
	variant := os.Getenv(opVariantEnv)
	applyVariant(variant)
	ctx := context.Background()
	e, err := Open(ctx, os.Getenv(opHomeEnv), testOptions()...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		os.Exit(3)
	}
	shallowEngine(e, variant)
	if op == "merge" {
		killDuringMerge(t, e, os.Getenv(opMergeEnv))
	}
	err = runOp(ctx, e, op, os.Getenv(opArgEnv), os.Getenv(opArg2Env))
	e.Close()
	if err != nil {
		fmt.Fprintln(os.Stderr, op+":", err)
		os.Exit(4)
	}
	os.Exit(0)
}

// applyVariant sets the package's seal thresholds for a variant: "move"
// and "compact" seal every non-empty delta by renaming it.
func applyVariant(variant string) {
	if variant == "move" || variant == "compact" {
		moveMinBytes, moveMinFiles = 1, 1<<30
	}
}

// shallowEngine makes e compact overlay stacks past depth 3 ("compact").
func shallowEngine(e *Engine, variant string) {
	if variant == "compact" {
		shallow(&fixture{e: e})
	}
}

func runOp(ctx context.Context, e *Engine, op, arg, arg2 string) error {
	var err error
	switch op {
	case "fork":
		_, err = e.Fork(ctx, arg, ForkOptions{Copies: 2})
	case "checkpoint":
		_, err = e.Checkpoint(ctx, arg, "cp")
	case "preseal": // twice: the second prunes the first
		var r Ref
		if r, err = e.FindRun(ctx, arg); err == nil {
			if _, err = e.Preseal(ctx, r); err == nil {
				_, err = e.Preseal(ctx, r)
			}
		}
	case "rollback":
		_, err = e.Rollback(ctx, arg, arg2)
	case "promote":
		_, err = e.Promote(ctx, arg, false)
	case "discard":
		_, err = e.Discard(ctx, arg, true)
	case "merge":
		_, err = e.Merge(ctx, arg, MergeOptions{})
	default:
		err = fmt.Errorf("unknown op %q", op)
	}
	return err
}

// killStore SIGKILLs the process before (even N) or after (odd N) the
// N/2-th store update: engine.Merge has no fault points of its own.
type killStore struct {
	tine.Store
	at, n int
}

func (s *killStore) Update(ctx context.Context, fn func(tine.Tx) error) error {
	i := s.n
	s.n += 2
	if i == s.at {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	err := s.Store.Update(ctx, fn)
	if i+1 == s.at {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	return err
}

// killDuringMerge arms the helper's kill for a merge: "store:N" at a store
// update (killStore), "apply:US" US microseconds after the apply's journal
// appears.
func killDuringMerge(t *testing.T, e *Engine, spec string) {
	kind, v, _ := strings.Cut(spec, ":")
	n, _ := strconv.Atoi(v)
	switch kind {
	case "store":
		e.store = &killStore{Store: e.store, at: n}
	case "apply":
		var journals []string
		ws, _ := filepath.Glob(filepath.Join(e.home, "workspaces", "*", "runs", "*"))
		for _, d := range ws {
			journals = append(journals, filepath.Join(d, "merge.json"))
		}
		go func() {
			for {
				for _, j := range journals {
					if _, err := os.Lstat(j); err == nil {
						time.Sleep(time.Duration(n) * time.Microsecond)
						syscall.Kill(os.Getpid(), syscall.SIGKILL)
					}
				}
			}
		}()
	}
}

// opCase is one operation on one backend, as the suite runs it.
type opCase struct {
	op, backend, variant string
	// home gives the state directory and workspace path of one step.
	home func(t *testing.T) (string, string)
}

// opFixture is a workspace with user files in the source and a fork,
// source-1, with changes of every kind; the source changes after the fork
// too (except for promote and merge, which it would block or conflict).
type opFixture struct {
	*fixture
	arg, arg2 string
}

func (c opCase) setup(t *testing.T) *opFixture {
	t.Helper()
	home, path := c.home(t)
	applyVariant(c.variant)
	writeFiles(t, path, map[string]string{"src/one.txt": "one\n", "src/deep/two.txt": "two\n", "gone/x.txt": "x\n"})
	f := newFixtureAt(t, c.backend, home, path)
	shallowEngine(f.e, c.variant)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink("src/one.txt", filepath.Join(f.path, "link")))
	must(os.Chmod(filepath.Join(f.path, "src/one.txt"), 0o600))
	res := f.fork(1)
	fv := f.view(res.Forks[0])
	writeFiles(t, fv, map[string]string{"a.txt": "changed in the fork\n", "fork/new.txt": "new\n"})
	must(os.Remove(filepath.Join(fv, "dir/b.txt")))
	must(os.RemoveAll(filepath.Join(fv, "gone")))
	must(os.Chmod(filepath.Join(fv, "src/deep/two.txt"), 0o755))
	if c.variant == "compact" {
		// Deepen the source to the limit: the next seal compacts.
		for i := range 1 {
			writeFiles(t, f.path, map[string]string{"round.txt": fmt.Sprintf("round %d\n", i)})
			if _, err := f.e.Checkpoint(f.ctx, "source", ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c.op != "promote" && c.op != "merge" {
		writeFiles(t, f.path, map[string]string{"later.txt": "written in the source after the fork\n", "src/one.txt": "one, changed\n"})
	}
	o := &opFixture{fixture: f}
	switch c.op {
	case "fork", "checkpoint", "preseal":
		o.arg = f.ref.Run.ID
	default:
		o.arg = res.Forks[0].ID
		o.arg2 = res.Forks[0].Origin
	}
	return o
}

// liveTrees is what every live run of the workspace shows, by run name.
func liveTrees(t *testing.T, f *fixture) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	for _, r := range liveRuns(t, f) {
		out[r.Name] = manifest(t, f.e.Path(f.ref.Workspace, r))
	}
	return out
}

func liveRuns(t *testing.T, f *fixture) []*tine.Run {
	t.Helper()
	var runs []*tine.Run
	err := f.e.store.View(f.ctx, func(tx tine.Tx) error {
		rs, err := tx.Runs(tine.RunFilter{Workspace: f.ref.Workspace.ID})
		for _, r := range rs {
			if r.Active() {
				runs = append(runs, r)
			}
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// retryable reports whether op can run again on the same arguments once
// it has completed (a promoted or discarded fork cannot be again).
func retryable(op string) bool { return op != "promote" && op != "discard" }

// afterTrees runs the operation without a kill on a fixture of its own and
// returns what the live runs show before and after it.
func (c opCase) trees(t *testing.T) (before, after map[string]map[string]string) {
	t.Helper()
	o := c.setup(t)
	before = liveTrees(t, o.fixture)
	if err := runOp(o.ctx, o.e, c.op, o.arg, o.arg2); err != nil {
		t.Fatalf("%s without a kill: %v", c.op, err)
	}
	if c.variant == "compact" {
		vs := versions(t, o.fixture)
		if l := vs[len(vs)-1].Layers; len(l) != 1 {
			t.Fatalf("the fork did not compact: its version has %d layers", len(l))
		}
	}
	after = liveTrees(t, o.fixture)
	if cmp.Equal(before, after) && c.op != "checkpoint" && c.op != "preseal" {
		t.Fatalf("%s changed nothing a run shows", c.op)
	}
	return before, after
}

func versions(t *testing.T, f *fixture) []*tine.Version {
	t.Helper()
	var vs []*tine.Version
	err := f.e.store.View(f.ctx, func(tx tine.Tx) error {
		var err error
		vs, err = tx.Versions(f.ref.Workspace.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].CreatedAt.Before(vs[j].CreatedAt) })
	return vs
}

// opKilledAt runs the case's operation in a helper that dies at fault
// point n (for merge: where spec says); it reports whether it was killed.
func (c opCase) killedAt(t *testing.T, o *opFixture, n int, spec string) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpFaultHelperProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), opHelperEnv+"="+c.op, opHomeEnv+"="+o.home, opArgEnv+"="+o.arg,
		opArg2Env+"="+o.arg2, opVariantEnv+"="+c.variant, opMergeEnv+"="+spec,
		fmt.Sprintf("TINE_TEST_KILL_AT=%s:%d", c.op, n))
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			return true
		}
	}
	if err != nil {
		t.Fatalf("%s helper at step %d: %v\n%s", c.op, n, err, out)
	}
	return false
}

// checkRecovered opens the engine (the next command: it sweeps) and checks
// the workspace: the live runs and their files are those of before or of
// after, the store agrees with the directories, doctor finds nothing, and
// (if opErr is nil) the operation retried succeeds. It reports which state
// it found.
func (c opCase) checkRecovered(t *testing.T, o *opFixture, before, after map[string]map[string]string, step string) string {
	t.Helper()
	o.open()
	shallowEngine(o.e, c.variant)
	got := liveTrees(t, o.fixture)
	state := ""
	switch {
	case cmp.Equal(got, before):
		state = "before"
	case cmp.Equal(got, after):
		state = "after"
	default:
		t.Fatalf("%s: the live runs show neither the files of before nor of after:\nbefore: %s\nafter: %s",
			step, cmp.Diff(before, got), cmp.Diff(after, got))
	}
	checkAgrees(t, o.fixture, step)
	if c.op == "merge" && state == "after" {
		// The files landed: the run is recorded merged, whatever the kill
		// interrupted (the journal's commit completes the record).
		r, err := o.e.FindRun(o.ctx, o.arg)
		if err != nil || r.Run.Resolution != tine.ResolutionMerged {
			t.Errorf("%s: the merged files landed but the run is %q (%v)", step, r.Run.Resolution, err)
		}
	}
	if state == "before" || retryable(c.op) {
		if err := runOp(o.ctx, o.e, c.op, o.arg, o.arg2); err != nil {
			t.Fatalf("%s: the retried %s (found %s): %v", step, c.op, state, err)
		}
		checkAgrees(t, o.fixture, step+", after the retry")
		if c.op != "fork" { // a retried fork makes two more forks
			if d := cmp.Diff(after, liveTrees(t, o.fixture)); d != "" {
				t.Errorf("%s: after the retried %s the files differ from after (-want +got):\n%s", step, c.op, d)
			}
		}
	}
	return state
}

// checkAgrees checks that the store and the directories agree: every live
// run's directory exists, its view is mounted (overlay) and made from the
// version the store says, no seal or merge journal is left, the directories
// under runs/ and layers/ are exactly the store's, every version's layers
// exist, the quarantine holds nothing the store knows, and tine doctor
// reports nothing to repair.
func checkAgrees(t *testing.T, f *fixture, step string) {
	t.Helper()
	w := f.ref.Workspace
	runs, layers, err := newSweeper(f.e).records(f.ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for id, r := range runs {
		if !r.Active() {
			continue
		}
		live[id] = true
		br := f.e.backendRun(w, r)
		if have := readBase(br); have != r.Base {
			t.Errorf("%s: run %s's view is of version %s, the store says %s", step, r.Name, have, r.Base)
		}
		for _, j := range []string{"seal.json", "merge.json", "upper.compacted"} {
			if _, err := os.Lstat(filepath.Join(br.Dir, j)); err == nil {
				t.Errorf("%s: run %s has %s left", step, r.Name, j)
			}
		}
		if r.Role == tine.RoleSource && !f.e.backends.stacking(w.Backend) {
			if _, err := os.Lstat(filepath.Join(br.Dir, "view")); err == nil {
				t.Errorf("%s: the flat source %s has a view left in its run directory", step, r.Name)
			}
		}
		if f.e.backends.stacking(w.Backend) {
			if ok, _ := mnt.IsMountpoint(br.View); !ok {
				t.Errorf("%s: run %s's view is not mounted", step, r.Name)
			}
			if r.Role == tine.RoleSource {
				dw, err1 := layer.Device(w.Path)
				dv, err2 := layer.Device(br.View)
				if err1 != nil || err2 != nil || dw != dv {
					t.Errorf("%s: the workspace path does not show the source %s's view", step, r.Name)
				}
			}
		}
	}
	var wantRuns, gotRuns []string
	for id := range live {
		if f.e.backendRun(w, runs[id]).Dir != w.Path {
			wantRuns = append(wantRuns, id)
		}
	}
	gotRuns = names(filepath.Join(f.e.lay.Workspace(w.ID).Dir(), "runs"))
	sort.Strings(wantRuns)
	if d := cmp.Diff(wantRuns, gotRuns); d != "" {
		t.Errorf("%s: run directories differ from the store's live runs (-store +dirs):\n%s", step, d)
	}
	var wantLayers []string
	for id := range layers {
		wantLayers = append(wantLayers, id)
	}
	sort.Strings(wantLayers)
	if d := cmp.Diff(wantLayers, names(filepath.Join(f.e.lay.Workspace(w.ID).Dir(), "layers"))); d != "" {
		t.Errorf("%s: layer directories differ from the store's layers (-store +dirs):\n%s", step, d)
	}
	for _, v := range versions(t, f) {
		for _, l := range v.Layers {
			if !layers[l] {
				t.Errorf("%s: version %s names layer %s, which the store lacks", step, v.ID, l)
			}
		}
	}
	r, err := Diagnose(f.ctx, f.home, testOptions()...)
	if err != nil {
		t.Fatalf("%s: doctor: %v", step, err)
	}
	if !r.Store.Usable() || len(r.Unknown) > 0 {
		t.Errorf("%s: doctor finds something to repair: store %s, unknown %v, advice %q", step, r.Store.State, r.Unknown, r.Advice)
	}
	for _, q := range r.Quarantine {
		id := filepath.Base(q.From)
		if runs[id] != nil || layers[id] {
			t.Errorf("%s: the quarantine holds %s, which the store knows (%s)", step, q.From, q.Kind)
		}
	}
}

func (c opCase) name() string {
	n := c.op + "/" + c.backend
	if c.variant != "" {
		n += "-" + c.variant
	}
	return n
}

// runKills runs the case at every fault point in turn.
func (c opCase) runKills(t *testing.T) {
	keepThresholds(t)
	before, after := c.trees(t)
	found := map[string]int{}
	for n := 0; ; n++ {
		if n > 100 {
			t.Fatalf("%s still killed after 100 steps", c.op)
		}
		done := false
		t.Run(fmt.Sprintf("step%02d", n), func(t *testing.T) {
			o := c.setup(t)
			o.e.Close()
			if !c.killedAt(t, o, n, "") {
				done = true
				o.open()
				if d := cmp.Diff(after, liveTrees(t, o.fixture)); d != "" {
					t.Fatalf("%s without a kill: the files differ from after (-want +got):\n%s", c.op, d)
				}
				return
			}
			st := c.checkRecovered(t, o, before, after, fmt.Sprintf("killed at %s:%d", c.op, n))
			if c.op == "discard" {
				// Whatever the kill left (a discarded run's directory, or
				// an entry in the trash), tine gc deletes.
				checkTrashEmptied(t, o.fixture, fmt.Sprintf("killed at %s:%d", c.op, n))
				if d := cmp.Diff(after, liveTrees(t, o.fixture)); st == "after" && d != "" {
					t.Fatalf("killed at %s:%d: tine gc changed the live runs' files (-want +got):\n%s", c.op, n, d)
				}
			}
			t.Logf("killed at %s:%d: the next command found %s", c.op, n, st)
			found[st]++
		})
		if done || t.Failed() {
			t.Logf("%s: %d fault points; the next command found %d before, %d after", c.name(), n, found["before"], found["after"])
			return
		}
	}
}

func tmpDirs(t *testing.T) (string, string) { return t.TempDir(), filepath.Join(t.TempDir(), "ws") }

func opCases(t *testing.T, ops ...string) []opCase {
	var out []opCase
	for _, op := range ops {
		for _, be := range backends(t) {
			out = append(out, opCase{op: op, backend: be, home: tmpDirs})
			if be == "overlay" && (op == "fork" || op == "checkpoint") {
				out = append(out, opCase{op: op, backend: be, variant: "move", home: tmpDirs})
			}
		}
	}
	return out
}

func TestFork_SIGKILL(t *testing.T) {
	for _, c := range opCases(t, "fork") {
		t.Run(c.name(), c.runKills)
	}
}

// TestCompaction_SIGKILL kills a fork whose seal compacts the source's
// stack past the depth limit (3 here) and rebases the source onto it.
func TestCompaction_SIGKILL(t *testing.T) {
	requireRootOverlay(t)
	c := opCase{op: "fork", backend: "overlay", variant: "compact", home: tmpDirs}
	c.runKills(t)
}

func TestCheckpoint_SIGKILL(t *testing.T) {
	for _, c := range opCases(t, "checkpoint") {
		t.Run(c.name(), c.runKills)
	}
}

// TestPreseal_SIGKILL kills the daemon's background seal of a run at each
// of its steps: the next command finds the run's files as they were, the
// store and the directories agreeing (the half-made layer swept), and a
// background seal and a fork after it succeed.
func TestPreseal_SIGKILL(t *testing.T) {
	for _, c := range opCases(t, "preseal") {
		t.Run(c.name(), c.runKills)
	}
}

func TestRollback_SIGKILL(t *testing.T) {
	for _, c := range opCases(t, "rollback") {
		t.Run(c.name(), c.runKills)
	}
}

func TestPromote_SIGKILL(t *testing.T) {
	for _, c := range opCases(t, "promote") {
		t.Run(c.name(), c.runKills)
	}
}

func TestDiscard_SIGKILL(t *testing.T) {
	for _, c := range opCases(t, "discard") {
		t.Run(c.name(), c.runKills)
	}
}

// keepThresholds restores the seal thresholds a variant changes when t ends.
func keepThresholds(t *testing.T) {
	b, f := moveMinBytes, moveMinFiles
	t.Cleanup(func() { moveMinBytes, moveMinFiles = b, f })
}

// TestMerge_SIGKILL kills engine.Merge, which has no fault points of its
// own (engine/merge.go): before and after its store update (the record of
// the merge, which comes after the apply), and at a few delays after the
// apply's journal appears (during the apply, merge.Recover's part).
func TestMerge_SIGKILL(t *testing.T) {
	specs := []string{"store:0", "store:1", "apply:0", "apply:200", "apply:1000", "apply:5000"}
	for _, c := range opCases(t, "merge") {
		t.Run(c.name(), func(t *testing.T) {
			before, after := c.trees(t)
			found := map[string]int{}
			for _, spec := range specs {
				t.Run(strings.ReplaceAll(spec, ":", "-"), func(t *testing.T) {
					o := c.setup(t)
					o.e.Close()
					if !c.killedAt(t, o, -1, spec) {
						o.open()
						if d := cmp.Diff(after, liveTrees(t, o.fixture)); d != "" {
							t.Fatalf("merge without a kill: the files differ from after (-want +got):\n%s", d)
						}
						found["finished"]++
						return
					}
					found[c.checkRecovered(t, o, before, after, "killed at "+spec)]++
				})
			}
			t.Logf("%s: the next command found %d before, %d after; %d not killed", c.name(), found["before"], found["after"], found["finished"])
		})
	}
}

// TestOps_FullDisk runs each operation with the state directory on a small
// ext4 filesystem filled up: it fails cleanly (the runs show their files as
// before) or succeeds; once space is freed the next command finds the store
// and the directories agreeing and the operation retried succeeds.
func TestOps_FullDisk(t *testing.T) {
	for _, op := range []string{"fork", "checkpoint", "rollback", "promote", "discard", "merge"} {
		for _, be := range backends(t) {
			c := opCase{op: op, backend: be, home: func(t *testing.T) (string, string) {
				return filepath.Join(smallFS(t, 32), "home"), filepath.Join(t.TempDir(), "ws")
			}}
			t.Run(c.name(), func(t *testing.T) {
				before, after := c.trees(t)
				o := c.setup(t)
				filler := filepath.Join(filepath.Dir(o.home), "filler")
				fill(t, filler, 0)
				err := runOp(o.ctx, o.e, c.op, o.arg, o.arg2)
				got, want := liveTrees(t, o.fixture), after
				if err != nil {
					t.Logf("%s on a full disk: %v", c.op, err)
					want = before
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("after %s on a full disk (error %v) the files differ (-want +got):\n%s", c.op, err, d)
				}
				if err := os.Remove(filler); err != nil {
					t.Fatal(err)
				}
				o.e.Close()
				c.checkRecovered(t, o, before, after, "after a full disk")
			})
		}
	}
}
