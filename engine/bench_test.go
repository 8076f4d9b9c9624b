package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/layer"
)

// The benchmarks drive the engine the way the CLI does, minus process
// start-up: one engine on a fresh state directory, one workspace, and the
// operation under test repeated against it. bench/fork.sh measures the
// CLI on a full-size tree; docs/benchmarks.md has both sets of numbers.
//
//	sudo go test ./engine -run '^$' -bench . -benchtime 20x
//
// Use -benchtime Nx: with a duration, b.N can grow large enough for the
// source's overlay stack to reach its depth limit (32) where tine seals by
// renaming, and forks or checkpoints past it compact the whole tree, which
// BenchmarkForkDeep measures on its own.

// Workspace sizes. The copy backend copies every file on each fork, so
// the fork benchmarks use a small tree to keep -benchtime 20x short;
// overlay's cost does not depend on the tree's size (see bench/fork.sh).
const (
	forkFiles     = 200     // files in a fork, discard or checkpoint benchmark's workspace
	forkFileBytes = 8 << 10 // size of each
	diffFiles     = 2000    // files in a changes benchmark's workspace
	diffFileBytes = 4 << 10 // size of each
	benchDelta    = 1 << 20 // bytes the parent writes before each fork
	deepForks     = 31      // large-delta forks BenchmarkForkDeep makes before timing (the depth limit is 32)
)

// bench is one benchmark's workspace.
type bench struct {
	b    *testing.B
	ctx  context.Context
	e    *engine.Engine
	path string // the workspace path (the source's view)
	ws   string // the workspace name
}

// newBench inits a workspace of files files of size bytes each with the
// given backend in a fresh state directory, and releases it when the
// benchmark ends.
func newBench(b *testing.B, backend string, files, size int) *bench {
	b.Helper()
	testkit.RequireRoot(b, "engine benchmarks: the overlay backend mounts, and copy is measured beside it")
	root := enginetest.Root(b, backend)
	bn := &bench{b: b, ctx: context.Background(), path: filepath.Join(root, "ws"), ws: "bench"}
	for i := range files {
		testkit.WriteFile(b, filepath.Join(bn.path, benchPath(i)), size, byte(i))
	}
	bn.e = enginetest.New(b, enginetest.Options{Backend: backend, Name: bn.ws, Home: filepath.Join(root, "home"), Path: bn.path}).Engine
	return bn
}

// benchPath names the i-th file: 50 files per directory, two levels deep.
func benchPath(i int) string {
	d := i / 50
	return fmt.Sprintf("src/d%02d/e%02d/f%03d.txt", d/10, d%10, i%50)
}

// writeDelta (re)writes 16 files totalling total bytes in the source,
// through the workspace path, with contents that differ from round to
// round. A fork or checkpoint that seals by renaming leaves the source an
// empty delta, so each timed operation is preceded by a call to this.
func (bn *bench) writeDelta(total, round int) {
	const n = 16
	for i := range n {
		testkit.WriteFile(bn.b, filepath.Join(bn.path, "delta", fmt.Sprintf("new%02d.bin", i)), total/n, byte(i+round))
	}
}

// fork makes n forks of the source.
func (bn *bench) fork(n int) *engine.ForkResult {
	bn.b.Helper()
	res, err := bn.e.Fork(bn.ctx, bn.ws+"/source", engine.ForkOptions{Copies: n})
	if err != nil {
		bn.b.Fatalf("Fork: %v", err)
	}
	return res
}

func (bn *bench) discard(res *engine.ForkResult) {
	bn.b.Helper()
	if _, err := bn.e.Discard(bn.ctx, res.Group.ID, true); err != nil {
		bn.b.Fatalf("Discard: %v", err)
	}
}

// BenchmarkFork forks a source (200 files, 1.6 MB) whose delta is 1 MiB
// into 1 or 16 forks per operation. Before each operation the source
// rewrites its delta and the previous forks are discarded, both untimed.
func BenchmarkFork(b *testing.B) {
	for _, backend := range []string{"overlay", "copy"} {
		b.Run(backend, func(b *testing.B) {
			for _, n := range []int{1, 16} {
				b.Run(fmt.Sprintf("%dway", n), func(b *testing.B) { benchFork(b, backend, n, benchDelta) })
			}
		})
	}
}

func benchFork(b *testing.B, backend string, n, delta int) {
	bn := newBench(b, backend, forkFiles, forkFileBytes)
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		bn.writeDelta(delta, i)
		b.StartTimer()
		res := bn.fork(n)
		b.StopTimer()
		bn.discard(res)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/fork")
}

// BenchmarkForkDelta forks an overlay source whose delta is 1, 8 or 32
// MiB. Sealed by renaming, the cost should not grow with the delta; sealed
// by copying (when something holds the source's view) it does.
func BenchmarkForkDelta(b *testing.B) {
	for _, mib := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("overlay/%dMiB", mib), func(b *testing.B) {
			b.SetBytes(int64(mib) << 20)
			benchFork(b, "overlay", 1, mib<<20)
		})
	}
}

// BenchmarkForkDeep forks a source that was first forked 31 times, each
// time after creating or deleting 2,000 files: a delta that large is sealed
// by renaming it, which puts the source on a version one layer deeper, so
// its stack reaches the overlay depth limit (32). Each timed fork then
// follows a 1 MiB rewrite, as in BenchmarkFork. compactions/op is the share
// of timed forks whose version came out as a single layer (the whole tree
// copied); source-layers is the depth the source reached. The deep source
// is built once, untimed, for all runs of the sub-benchmark.
func BenchmarkForkDeep(b *testing.B) {
	bn := newBench(b, "overlay", forkFiles, forkFileBytes)
	depth := 0
	for i := range deepForks {
		bn.churn(i)
		res := bn.fork(1)
		depth = len(res.Version.Layers)
		bn.discard(res)
	}
	b.Run("overlay", func(b *testing.B) {
		bn.b = b
		compactions := 0
		b.ResetTimer()
		for i := range b.N {
			b.StopTimer()
			bn.writeDelta(benchDelta, i)
			b.StartTimer()
			res := bn.fork(1)
			b.StopTimer()
			if len(res.Version.Layers) == 1 {
				compactions++
			}
			bn.discard(res)
			b.StartTimer()
		}
		b.ReportMetric(float64(compactions)/float64(b.N), "compactions/op")
		b.ReportMetric(float64(depth), "source-layers")
	})
}

// churn changes 2,000 entries in the source without growing it: in even
// rounds it creates bulk/f0000 to bulk/f1999, in odd rounds it deletes them.
func (bn *bench) churn(round int) {
	bn.b.Helper()
	dir := filepath.Join(bn.path, "bulk")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		bn.b.Fatal(err)
	}
	for j := range 2000 {
		p := filepath.Join(dir, fmt.Sprintf("f%04d", j))
		var err error
		if round%2 == 0 {
			err = os.WriteFile(p, nil, 0o644)
		} else {
			err = os.Remove(p)
		}
		if err != nil {
			bn.b.Fatal(err)
		}
	}
}

// BenchmarkDiscard discards a group of 1 or 16 overlay forks.
func BenchmarkDiscard(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("overlay/%dway", n), func(b *testing.B) {
			bn := newBench(b, "overlay", forkFiles, forkFileBytes)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				res := bn.fork(n)
				b.StartTimer()
				bn.discard(res)
			}
		})
	}
}

// BenchmarkCheckpoint records the source's files, after it rewrote 1 MiB
// (untimed), as a version.
func BenchmarkCheckpoint(b *testing.B) {
	for _, backend := range []string{"overlay", "copy"} {
		b.Run(backend, func(b *testing.B) {
			bn := newBench(b, backend, forkFiles, forkFileBytes)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				bn.writeDelta(benchDelta, i)
				b.StartTimer()
				if _, err := bn.e.Checkpoint(bn.ctx, bn.ws+"/source", ""); err != nil {
					b.Fatalf("Checkpoint: %v", err)
				}
			}
		})
	}
}

// BenchmarkChanges lists the source's changes since init: 100 paths (60
// files edited, 30 added, 10 deleted) in a 2,000-file tree.
func BenchmarkChanges(b *testing.B) {
	for _, backend := range []string{"overlay", "copy"} {
		b.Run(backend, func(b *testing.B) {
			bn := newBench(b, backend, diffFiles, diffFileBytes)
			for i := range 60 {
				testkit.WriteFile(b, filepath.Join(bn.path, benchPath(i*30)), diffFileBytes, 'z')
			}
			for i := range 30 {
				testkit.WriteFile(b, filepath.Join(bn.path, "added", fmt.Sprintf("n%02d.txt", i)), diffFileBytes, 'y')
			}
			for i := range 10 {
				if err := os.Remove(filepath.Join(bn.path, benchPath(i*30+7))); err != nil {
					b.Fatal(err)
				}
			}
			ref, err := bn.e.FindRun(bn.ctx, bn.ws+"/source")
			if err != nil {
				b.Fatalf("FindRun: %v", err)
			}
			b.ResetTimer()
			for range b.N {
				changes, err := bn.e.Changes(bn.ctx, ref)
				if err != nil {
					b.Fatalf("Changes: %v", err)
				}
				if files := countFiles(changes); files != 100 {
					b.Fatalf("Changes found %d changed files, want 100", files)
				}
			}
		})
	}
}

// countFiles counts the changes that are not directories.
func countFiles(changes []layer.Change) int {
	n := 0
	for _, c := range changes {
		if c.Type != "dir" {
			n++
		}
	}
	return n
}
