package overlay_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/overlay"
	"golang.org/x/sys/unix"
)

// chainNames are 23 directory names of 200 bytes: about 4.6 KB of path,
// longer than PATH_MAX.
func chainNames() []string {
	out := make([]string, 23)
	for i := range out {
		out[i] = fmt.Sprintf("d%02d", i) + strings.Repeat("x", 197)
	}
	return out
}

// chainAt opens root's chain one level at a time (making it when mk is
// set) and returns its deepest directory: no path longer than a name
// reaches the kernel.
func chainAt(t *testing.T, root string, mk bool) int {
	t.Helper()
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range chainNames() {
		if mk {
			if err := unix.Mkdirat(fd, n, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
				t.Fatal(err)
			}
		}
		next, err := unix.Openat(fd, n, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	return fd
}

// put writes content to file name in directory fd.
func put(t *testing.T, fd int, name, content string) {
	t.Helper()
	f, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(f)
	if _, err := unix.Write(f, []byte(content)); err != nil {
		t.Fatal(err)
	}
}

// TestChanges_LongPaths: below a path longer than PATH_MAX, a run's
// changed file, deleted file (a whiteout), directory made again (opaque)
// and renamed directory (redirect) are all found by Changes, and sealing
// the run copies them into a layer; the walk failed with "file name too
// long" at the first such path.
func TestChanges_LongPaths(t *testing.T) {
	enginetest.RequireOverlay(t, rootWhy)
	ctx := context.Background()
	root := t.TempDir()
	ws, l := filepath.Join(root, "ws"), filepath.Join(root, "layer0")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	fd := chainAt(t, ws, true)
	put(t, fd, "leaf.txt", "base\n")
	put(t, fd, "gone.txt", "bye\n")
	for _, d := range []string{"sub", "old"} {
		if err := unix.Mkdirat(fd, d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Symlinkat("../leaf.txt", fd, "sub/link"); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknodat(fd, "old/in.txt", unix.S_IFREG|0o644, 0); err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	b := overlay.New()
	if err := b.Import(ctx, ws, l, false); err != nil {
		t.Fatalf("Import: %.300v", err)
	}
	r := layer.Run{ID: "r", Dir: filepath.Join(root, "run"), View: filepath.Join(root, "run", "view")}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := b.Activate(ctx, r, []string{l}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Deactivate(ctx, r) })

	fd = chainAt(t, r.View, false)
	put(t, fd, "leaf.txt", "run\n")
	for _, op := range []error{
		unix.Unlinkat(fd, "gone.txt", 0),
		unix.Unlinkat(fd, "sub/link", 0),
		unix.Unlinkat(fd, "sub", unix.AT_REMOVEDIR),
		unix.Mkdirat(fd, "sub", 0o755),
		unix.Renameat(fd, "old", fd, "moved"),
	} {
		if op != nil {
			t.Fatal(op)
		}
	}
	put(t, fd, "sub/fresh.txt", "fresh\n")
	unix.Close(fd)

	changes, err := b.Changes(ctx, r, []string{l})
	if err != nil {
		t.Fatalf("Changes: %.300v", err)
	}
	chain := strings.Join(chainNames(), "/") + "/"
	got := map[string]layer.Kind{}
	for _, c := range changes {
		if !strings.HasPrefix(c.Path, chain) {
			t.Errorf("change of %.60q..., not below the chain", c.Path)
			continue
		}
		got[strings.TrimPrefix(c.Path, chain)] = c.Kind
	}
	want := map[string]layer.Kind{
		"leaf.txt": layer.Modified, "gone.txt": layer.Deleted,
		"sub/link": layer.Deleted, "sub/fresh.txt": layer.Added,
		"old": layer.Deleted, "old/in.txt": layer.Deleted,
		"moved": layer.Added, "moved/in.txt": layer.Added,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Changes below the chain:\n got %v\nwant %v", got, want)
	}

	if _, err := b.Seal(ctx, r, []string{l}, filepath.Join(root, "layer1")); err != nil {
		t.Fatalf("Seal: %.300v", err)
	}
	fd = chainAt(t, filepath.Join(root, "layer1"), false)
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstatat(fd, "leaf.txt", &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Size != int64(len("run\n")) {
		t.Errorf("sealed layer's leaf.txt: size %d, %v", st.Size, err)
	}
}
