package forkrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/judge"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/runtime"
)

// fakeHost is a Host whose every method calls the function in its field
// of the same name (a nil field panics: the test did not expect the call).
type fakeHost struct {
	FindRunFunc        func(ctx context.Context, ref string) (engine.Ref, error)
	PathFunc           func(w *tine.Workspace, r *tine.Run) string
	ForkFunc           func(ctx context.Context, ref string, o engine.ForkOptions) (*engine.ForkResult, error)
	ForkPointFunc      func(ctx context.Context, r engine.Ref, fn func(dir string) error) error
	WorkFunc           func(ctx context.Context, r engine.Ref) (*engine.Work, error)
	PatchFunc          func(ctx context.Context, r engine.Ref, w io.Writer) error
	CompareFunc        func(ctx context.Context, ref string) (*engine.Comparison, error)
	ChooseFunc         func(ctx context.Context, ref, run string, promote engine.ChooseOptions) (*engine.ChooseResult, error)
	ReportFunc         func(ctx context.Context, ref string) (*engine.GroupReport, error)
	LaunchFunc         func(ctx context.Context, ws string, refs []string) error
	ExecWithFunc       func(ctx context.Context, ref string, o runtime.ExecOptions) (*runtime.ExecResult, error)
	StopFunc           func(ctx context.Context, ref string) (*tine.Run, error)
	ProcStateFunc      func(r engine.Ref) (string, int)
	ConfinesWritesFunc func(ctx context.Context, ref string) bool
	ScratchDirFunc     func(r engine.Ref) string
	RefusalsFunc       func(ctx context.Context, ref string) ([]egress.Record, error)
	ScreenFunc         func(ctx context.Context, ref string) ([]byte, error)
	LayoutFunc         func() layout.Layout
	AppendEventFunc    func(ctx context.Context, ws, run string, kind tine.EventKind, detail any) error
	JudgeWeightsFunc   func(ws string) (*judge.Weights, int)
	AgentSessionFunc   func(ctx context.Context, r engine.Ref, kind string) string
}

var _ Host = (*fakeHost)(nil)

func (f *fakeHost) FindRun(ctx context.Context, ref string) (engine.Ref, error) {
	return f.FindRunFunc(ctx, ref)
}
func (f *fakeHost) Path(w *tine.Workspace, r *tine.Run) string { return f.PathFunc(w, r) }
func (f *fakeHost) Fork(ctx context.Context, ref string, o engine.ForkOptions) (*engine.ForkResult, error) {
	return f.ForkFunc(ctx, ref, o)
}
func (f *fakeHost) ForkPoint(ctx context.Context, r engine.Ref, fn func(dir string) error) error {
	return f.ForkPointFunc(ctx, r, fn)
}
func (f *fakeHost) Work(ctx context.Context, r engine.Ref) (*engine.Work, error) {
	return f.WorkFunc(ctx, r)
}
func (f *fakeHost) Patch(ctx context.Context, r engine.Ref, w io.Writer) error {
	return f.PatchFunc(ctx, r, w)
}
func (f *fakeHost) Compare(ctx context.Context, ref string) (*engine.Comparison, error) {
	return f.CompareFunc(ctx, ref)
}
func (f *fakeHost) Choose(ctx context.Context, ref, run string, promote engine.ChooseOptions) (*engine.ChooseResult, error) {
	return f.ChooseFunc(ctx, ref, run, promote)
}
func (f *fakeHost) Report(ctx context.Context, ref string) (*engine.GroupReport, error) {
	return f.ReportFunc(ctx, ref)
}
func (f *fakeHost) Launch(ctx context.Context, ws string, refs []string) error {
	return f.LaunchFunc(ctx, ws, refs)
}
func (f *fakeHost) ExecWith(ctx context.Context, ref string, o runtime.ExecOptions) (*runtime.ExecResult, error) {
	return f.ExecWithFunc(ctx, ref, o)
}
func (f *fakeHost) Stop(ctx context.Context, ref string) (*tine.Run, error) {
	return f.StopFunc(ctx, ref)
}
func (f *fakeHost) ProcState(r engine.Ref) (string, int)                  { return f.ProcStateFunc(r) }
func (f *fakeHost) SyncLoginsOf(ctx context.Context, ref string) []string { return nil }

func (f *fakeHost) ConfinesWrites(ctx context.Context, ref string) bool {
	return f.ConfinesWritesFunc(ctx, ref)
}
func (f *fakeHost) ScratchDir(r engine.Ref) string { return f.ScratchDirFunc(r) }
func (f *fakeHost) Refusals(ctx context.Context, ref string) ([]egress.Record, error) {
	return f.RefusalsFunc(ctx, ref)
}
func (f *fakeHost) Screen(ctx context.Context, ref string) ([]byte, error) {
	return f.ScreenFunc(ctx, ref)
}
func (f *fakeHost) Layout() layout.Layout { return f.LayoutFunc() }
func (f *fakeHost) AppendEvent(ctx context.Context, ws, run string, kind tine.EventKind, detail any) error {
	return f.AppendEventFunc(ctx, ws, run, kind, detail)
}
func (f *fakeHost) JudgeWeights(ws string) (*judge.Weights, int) { return f.JudgeWeightsFunc(ws) }
func (f *fakeHost) AgentSession(ctx context.Context, r engine.Ref, kind string) string {
	return f.AgentSessionFunc(ctx, r, kind)
}

// fakeFork is what one fork of a fakeRun does and shows: its agent's
// behaviour, its test's exit status, and what it changed.
type fakeFork struct {
	agent   func(o runtime.ExecOptions) *runtime.ExecResult // nil: prints nothing, exits 0
	testRC  int
	changed int
	diff    string
}

// fakeRun is a workspace "ws" with a live source run, forked into
// len(forks) forks f0, f1, ... behaving as forks says, on a fakeHost
// whose calls it records.
type fakeRun struct {
	*fakeHost
	forks map[string]*fakeFork // by run id

	mu      sync.Mutex
	chosen  []string         // runs passed to Choose
	stopped []string         // runs passed to Stop
	events  []tine.EventKind // kinds appended
}

func newFakeRun(t *testing.T, forks ...*fakeFork) *fakeRun {
	t.Helper()
	root := t.TempDir()
	ws := &tine.Workspace{ID: "w1", Name: "ws", Path: filepath.Join(root, "ws"), Backend: "copy"}
	src := &tine.Run{ID: "src", Workspace: ws.ID, Name: "source", State: tine.StateActive}
	g := &tine.Group{ID: "g1", Workspace: ws.ID, Parent: src.ID}
	fr := &fakeRun{forks: map[string]*fakeFork{}}
	runs := map[string]*tine.Run{src.ID: src, "ws/source": src}
	var forkRuns []*tine.Run
	for i, f := range forks {
		r := &tine.Run{ID: fmt.Sprintf("f%d", i), Workspace: ws.ID, Name: fmt.Sprintf("source-%d", i+1),
			Parent: src.ID, Group: g.ID, State: tine.StateActive}
		runs[r.ID], fr.forks[r.ID] = r, f
		forkRuns = append(forkRuns, r)
	}
	fr.fakeHost = &fakeHost{
		FindRunFunc: func(_ context.Context, ref string) (engine.Ref, error) {
			if r, ok := runs[ref]; ok {
				return engine.Ref{Workspace: ws, Run: r}, nil
			}
			return engine.Ref{}, fmt.Errorf("no run %q: %w", ref, tine.ErrNotFound)
		},
		PathFunc: func(_ *tine.Workspace, r *tine.Run) string { return filepath.Join(root, "views", r.ID) },
		ForkFunc: func(_ context.Context, ref string, o engine.ForkOptions) (*engine.ForkResult, error) {
			if ref != src.ID || o.Copies != len(forkRuns) {
				return nil, fmt.Errorf("fork of %s with %d copies, want %s with %d", ref, o.Copies, src.ID, len(forkRuns))
			}
			for i, a := range o.Approaches {
				forkRuns[i].Approach = a
			}
			return &engine.ForkResult{Parent: src, Group: g, Forks: forkRuns}, nil
		},
		ForkPointFunc: func(_ context.Context, _ engine.Ref, fn func(string) error) error { return fn(t.TempDir()) },
		WorkFunc: func(context.Context, engine.Ref) (*engine.Work, error) {
			return &engine.Work{}, nil
		},
		PatchFunc: func(_ context.Context, r engine.Ref, w io.Writer) error {
			_, err := io.WriteString(w, fr.forks[r.Run.ID].diff)
			return err
		},
		CompareFunc: func(_ context.Context, ref string) (*engine.Comparison, error) {
			c := &engine.Comparison{Group: g}
			for _, r := range forkRuns {
				f := fr.forks[r.ID]
				c.Forks = append(c.Forks, engine.ForkSummary{Run: r, Changed: f.changed, LinesAdded: f.changed, Ready: f.changed > 0, MergesCleanly: true})
			}
			return c, nil
		},
		ChooseFunc: func(_ context.Context, ref, run string, _ engine.ChooseOptions) (*engine.ChooseResult, error) {
			fr.mu.Lock()
			fr.chosen = append(fr.chosen, run)
			fr.mu.Unlock()
			res := &engine.ChooseResult{Chosen: runs[run]}
			for _, r := range forkRuns {
				if r.ID != run {
					res.Discarded = append(res.Discarded, r)
				}
			}
			return res, nil
		},
		LaunchFunc: func(context.Context, string, []string) error { return nil },
		ExecWithFunc: func(_ context.Context, ref string, o runtime.ExecOptions) (*runtime.ExecResult, error) {
			f := fr.forks[ref]
			if len(o.Args) == 3 && o.Args[0] == "sh" && o.Args[1] == "-c" { // the test command
				return &runtime.ExecResult{Run: ref, Args: o.Args, Exit: f.testRC}, nil
			}
			if f.agent == nil {
				return &runtime.ExecResult{Run: ref, Args: o.Args}, nil
			}
			return f.agent(o), nil
		},
		StopFunc: func(_ context.Context, ref string) (*tine.Run, error) {
			fr.mu.Lock()
			fr.stopped = append(fr.stopped, ref)
			fr.mu.Unlock()
			return runs[ref], nil
		},
		ProcStateFunc:      func(engine.Ref) (string, int) { return runtime.ProcRunning, 1 },
		ConfinesWritesFunc: func(context.Context, string) bool { return false },
		ScratchDirFunc:     func(r engine.Ref) string { return filepath.Join(root, "scratch", r.Run.ID) },
		RefusalsFunc:       func(context.Context, string) ([]egress.Record, error) { return nil, nil },
		ScreenFunc:         func(context.Context, string) ([]byte, error) { return nil, tine.ErrState },
		LayoutFunc:         func() layout.Layout { return layout.New(root) },
		AppendEventFunc: func(_ context.Context, _, _ string, kind tine.EventKind, _ any) error {
			fr.mu.Lock()
			fr.events = append(fr.events, kind)
			fr.mu.Unlock()
			return nil
		},
		JudgeWeightsFunc: func(string) (*judge.Weights, int) { return nil, 0 },
		AgentSessionFunc: func(context.Context, engine.Ref, string) string { return "" },
	}
	if err := os.MkdirAll(ws.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	return fr
}

// run runs a fork-run of o on fr through start (no root needed) and
// returns its report.
func (fr *fakeRun) run(t *testing.T, o Options) (*Report, error) {
	t.Helper()
	h, err := start(context.Background(), fr, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return h.Wait()
}
