package overlay_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/overlay"
	"golang.org/x/sys/unix"
)

// snap describes a tree for comparison: per path its type, mode, owner,
// data, symlink target, user extended attributes and modification time,
// and which files share an inode.
func snap(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	byIno := map[uint64][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		desc := fmt.Sprintf("%v %o %d:%d", fi.Mode().Type(), fi.Mode().Perm(), st.Uid, st.Gid)
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x mtime=%d", sha256.Sum256(b), fi.ModTime().UnixNano())
			if st.Nlink > 1 {
				byIno[st.Ino] = append(byIno[st.Ino], rel)
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			desc += " -> " + target
		case fi.IsDir() && rel != ".":
			desc += fmt.Sprintf(" mtime=%d", fi.ModTime().UnixNano())
		}
		desc += " " + userXattrs(p)
		out[rel] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, group := range byIno {
		sort.Strings(group)
		for _, p := range group {
			out[p] += " links=" + strings.Join(group, ",")
		}
	}
	return out
}

func userXattrs(p string) string {
	buf := make([]byte, 4096)
	n, err := unix.Llistxattr(p, buf)
	if err != nil {
		return ""
	}
	var parts []string
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if strings.HasPrefix(name, "user.") {
			v := make([]byte, 256)
			m, _ := unix.Lgetxattr(p, name, v)
			parts = append(parts, name+"="+string(v[:max(m, 0)]))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// busySource is a source run of the overlay backend over a small base tree,
// sealed with SealOnto as a busy source is.
type busySource struct {
	t        *testing.T
	ctx      context.Context
	be       *overlay.Backend
	dir      string
	run      layer.Run
	base     []string
	prev     []string
	n        int
	released []func() error
}

func newBusySource(t *testing.T) *busySource {
	enginetest.RequireOverlay(t, rootWhy)
	dir := t.TempDir()
	s := &busySource{t: t, ctx: context.Background(), be: overlay.New(), dir: dir}
	src := filepath.Join(dir, "import")
	for i := range 4 {
		for j := range 5 {
			p := filepath.Join(src, fmt.Sprintf("d%d", i), fmt.Sprintf("s%d", j%2), fmt.Sprintf("f%d", j))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(p), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	l0 := filepath.Join(dir, "L0")
	if err := s.be.Import(s.ctx, src, l0, false); err != nil {
		t.Fatal(err)
	}
	s.base = []string{l0}
	s.run = layer.Run{ID: "src", Dir: filepath.Join(dir, "run"), View: filepath.Join(dir, "run", "view")}
	os.MkdirAll(s.run.Dir, 0o755)
	if err := s.be.Activate(s.ctx, s.run, s.base); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, f := range s.released {
			f()
		}
		s.be.Deactivate(s.ctx, s.run)
	})
	return s
}

// seal seals the source onto its last seal and checks that the version
// shows exactly what the source's view shows.
func (s *busySource) seal() layer.SealCost {
	s.t.Helper()
	s.n++
	l := filepath.Join(s.dir, fmt.Sprintf("L%d", s.n))
	layers, cost, err := s.be.SealOnto(s.ctx, s.run, s.base, s.prev, l)
	if err != nil {
		s.t.Fatal(err)
	}
	s.prev = layers
	got, release, err := s.be.Read(s.ctx, layers, filepath.Join(s.dir, fmt.Sprintf("read%d", s.n)))
	if err != nil {
		s.t.Fatal(err)
	}
	s.released = append(s.released, release)
	if diff := cmp.Diff(snap(s.t, s.run.View), snap(s.t, got)); diff != "" {
		s.t.Fatalf("seal %d (%d layers, whole %v): version differs from the source's view (-view +version):\n%s", s.n, len(layers), cost.Whole, diff)
	}
	return cost
}

func (s *busySource) path(rel string) string { return filepath.Join(s.run.View, rel) }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestSealOnto_CopiesOnlyTheChange seals a source whose view stays
// mounted again and again: after the first seal each copies only what
// changed, and every version shows exactly the view, through deletions,
// renames of files and directories (from the base and made since), rm -r
// and mkdir of the same name, hard links, extended attributes and modes.
func TestSealOnto_CopiesOnlyTheChange(t *testing.T) {
	s := newBusySource(t)
	for i := range 200 {
		must(t, os.WriteFile(s.path(fmt.Sprintf("d0/big%03d", i)), []byte("x"), 0o644))
	}
	time.Sleep(20 * time.Millisecond)
	if c := s.seal(); !c.Whole || c.Files < 200 {
		t.Fatalf("first seal: %+v, want the whole delta", c)
	}
	steps := []struct {
		name string
		do   func()
		max  int // entries the seal may copy
	}{
		{"modify one file", func() { must(t, os.WriteFile(s.path("d0/big007"), []byte("changed"), 0o644)) }, 3},
		{"delete files", func() {
			must(t, os.Remove(s.path("d0/big008")))
			must(t, os.Remove(s.path("d1/s0/f0")))
		}, 5},
		{"rename a file", func() { must(t, os.Rename(s.path("d0/big009"), s.path("d2/moved"))) }, 5},
		{"hard link", func() { must(t, os.Link(s.path("d0/big010"), s.path("d3/link"))) }, 5},
		{"write through a hard link", func() { must(t, os.WriteFile(s.path("d3/link"), []byte("both"), 0o644)) }, 5},
		{"xattr and chmod", func() {
			must(t, unix.Lsetxattr(s.path("d0/big011"), "user.tag", []byte("v1"), 0))
			must(t, os.Chmod(s.path("d1/s1/f1"), 0o600))
		}, 6},
		{"rm -r a base dir and mkdir it again", func() {
			must(t, os.RemoveAll(s.path("d2/s0")))
			must(t, os.MkdirAll(s.path("d2/s0/new"), 0o755))
			must(t, os.WriteFile(s.path("d2/s0/new/f"), []byte("new"), 0o644))
		}, 8},
		{"rm -r a sealed new dir and mkdir it again", func() {
			must(t, os.MkdirAll(s.path("fresh/a"), 0o755))
			must(t, os.WriteFile(s.path("fresh/a/x"), []byte("x"), 0o644))
		}, 6},
		{"", func() {
			must(t, os.RemoveAll(s.path("fresh")))
			must(t, os.MkdirAll(s.path("fresh"), 0o755))
			must(t, os.WriteFile(s.path("fresh/y"), []byte("y"), 0o644))
		}, 6},
		{"rename a base dir", func() { must(t, os.Rename(s.path("d3/s1"), s.path("d1/renamed"))) }, 12},
		{"change inside it", func() { must(t, os.WriteFile(s.path("d1/renamed/f1"), []byte("again"), 0o644)) }, 4},
		{"rename it again", func() { must(t, os.Rename(s.path("d1/renamed"), s.path("d0/again"))) }, 6},
		{"rename the big dir", func() { must(t, os.Rename(s.path("d0"), s.path("zero"))) }, 6},
		{"change inside the renamed dir", func() { must(t, os.WriteFile(s.path("zero/big020"), []byte("z"), 0o644)) }, 4},
		{"rename a new dir", func() { must(t, os.Rename(s.path("fresh"), s.path("d2/fresh2"))) }, 6},
		{"symlink and file to dir", func() {
			must(t, os.Symlink("../zero", s.path("d1/ln")))
			must(t, os.Remove(s.path("zero/big021")))
			must(t, os.MkdirAll(s.path("zero/big021/in"), 0o755))
		}, 8},
		{"dir to file", func() {
			must(t, os.RemoveAll(s.path("zero/big021")))
			must(t, os.WriteFile(s.path("zero/big021"), []byte("file again"), 0o644))
		}, 5},
		{"nothing", func() {}, 1},
	}
	for i, st := range steps {
		st.do()
		// The filesystem stamps ctimes with a coarse clock: a file changed
		// within the same tick as a seal is copied by the next seal too.
		time.Sleep(20 * time.Millisecond)
		c := s.seal()
		if i+1 == overlay.ChainMax {
			if !c.Whole {
				t.Errorf("%s: sealed %+v onto a chain of %d layers, want the whole delta (a new chain)", st.name, c, overlay.ChainMax)
			}
			continue
		}
		if c.Whole || c.Files > st.max {
			t.Errorf("%s: sealed %+v, want at most %d entries copied incrementally", st.name, c, st.max)
		}
	}
}

// TestSealOnto_Random seals a source after rounds of random changes and
// checks each version against the view.
func TestSealOnto_Random(t *testing.T) {
	seeds := int64(4)
	if n, err := strconv.Atoi(os.Getenv("TINE_TEST_SEEDS")); err == nil {
		seeds = int64(n) // a longer search
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newBusySource(t)
			rng := rand.New(rand.NewSource(seed))
			for range 30 {
				for range 1 + rng.Intn(6) {
					randomChange(t, rng, s.run.View, true)
				}
				s.seal()
			}
		})
	}
}

// TestSealOnto_Tracked is TestSealOnto_Random with the change tracker on,
// as the daemon runs it: seals walk only the directories it names, and
// every version must still be exactly the view. Most seals after the
// first must be pruned where there are no hard links (one makes a seal
// walk everything).
func TestSealOnto_Tracked(t *testing.T) {
	seeds := int64(8)
	if n, err := strconv.Atoi(os.Getenv("TINE_TEST_SEEDS")); err == nil {
		seeds = int64(n)
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := newBusySource(t)
			if os.Getenv("NOTRACK") == "" {
				if err := overlay.Track(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(overlay.StopTracking)
			}
			rng := rand.New(rand.NewSource(seed))
			links := seed%2 == 1 // hard links make seals walk everything
			pruned := 0
			for range 30 {
				for range 1 + rng.Intn(6) {
					randomChange(t, rng, s.run.View, links)
				}
				if s.seal().Pruned {
					pruned++
				}
			}
			if !links && pruned < 20 {
				t.Fatalf("%d of 30 seals pruned by the tracker, want all but a few", pruned)
			}
		})
	}
}

// randomChange makes one random change in the tree at root.
func randomChange(t *testing.T, rng *rand.Rand, root string, links bool) {
	var files, dirs []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != root {
			if d.IsDir() {
				dirs = append(dirs, p)
			} else if d.Type().IsRegular() {
				files = append(files, p)
			}
		}
		return nil
	})
	dirs = append(dirs, root)
	pick := func(xs []string) string {
		x := xs[rng.Intn(len(xs))]
		if os.Getenv("TINE_TEST_TRACE") != "" {
			t.Logf("pick %s", strings.TrimPrefix(x, root))
		}
		return x
	}
	name := fmt.Sprintf("n%d", rng.Intn(50))
	op := rng.Intn(12)
	if os.Getenv("TINE_TEST_TRACE") != "" {
		defer func() { t.Logf("op %d %s", op, name) }()
	}
	switch {
	case op == 0 && len(files) > 0:
		os.WriteFile(pick(files), []byte(fmt.Sprint(rng.Int())), 0o644)
	case op == 1 && len(files) > 0:
		os.Remove(pick(files))
	case op == 2 && len(files) > 0:
		os.Rename(pick(files), filepath.Join(pick(dirs), name))
	case op == 3 && len(dirs) > 1:
		a, b := pick(dirs), filepath.Join(pick(dirs), name)
		err := os.Rename(a, b) // fails when into itself
		if os.Getenv("TINE_TEST_TRACE") != "" {
			t.Logf("rename %s %s: %v", a, b, err)
		}
	case op == 4 && len(dirs) > 1:
		d := pick(dirs[:len(dirs)-1])
		os.RemoveAll(d)
		if rng.Intn(2) == 0 {
			os.MkdirAll(filepath.Join(d, name), 0o755)
		}
	case op == 5 && len(files) > 0 && links:
		os.Link(pick(files), filepath.Join(pick(dirs), name))
	case op == 6 && len(files) > 0:
		unix.Lsetxattr(pick(files), "user.r", []byte(fmt.Sprint(rng.Intn(9))), 0)
	case op == 7:
		os.Mkdir(filepath.Join(pick(dirs), name), 0o755)
	case op == 8 && len(files) > 0:
		os.Chmod(pick(files), fs.FileMode(0o600+rng.Intn(0o100)))
	case op == 10:
		os.Chmod(pick(dirs), fs.FileMode(0o700+rng.Intn(0o100)))
	case op == 9:
		f, err := os.Create(filepath.Join(pick(dirs), name))
		if err == nil {
			f.Truncate(1 << 20) // sparse
			f.WriteAt([]byte("end"), 1<<20)
			f.Close()
		}
	default:
		os.WriteFile(filepath.Join(pick(dirs), name), []byte(name), 0o644)
	}
}

// TestSealOnto_MakesOnlyTheDirectoriesItWrites is issue 24's wasted
// directories: each seal of a busy source made a directory in the new
// layer for every directory it walked and removed it again when nothing
// below it changed (about 860 mkdir and rmdir per seal of a 20,000-file
// delta). A seal after a change of one file makes only the directories on
// that file's path.
func TestSealOnto_MakesOnlyTheDirectoriesItWrites(t *testing.T) {
	s := newBusySource(t)
	for i := range 40 {
		for j := range 3 {
			p := s.path(fmt.Sprintf("new/n%02d/s%d/f", i, j))
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.WriteFile(p, []byte(p), 0o644))
		}
	}
	time.Sleep(20 * time.Millisecond)
	if c := s.seal(); !c.Whole {
		t.Fatalf("first seal: %+v, want the whole delta", c)
	}
	must(t, os.WriteFile(s.path("new/n07/s1/f"), []byte("changed"), 0o644))
	must(t, os.WriteFile(s.path("d2/s0/f0"), []byte("changed"), 0o644))
	time.Sleep(20 * time.Millisecond)
	count, restore := overlay.CountLayerMkdirs()
	defer restore()
	if c := s.seal(); c.Whole {
		t.Fatalf("second seal: %+v, want an incremental one", c)
	}
	// new, new/n07, new/n07/s1, d2, d2/s0
	if n := count(); n != 5 {
		t.Errorf("the seal of two changed files made %d directories in its layer, want the 5 on their paths", n)
	}
}

// TestSealOnto_NothingChangedMakesNoLayer is issue 24's fixed part of a
// busy fork: a seal with nothing changed since the one before (a fork
// right after the daemon's background seal) wrote the whole delta's
// manifest again into a new, empty layer (34-107 ms at 20,000 files).
// With the change tracker vouching for it, it makes no layer and returns
// the previous seal's; a change of the root's own mode and a new file
// after it are still sealed.
func TestSealOnto_NothingChangedMakesNoLayer(t *testing.T) {
	s := newBusySource(t)
	if err := overlay.Track(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(overlay.StopTracking)
	must(t, os.WriteFile(s.path("d1/s0/f0"), []byte("a"), 0o644))
	s.seal()
	must(t, os.WriteFile(s.path("d1/s0/f0"), []byte("b"), 0o644))
	time.Sleep(20 * time.Millisecond)
	if c := s.seal(); !c.Pruned || c.Unchanged {
		t.Fatalf("seal after a change: %+v, want a tracked one that copies it", c)
	}
	prev := slices.Clone(s.prev)
	time.Sleep(20 * time.Millisecond)
	c := s.seal()
	if !c.Unchanged || c.Files != 0 {
		t.Fatalf("seal with nothing changed: %+v, want Unchanged", c)
	}
	if !slices.Equal(s.prev, prev) {
		t.Errorf("seal with nothing changed returned layers %v, want the previous seal's %v", s.prev, prev)
	}
	if _, err := os.Stat(filepath.Join(s.dir, fmt.Sprintf("L%d", s.n))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("seal with nothing changed made its layer directory (stat: %v)", err)
	}
	must(t, os.Chmod(s.run.View, 0o711))
	time.Sleep(20 * time.Millisecond)
	if c := s.seal(); c.Unchanged { // seal compares the version with the view
		t.Fatalf("seal after a chmod of the root: %+v, want the change sealed", c)
	}
	s.seal()
	must(t, os.WriteFile(s.path("d3/new"), []byte("new"), 0o644))
	time.Sleep(20 * time.Millisecond)
	if c := s.seal(); c.Unchanged || c.Whole || c.Files == 0 {
		t.Fatalf("seal of a new file after a seal with nothing changed: %+v, want it copied alone", c)
	}
}

// TestSealOnto_WalkFindsNothingChanged: without a change tracker (a CLI
// with no daemon) a seal with nothing changed since the last one made a
// new, empty layer and wrote the whole manifest again, so every fork of
// an unchanged source grew its stack by a layer. The walk now finds it
// and makes none; any change, down to a file's times, a deletion or the
// root's own mode, is still sealed.
func TestSealOnto_WalkFindsNothingChanged(t *testing.T) {
	s := newBusySource(t)
	must(t, os.WriteFile(s.path("d1/s0/f0"), []byte("a"), 0o644))
	must(t, os.WriteFile(s.path("d2/new"), []byte("new"), 0o644))
	time.Sleep(20 * time.Millisecond) // past the filesystem clock's tick: a change in the seal's tick is taken as after it
	s.seal()
	unchanged := func(what string) {
		t.Helper()
		prev := slices.Clone(s.prev)
		time.Sleep(20 * time.Millisecond)
		c := s.seal()
		if !c.Unchanged || c.Files != 0 || c.Pruned {
			t.Fatalf("seal %s: %+v, want Unchanged found by the walk", what, c)
		}
		if !slices.Equal(s.prev, prev) {
			t.Errorf("seal %s returned layers %v, want the previous seal's %v", what, s.prev, prev)
		}
		if _, err := os.Stat(filepath.Join(s.dir, fmt.Sprintf("L%d", s.n))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("seal %s made its layer directory (stat: %v)", what, err)
		}
	}
	changed := func(what string, change func()) {
		t.Helper()
		change()
		time.Sleep(20 * time.Millisecond)
		if c := s.seal(); c.Unchanged || c.Whole {
			t.Fatalf("seal after %s: %+v, want the change sealed alone", what, c)
		}
		unchanged("right after " + what)
	}
	unchanged("with nothing changed")
	unchanged("again")
	future := time.Now().Add(time.Hour)
	changed("a file's times", func() { must(t, os.Chtimes(s.path("d2/new"), future, future)) })
	changed("a deletion", func() { must(t, os.Remove(s.path("d3/s1/f1"))) })
	changed("a mode of a directory below", func() { must(t, os.Chmod(s.path("d0/s0"), 0o700)) })
	changed("the root's mode", func() { must(t, os.Chmod(s.run.View, 0o711)) })
	changed("a new file", func() { must(t, os.WriteFile(s.path("d3/other"), []byte("x"), 0o644)) })
}
