package overlay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/overlay"
)

// benchSource is a mounted source whose upper directory holds files
// files of 2 KB in directories of 100 (a node_modules-like delta).
func benchSource(b *testing.B, files int) (*overlay.Backend, layer.Run, []string, string) {
	b.Helper()
	enginetest.RequireOverlay(b, rootWhy)
	ctx := context.Background()
	dir := b.TempDir()
	be := overlay.New()
	src := filepath.Join(dir, "import")
	if err := os.MkdirAll(src, 0o755); err != nil {
		b.Fatal(err)
	}
	l0 := filepath.Join(dir, "L0")
	if err := be.Import(ctx, src, l0, false); err != nil {
		b.Fatal(err)
	}
	run := layer.Run{ID: "src", Dir: filepath.Join(dir, "run"), View: filepath.Join(dir, "run", "view")}
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := be.Activate(ctx, run, []string{l0}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { be.Deactivate(ctx, run) })
	data := make([]byte, 2048)
	for i := range files {
		p := filepath.Join(run.View, "node_modules", fmt.Sprintf("pkg%d", i/100), fmt.Sprintf("f%d.js", i))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return be, run, []string{l0}, dir
}

// BenchmarkSealOnto_Whole is a busy source's first seal: its whole delta
// of 20,000 files.
func BenchmarkSealOnto_Whole(b *testing.B) {
	be, run, base, dir := benchSource(b, 20000)
	ctx := context.Background()
	b.ResetTimer()
	for i := range b.N {
		l := filepath.Join(dir, fmt.Sprintf("W%d", i))
		if _, _, err := be.SealOnto(ctx, run, base, nil, l); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSealOnto_Change is a busy source's later seal: 10 files
// changed in a delta of 20,000 since the seal before, found by a walk of
// the whole upper directory and by the change tracker (the daemon's).
func BenchmarkSealOnto_Change(b *testing.B) {
	b.Run("walk", func(b *testing.B) { benchChange(b) })
	b.Run("tracked", func(b *testing.B) {
		if err := overlay.Track(); err != nil {
			b.Fatal(err)
		}
		defer overlay.StopTracking()
		benchChange(b)
	})
}

func benchChange(b *testing.B) {
	be, run, base, dir := benchSource(b, 20000)
	ctx := context.Background()
	prev, _, err := be.SealOnto(ctx, run, base, nil, filepath.Join(dir, "S0"))
	if err != nil {
		b.Fatal(err)
	}
	pruned := 0
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		for j := range 10 {
			p := filepath.Join(run.View, "node_modules", fmt.Sprintf("pkg%d", j*17), fmt.Sprintf("f%d.js", j*1700))
			if err := os.WriteFile(p, []byte(fmt.Sprint(i)), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		if len(prev)-len(base) >= overlay.ChainMax {
			// a new chain: its first seal copies the whole delta
			if prev, _, err = be.SealOnto(ctx, run, base, nil, filepath.Join(dir, fmt.Sprintf("C%d", i))); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		layers, cost, err := be.SealOnto(ctx, run, base, prev, filepath.Join(dir, fmt.Sprintf("S%d", i+1)))
		if err != nil {
			b.Fatal(err)
		}
		if cost.Pruned {
			pruned++
		}
		prev = layers
	}
	b.ReportMetric(float64(pruned)/float64(b.N), "pruned/op")
}
