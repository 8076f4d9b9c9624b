package merge

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// benchFiles is how many changed small files the benchmarks merge.
const benchFiles = 10000

// manySmall returns a base of benchFiles small files in 100 directories and
// a run that changed every one of them.
func manySmall() (base, theirs tree) {
	base, theirs = tree{}, tree{}
	for d := range 100 {
		dn := fmt.Sprintf("dir%03d", d)
		base[dn], theirs[dn] = dir(), dir()
		for f := range benchFiles / 100 {
			p := fmt.Sprintf("%s/file%03d.txt", dn, f)
			base[p] = file(fmt.Sprintf("base %s\n", p))
			theirs[p] = file(fmt.Sprintf("changed in the run %s\n", p))
		}
	}
	return base, theirs
}

// benchSides writes base, theirs and ours (= base) and diffs them.
func benchSides(b *testing.B, base, theirs tree) (testSides, []layer.Change) {
	b.Helper()
	s := makeSides(b, base, theirs, base)
	changes, err := fstree.Diff(context.Background(), s.base, s.theirs)
	if err != nil {
		b.Fatal(err)
	}
	return s, changes
}

func BenchmarkPlanFiles(b *testing.B) {
	base, theirs := manySmall()
	s, changes := benchSides(b, base, theirs)
	b.ResetTimer()
	for b.Loop() {
		p, err := PlanFiles(context.Background(), s.base, s.theirs, s.ours, changes, PlanOptions{})
		if err != nil || !p.Clean() || len(p.Entries) != benchFiles {
			b.Fatalf("plan: %v, %d entries", err, len(p.Entries))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchFiles, "ns/path")
}

func BenchmarkApply(b *testing.B) {
	base, theirs := manySmall()
	s, changes := benchSides(b, base, theirs)
	p, err := PlanFiles(context.Background(), s.base, s.theirs, s.ours, changes, PlanOptions{})
	if err != nil {
		b.Fatal(err)
	}
	benchApply(b, s, p, func(target string) { writeTree(b, target, base) })
}

// benchApply applies p to a fresh copy of the target, made by fill, per
// iteration; only Apply is timed, cleanup of its backups included.
func benchApply(b *testing.B, s testSides, p *Plan, fill func(target string)) {
	b.Helper()
	b.StopTimer()
	for i := range b.N {
		target := filepath.Join(b.TempDir(), "target")
		if err := os.Mkdir(target, 0o755); err != nil {
			b.Fatal(err)
		}
		fill(target)
		j := filepath.Join(filepath.Dir(target), fmt.Sprintf("journal-%d", i))
		syscall.Sync() // Apply's syncfs should not pay for writing the fixture
		b.StartTimer()
		if err := Apply(context.Background(), p, target, j, ApplyOptions{}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := fstree.RemoveAll(target); err != nil {
			b.Fatal(err)
		}
	}
}

// bigFileSize is the size of BenchmarkApplyBigFile's file: 256 MiB, or
// 1 GiB with TINE_BENCH_BIG=1.
func bigFileSize() int64 {
	if os.Getenv("TINE_BENCH_BIG") == "1" {
		return 1 << 30
	}
	return 256 << 20
}

func BenchmarkApplyBigFile(b *testing.B) {
	size := bigFileSize()
	s := makeSides(b, tree{"big": file("small")}, tree{}, tree{"big": file("small")})
	writeBig(b, filepath.Join(s.theirs, "big"), size)
	changes, err := fstree.Diff(context.Background(), s.base, s.theirs)
	if err != nil {
		b.Fatal(err)
	}
	p, err := PlanFiles(context.Background(), s.base, s.theirs, s.ours, changes, PlanOptions{})
	if err != nil || !p.Clean() {
		b.Fatalf("plan: %v %v", err, p.Conflicts())
	}
	b.SetBytes(size)
	benchApply(b, s, p, func(target string) { writeTree(b, target, tree{"big": file("small")}) })
}

// writeBig writes a file of size bytes at name.
func writeBig(b *testing.B, name string, size int64) {
	b.Helper()
	f, err := os.Create(name)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	for n := int64(0); n < size; n += int64(len(chunk)) {
		if _, err := f.Write(chunk[:min(int64(len(chunk)), size-n)]); err != nil {
			b.Fatal(err)
		}
	}
}
