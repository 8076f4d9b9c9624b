package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/merge/internal/gittest"
)

// scopeBenchSizes are the sizes of issue 12's merge benchmark: 1,000 and
// 10,000 files of about 7 KiB, every one changed by the run (a line
// appended), in directories of 100 files. bench/merge.sh times the same
// merges through the CLI; these benchmarks are there to profile the plans:
//
//	go test ./merge -run '^$' -bench 'PlanScope' -benchtime 3x -cpuprofile cpu.out
var scopeBenchSizes = []int{1000, 10000}

// scopeBenchFiles returns n files of about 7 KiB and the same files with a
// line appended, as the run changes them.
func scopeBenchFiles(n int) (base, theirs map[string]string) {
	base, theirs = map[string]string{}, map[string]string{}
	body := strings.Repeat(strings.Repeat("x", 65)+"\n", 7*1024/66)
	for i := range n {
		p := fmt.Sprintf("d%03d/f%03d.txt", i/100, i%100)
		base[p] = p + "\n" + body
		theirs[p] = base[p] + "changed in the run\n"
	}
	return base, theirs
}

// BenchmarkPlanScope plans the merge of a run that changed every file of
// a git repository, in the git scope (PlanGit) and in the filesystem and
// paths scopes (PlanFiles, the paths naming the files' directories). The
// target is what the engine gives a merge: an overlay view whose lower
// layer is the fork point's files, read as they are (a plain copy of them
// without root). The run's changes are listed before the clock starts, as
// the layer's Changes gives them to the engine.
func BenchmarkPlanScope(b *testing.B) {
	for _, n := range scopeBenchSizes {
		base, changed := scopeBenchFiles(n)
		theirs, ours, head := gittest.Pair(b, base)
		gittest.Write(b, theirs, changed)
		o := gitOptsT(b, theirs, head, ours, "")
		if view, err := overlayOver(b, o.Base); err == nil {
			o.Ours = view
		}
		var dirs []string
		for d := range n / 100 {
			dirs = append(dirs, fmt.Sprintf("d%03d", d))
		}
		b.Run(fmt.Sprintf("git/%d", n), func(b *testing.B) {
			for b.Loop() {
				o.Scratch = filepath.Join(b.TempDir(), "scratch")
				gittest.Must(b, os.Mkdir(o.Scratch, 0o755))
				p, err := PlanGit(context.Background(), o)
				if err != nil || !p.Clean() || len(p.Entries) != n {
					b.Fatalf("plan: %v, %d entries", err, len(p.Entries))
				}
			}
		})
		for _, scope := range []struct {
			name  string
			paths []string
		}{{"filesystem", nil}, {"paths", dirs}} {
			b.Run(fmt.Sprintf("%s/%d", scope.name, n), func(b *testing.B) {
				changes, err := fstree.Diff(context.Background(), o.Base, theirs)
				if err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					scratch := filepath.Join(b.TempDir(), "scratch")
					gittest.Must(b, os.Mkdir(scratch, 0o755))
					p, err := PlanFiles(context.Background(), o.Base, theirs, o.Ours, changes,
						PlanOptions{Paths: scope.paths, Scratch: scratch})
					if err != nil || !p.Clean() || len(p.Entries) != n {
						b.Fatalf("plan: %v, %d entries", err, len(p.Entries))
					}
				}
			})
		}
	}
}
