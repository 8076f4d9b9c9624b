package merge

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// overlayBenchFiles is the size of the overlay apply benchmark: 10,000
// files of about 7 KiB (72 MB), every one changed by the run.
func overlayBench() (base, theirs tree) {
	base, theirs = tree{}, tree{}
	body := strings.Repeat("x", 7*1024)
	for d := range 100 {
		dn := fmt.Sprintf("dir%03d", d)
		base[dn], theirs[dn] = dir(), dir()
		for f := range benchFiles / 100 {
			p := fmt.Sprintf("%s/file%03d.txt", dn, f)
			base[p] = file("base " + p + body)
			theirs[p] = file("run " + p + body)
		}
	}
	return base, theirs
}

// BenchmarkApplyOverlay applies 10,000 changed files (72 MB) to an overlay
// view whose lower layer holds the target's files, as a source run's view
// does; Cp copies the same files with cp -a and syncs the filesystem, the
// baseline of issue 12's target (apply within 3x of cp).
func BenchmarkApplyOverlay(b *testing.B) {
	base, theirs := overlayBench()
	benchApplyAgainstCp(b, base, theirs, "")
}

// benchApplyAgainstCp plans theirs over base and times, in one run, Apply
// of the plan to a fresh overlay view of base (Apply) and cp -a of
// theirs' sub (all of it when "") without and with a sync of the
// filesystem (Cp, CpSync).
func benchApplyAgainstCp(b *testing.B, base, theirs tree, sub string) {
	if os.Geteuid() != 0 {
		b.Skip("mounting an overlay view needs root")
	}
	s, changes := benchSides(b, base, theirs)
	p, err := PlanFiles(context.Background(), s.base, s.theirs, s.ours, changes, PlanOptions{})
	if err != nil || !p.Clean() {
		b.Fatalf("plan: %v", err)
	}
	b.Run("Apply", func(b *testing.B) {
		b.StopTimer()
		for i := range b.N {
			target := overlayTarget(b, s.base)
			j := filepath.Join(b.TempDir(), fmt.Sprintf("journal-%d", i))
			syscall.Sync()
			b.StartTimer()
			if err := Apply(context.Background(), p, target, j, ApplyOptions{}); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
		}
	})
	cp := func(b *testing.B, sync bool) {
		b.StopTimer()
		for range b.N {
			dst := filepath.Join(b.TempDir(), "copy")
			syscall.Sync()
			b.StartTimer()
			if out, err := exec.Command("cp", "-a", filepath.Join(s.theirs, sub), dst).CombinedOutput(); err != nil {
				b.Fatalf("cp: %v: %s", err, out)
			}
			if sync {
				syncfs(b, dst)
			}
			b.StopTimer()
		}
	}
	b.Run("Cp", func(b *testing.B) { cp(b, false) })
	b.Run("CpSync", func(b *testing.B) { cp(b, true) })
}

// overlayTarget mounts a fresh overlay view whose lower layer is a copy of
// lower, unmounted when the benchmark ends.
func overlayTarget(b *testing.B, lower string) string { return overlayTargetT(b, lower) }

// overlayTargetT is overlayTarget for any test.
func overlayTargetT(b testing.TB, lower string) string {
	b.Helper()
	l := filepath.Join(b.TempDir(), "lower")
	if out, err := exec.Command("cp", "-a", lower, l).CombinedOutput(); err != nil {
		b.Fatalf("cp: %v: %s", err, out)
	}
	view, err := overlayOver(b, l)
	if err != nil {
		b.Skipf("overlay: %v", err)
	}
	return view
}

// overlayOver mounts a fresh overlay view whose lower layer is lower itself,
// as a run's view is mounted over its fork point's layer, unmounted when
// the test ends.
func overlayOver(b testing.TB, lower string) (string, error) {
	b.Helper()
	root := b.TempDir()
	upper, work, view := filepath.Join(root, "upper"), filepath.Join(root, "work"), filepath.Join(root, "view")
	for _, d := range []string{upper, work, view} {
		if err := os.Mkdir(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := unix.Mount("overlay", view, "overlay", 0, "lowerdir="+lower+",upperdir="+upper+",workdir="+work); err != nil {
		return "", err
	}
	b.Cleanup(func() { _ = unix.Unmount(view, unix.MNT_DETACH) })
	return view, nil
}

// syncfs flushes the filesystem holding dir.
func syncfs(b *testing.B, dir string) {
	b.Helper()
	f, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		b.Fatal(err)
	}
}

// newFilesBench is BenchmarkApplyOverlayNew's run: the base (a few files)
// and a run that added 40,000 files of about 2 KiB under new/, 100 to a
// directory, as bench/merge-new.sh's fork does (TINE_BENCH_NEW=N for N).
func newFilesBench() (base, theirs tree) {
	n := 40000
	if v, err := strconv.Atoi(os.Getenv("TINE_BENCH_NEW")); err == nil && v > 0 {
		n = v
	}
	base = tree{"a": file("a\n"), "d": dir(), "d/b": file("b\n")}
	theirs = base.clone()
	theirs["new"] = dir()
	body := strings.Repeat("y", 2000)
	for i := range n {
		d := fmt.Sprintf("new/d%03d", i/100)
		theirs[d] = dir()
		theirs[fmt.Sprintf("%s/f%05d", d, i)] = file(fmt.Sprint(i) + body)
	}
	return base, theirs
}

// BenchmarkApplyOverlayNew applies a run that added 40,000 new files to
// an overlay view (issue 24 item 4: within 1.5x cp -a of the same files);
// Cp and CpSync copy the same files with cp -a, without and with a sync
// of the filesystem, in the same run.
func BenchmarkApplyOverlayNew(b *testing.B) {
	base, theirs := newFilesBench()
	benchApplyAgainstCp(b, base, theirs, "new")
}
