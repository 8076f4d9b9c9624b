package forkrun_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
)

// BenchmarkForkRun measures fork-run's control plane: forkrun.Run with N
// command agents that write one file (benchAgentCmd; a fork must change
// something to count as work), no test command, manual mode (it judges
// and reports, and resolves nothing) and the heuristic judge, on an overlay
// workspace of 200 files. Each iteration's group is discarded afterwards,
// untimed, so iterations start alike and the workspace does not grow (the
// agents write nothing, so forking leaves the source's stack as it was).
//
//	sudo go test ./forkrun -run '^$' -bench ForkRun -benchtime 5x
//
// The metrics, per fork-run:
//
//   - ms/forkrun: Run from call to return.
//   - agent-ms: the slowest fork's agent wall time (report forks[i].Agent
//     .WallMS). The agents run in parallel, so the slowest one, not the
//     sum, is the share of the total the agents account for. fork-run
//     launches every fork's supervisor at once (engine.Launch) before the
//     agents start, so that is overhead, not agent time; running "true"
//     through a supervisor already up takes about 10 ms.
//   - overhead-ms: ms/forkrun - agent-ms, the measure (target:
//     under 200 ms for N = 4).
//   - baseline-ms: what a hand-written script does, measured in the same
//     iterations: engine.Fork of N copies, then ExecCapture of the agents'
//     command in every fork in parallel (the agents' command; discarded afterwards,
//     untimed); ratio is
//     ms/forkrun / baseline-ms.
//   - fork-ms, settle-ms, close-ms: phases read off the report's
//     timestamps: up to the first agent's start (the fork and the
//     supervisors' launch); from
//     the last fork's end to the report's end (Compare's merge dry-runs,
//     the judge, stopping the supervisors); from the report's end to Run's
//     return (stopping the saver, the final save, the end event).
func BenchmarkForkRun(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) { benchForkRun(b, n) })
	}
}

func benchForkRun(b *testing.B, n int) {
	bw := benchNewWorkspace(b)
	var total, agents, baseline, fork, settle, closing time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		rep, err := forkrun.Run(bw.ctx, forkrun.NewHost(bw.e), bw.options(n))
		done := time.Now()
		b.StopTimer()
		if err != nil {
			b.Fatalf("forkrun.Run: %v", err)
		}
		slowest := benchCheckReport(b, rep, n)
		total += done.Sub(t0)
		agents += slowest
		fork += benchFirstStart(rep).Sub(t0)
		settle += rep.FinishedAt.Sub(benchLastFinish(rep))
		closing += done.Sub(rep.FinishedAt)
		bw.discard(rep.Group)
		baseline += bw.baseline(n)
		b.StartTimer()
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(per(total), "ms/forkrun")
	b.ReportMetric(per(agents), "agent-ms")
	b.ReportMetric(per(total-agents), "overhead-ms")
	b.ReportMetric(per(baseline), "baseline-ms")
	b.ReportMetric(float64(total)/float64(baseline), "ratio")
	b.ReportMetric(per(fork), "fork-ms")
	b.ReportMetric(per(settle), "settle-ms")
	b.ReportMetric(per(closing), "close-ms")
}

// benchCheckReport fails the benchmark unless every fork's agent ran to its
// end, and returns the slowest agent's wall time.
func benchCheckReport(b *testing.B, rep *forkrun.Report, n int) time.Duration {
	b.Helper()
	if len(rep.Forks) != n {
		b.Fatalf("the report has %d forks, want %d", len(rep.Forks), n)
	}
	var slowest int64
	for _, f := range rep.Forks {
		if f.State != forkrun.Finished || f.Agent.ExitCode == nil || *f.Agent.ExitCode != 0 {
			b.Fatalf("fork %s: %s (%s), agent exit %v: %s", f.Name, f.State, f.Reason, f.Agent.ExitCode, f.AgentStderr)
		}
		slowest = max(slowest, f.Agent.WallMS)
	}
	return time.Duration(slowest) * time.Millisecond
}

// benchFirstStart is when the first agent started.
func benchFirstStart(rep *forkrun.Report) time.Time {
	t := rep.Forks[0].StartedAt
	for _, f := range rep.Forks {
		if f.StartedAt.Before(t) {
			t = f.StartedAt
		}
	}
	return t
}

// benchLastFinish is when the last fork ended.
func benchLastFinish(rep *forkrun.Report) time.Time {
	var t time.Time
	for _, f := range rep.Forks {
		if f.FinishedAt.After(t) {
			t = f.FinishedAt
		}
	}
	return t
}

// benchWorkspace is one benchmark's engine and overlay workspace.
type benchWorkspace struct {
	b    *testing.B
	ctx  context.Context
	e    *engine.Engine
	path string // the workspace path (the source's view)
	ws   string // the workspace name
}

// benchNewWorkspace inits an overlay workspace of 200 files of 8 KiB in a
// fresh state directory, and releases it when the benchmark ends. It skips
// the benchmark when not root or when overlay mounts fail here.
func benchNewWorkspace(b *testing.B) *benchWorkspace {
	b.Helper()
	root := enginetest.Root(b, "overlay")
	bw := &benchWorkspace{b: b, ctx: context.Background(), path: filepath.Join(root, "ws"), ws: "bench"}
	for i := range 200 {
		testkit.WriteFile(b, filepath.Join(bw.path, fmt.Sprintf("src/d%d/f%03d.txt", i/50, i)), 8<<10, byte(i))
	}
	bw.e = enginetest.New(b, enginetest.Options{Backend: "overlay", Name: bw.ws, Home: filepath.Join(root, "home"), Path: bw.path}).Engine
	return bw
}

func (bw *benchWorkspace) options(n int) forkrun.Options {
	return forkrun.Options{
		Source: bw.ws + "/source", Prompt: "do nothing", N: n,
		Agent: agent.Config{Kind: agent.CommandKind, Args: benchAgentCmd},
		Mode:  forkrun.Manual, JudgeKind: "heuristic",
	}
}

// benchAgentCmd is the command agent of the benchmarks: it writes one
// file, so that its fork did work.
var benchAgentCmd = []string{"sh", "-c", "echo x > out.txt"}

// baseline forks the source n ways and runs benchAgentCmd in every fork in
// parallel, as a script would, and returns how long that took; the forks
// are then discarded, untimed.
func (bw *benchWorkspace) baseline(n int) time.Duration {
	bw.b.Helper()
	t0 := time.Now()
	res, err := bw.e.Fork(bw.ctx, bw.ws+"/source", engine.ForkOptions{Copies: n})
	if err != nil {
		bw.b.Fatalf("Fork: %v", err)
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, r := range res.Forks {
		wg.Go(func() {
			x, err := runtime.Of(bw.e).ExecCapture(bw.ctx, r.ID, benchAgentCmd, time.Minute)
			if err == nil && x.Exit != 0 {
				err = fmt.Errorf("exit %d: %s", x.Exit, x.Stderr)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	d := time.Since(t0)
	for i, err := range errs {
		if err != nil {
			bw.b.Fatalf("ExecCapture in %s: %v", res.Forks[i].Name, err)
		}
	}
	bw.discard(res.Group.ID)
	return d
}

// discard discards group's forks, stopping their supervisors.
func (bw *benchWorkspace) discard(group string) {
	bw.b.Helper()
	if _, err := bw.e.Discard(bw.ctx, group, true); err != nil {
		bw.b.Fatalf("Discard: %v", err)
	}
}
