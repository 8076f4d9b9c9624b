package engine_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/layer"
)

// The benchmarks drive the engine the way the CLI does, minus process
// start-up: one engine on a fresh state directory, one workspace, and the
// operation under test repeated against it. bench/fork.sh measures the
// CLI on a full-size tree; docs/benchmarks.md has both sets of numbers.
//
//	sudo go test ./engine -run '^$' -bench . -benchtime 20x

// Workspace sizes. The copy backend copies every file on each fork, so
// the fork benchmarks use a small tree to keep -benchtime 20x short;
// overlay's cost does not depend on the tree's size (see bench/fork.sh).
const (
	forkFiles     = 300     // files in a fork, discard or checkpoint benchmark's workspace
	forkFileBytes = 8 << 10 // size of each
	diffFiles     = 2000    // files in a changes benchmark's workspace
	diffFileBytes = 4 << 10 // size of each
	benchDelta    = 1 << 20 // bytes the parent writes before forking
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
	if os.Geteuid() != 0 {
		b.Skip("engine benchmarks need root: the overlay backend mounts, and copy is measured beside it")
	}
	ctx := context.Background()
	root := b.TempDir()
	bn := &bench{b: b, ctx: ctx, path: filepath.Join(root, "ws"), ws: "bench"}
	for i := range files {
		writeBenchFile(b, filepath.Join(bn.path, benchPath(i)), size, byte(i))
	}
	e, err := engine.Open(ctx, filepath.Join(root, "home"))
	if err != nil {
		b.Fatalf("Open: %v", err)
	}
	bn.e = e
	b.Cleanup(func() {
		if _, err := e.Release(ctx, bn.path, true); err != nil {
			b.Errorf("Release: %v", err)
		}
		e.Close()
		mnt.UnmountAll(bn.path)
	})
	if _, err := e.Init(ctx, engine.InitOptions{Path: bn.path, Backend: backend, Name: bn.ws}); err != nil {
		b.Fatalf("Init %s: %v", backend, err)
	}
	return bn
}

// benchPath names the i-th file: 50 files per directory, two levels deep.
func benchPath(i int) string {
	d := i / 50
	return fmt.Sprintf("src/d%02d/e%02d/f%03d.txt", d/10, d%10, i%50)
}

func writeBenchFile(b *testing.B, p string, size int, fill byte) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	data := make([]byte, size)
	for i := range data {
		data[i] = 'a' + (fill+byte(i))%26
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
}

// writeDelta writes total bytes of new files into the source, through the
// workspace path.
func (bn *bench) writeDelta(total int) {
	const n = 16
	for i := range n {
		writeBenchFile(bn.b, filepath.Join(bn.path, "delta", fmt.Sprintf("new%02d.bin", i)), total/n, byte(i))
	}
}

// BenchmarkFork forks a source (300 files, 2.4 MB) whose delta is 1 MiB into 1 or 16 forks per
// operation, discarding them (untimed) before the next. Each operation
// seals the delta again, as every real fork of a busy parent does.
func BenchmarkFork(b *testing.B) {
	for _, backend := range []string{"overlay", "copy"} {
		b.Run(backend, func(b *testing.B) {
			for _, n := range []int{1, 16} {
				b.Run(fmt.Sprintf("%dway", n), func(b *testing.B) { benchFork(b, backend, n) })
			}
		})
	}
}

func benchFork(b *testing.B, backend string, n int) {
	bn := newBench(b, backend, forkFiles, forkFileBytes)
	bn.writeDelta(benchDelta)
	src := bn.ws + "/source"
	b.ResetTimer()
	for range b.N {
		res, err := bn.e.Fork(bn.ctx, src, engine.ForkOptions{Copies: n})
		if err != nil {
			b.Fatalf("Fork: %v", err)
		}
		b.StopTimer()
		if _, err := bn.e.Discard(bn.ctx, res.Group.ID, true); err != nil {
			b.Fatalf("Discard: %v", err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/fork")
}

// BenchmarkForkDelta forks an overlay source whose delta since init is 1,
// 8 or 32 MiB: a fork copies the parent's whole upper directory into a new
// layer, so this is the part of a fork's cost that grows.
func BenchmarkForkDelta(b *testing.B) {
	for _, mib := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("overlay/%dMiB", mib), func(b *testing.B) {
			bn := newBench(b, "overlay", forkFiles, forkFileBytes)
			bn.writeDelta(mib << 20)
			b.SetBytes(int64(mib) << 20)
			b.ResetTimer()
			for range b.N {
				res, err := bn.e.Fork(bn.ctx, bn.ws+"/source", engine.ForkOptions{Copies: 1})
				if err != nil {
					b.Fatalf("Fork: %v", err)
				}
				b.StopTimer()
				if _, err := bn.e.Discard(bn.ctx, res.Group.ID, true); err != nil {
					b.Fatalf("Discard: %v", err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkDiscard discards a group of 1 or 16 overlay forks.
func BenchmarkDiscard(b *testing.B) {
	for _, n := range []int{1, 16} {
		b.Run(fmt.Sprintf("overlay/%dway", n), func(b *testing.B) {
			bn := newBench(b, "overlay", forkFiles, forkFileBytes)
			bn.writeDelta(benchDelta)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				res, err := bn.e.Fork(bn.ctx, bn.ws+"/source", engine.ForkOptions{Copies: n})
				if err != nil {
					b.Fatalf("Fork: %v", err)
				}
				b.StartTimer()
				if _, err := bn.e.Discard(bn.ctx, res.Group.ID, true); err != nil {
					b.Fatalf("Discard: %v", err)
				}
			}
		})
	}
}

// BenchmarkCheckpoint records the source's files, with a 1 MiB delta, as a
// version.
func BenchmarkCheckpoint(b *testing.B) {
	for _, backend := range []string{"overlay", "copy"} {
		b.Run(backend, func(b *testing.B) {
			bn := newBench(b, backend, forkFiles, forkFileBytes)
			bn.writeDelta(benchDelta)
			b.ResetTimer()
			for range b.N {
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
				writeBenchFile(b, filepath.Join(bn.path, benchPath(i*30)), diffFileBytes, 'z')
			}
			for i := range 30 {
				writeBenchFile(b, filepath.Join(bn.path, "added", fmt.Sprintf("n%02d.txt", i)), diffFileBytes, 'y')
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
