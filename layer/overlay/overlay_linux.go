package overlay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/internal/testhook"
	"github.com/tinehq/tine/layer"
	"golang.org/x/sys/unix"
)

var _ layer.Backend = (*Backend)(nil)
var _ layer.Restorer = (*Backend)(nil)

// options fixes the overlay features tine relies on: directory renames by
// redirect (without them renaming a directory that comes from a lower layer
// fails with EXDEV, which git mv, os.rename and package managers meet), no
// metadata-only copy-up and no index, so an upper directory holds plain
// files, whiteouts, opaque marks and redirected directories (hasRedirect)
// that Changes and release know how to read.
const options = "redirect_dir=on,index=off,metacopy=off"

// hasRedirect reports whether the directory at p (in an upper directory or
// a layer) is one a rename put there: its contents are those of the lower
// directory its trusted.overlay.redirect attribute names, merged with its
// own entries.
func hasRedirect(p string) bool {
	_, err := fstree.Lgetxattr(p, "trusted.overlay.redirect")
	return err == nil
}

// Probe mounts a tiny overlay inside dir to find whether this machine and
// user can use the backend. It never looks at the kernel version.
func Probe(dir string) error {
	tmp, err := os.MkdirTemp(dir, ".tine-probe-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, d := range []string{"lower", "upper", "work", "merged"} {
		if err := os.Mkdir(filepath.Join(tmp, d), 0o700); err != nil {
			return err
		}
	}
	r := layer.Run{Dir: tmp, View: filepath.Join(tmp, "merged")}
	if err := mountView(r, []string{filepath.Join(tmp, "lower")}); err != nil {
		if errors.Is(err, unix.EPERM) {
			return fmt.Errorf("overlay mounts need root: %w", tine.ErrPrivilege)
		}
		return fmt.Errorf("overlay: %w: %w", tine.ErrUnsupported, err)
	}
	return mnt.Unmount(r.View, 0)
}

// Import creates layer l from the contents of dir: by renaming the entries
// when move is set and both are on one filesystem (O(1) per entry), by
// copying otherwise. When move is set dir ends up empty either way, and
// only after every byte is in the layer.
func (b *Backend) Import(ctx context.Context, dir, l string, move bool) error {
	if err := os.Mkdir(l, 0o755); err != nil {
		return err
	}
	if err := fstree.CopyAttrs(dir, l); err != nil {
		return err
	}
	if move {
		err := fstree.MoveContents(dir, l)
		if err == nil || !errors.Is(err, syscall.EXDEV) {
			return err
		}
	}
	if err := fstree.Copy(ctx, dir, l, fstree.CopyOptions{KeepPins: true}); err != nil {
		return err
	}
	if move {
		return emptyDir(dir)
	}
	return nil
}

// Activate mounts layers (bottom first) under a fresh upper directory at r.View.
func (b *Backend) Activate(ctx context.Context, r layer.Run, layers []string) error {
	if len(layers) == 0 {
		return fmt.Errorf("overlay: activate %s: no layers: %w", r.ID, tine.ErrInvalid)
	}
	for _, d := range []string{upper(r), work(r), r.View} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// The view's root takes the upper directory's attributes: give it the
	// version's, so the workspace root keeps its mode, owner and times.
	if err := fstree.CopyAttrs(layers[len(layers)-1], upper(r)); err != nil {
		return err
	}
	if err := writeLayers(r, layers); err != nil {
		return err
	}
	return mountView(r, layers)
}

// Restore remounts r's view over its existing upper directory if it is not
// mounted, as after a reboot.
func (b *Backend) Restore(ctx context.Context, r layer.Run, layers []string) error {
	if ok, err := mnt.IsMountpoint(r.View); err == nil && ok {
		return nil
	}
	if err := os.MkdirAll(r.View, 0o755); err != nil {
		return err
	}
	if err := writeLayers(r, layers); err != nil {
		return err
	}
	return mountView(r, layers)
}

// SealMove turns r's upper directory into the new layer l by renaming it
// (O(1) whatever the delta's size) and gives r an empty upper and work
// directory. r's view must not be mounted anywhere: the caller unmounts it
// first and mounts it again, over the new version, with Restore.
func (b *Backend) SealMove(ctx context.Context, r layer.Run, l string) error {
	if ok, err := mnt.IsMountpoint(r.View); err != nil || ok {
		return fmt.Errorf("overlay: seal-by-rename of %s: view still mounted: %w", r.ID, unix.EBUSY)
	}
	if err := os.Rename(upper(r), l); err != nil {
		return fmt.Errorf("overlay: seal-by-rename of %s: %w", r.ID, err)
	}
	removeManifests(r) // they describe the delta just moved
	if err := os.Mkdir(upper(r), 0o755); err != nil {
		return err
	}
	if err := fstree.CopyAttrs(l, upper(r)); err != nil {
		return err
	}
	if err := removeAll(work(r)); err != nil {
		return err
	}
	return os.Mkdir(work(r), 0o755)
}

// MaxDepth reports the stack depth past which Seal compacts.
func (b *Backend) MaxDepth() int { return b.maxDepth }

// sealCopy is how Seal copies: r may be running, and processes outside tine
// (git gc in the workspace) may change what it copies meanwhile, so an
// entry that vanishes mid-copy is left out, not an error.
// The chattr +i and +a of its files are kept, as flags: overlay keeps those
// set through a view in an attribute of the upper entry, which it honours
// in an upper directory only.
var sealCopy = fstree.CopyOptions{SkipVanished: true, KeepPins: true, PinsXattr: "trusted.overlay.protattr"}

// Seal copies r's upper directory, whiteouts and opaque marks included, into
// the new layer l, and returns base plus l. r's mount is not touched, and r
// may keep running: an entry removed while Seal copies is left out. When
// the stack would grow past the maximum depth, the whole view is copied into
// l instead and the version is that one layer. Sparse files stay sparse.
func (b *Backend) Seal(ctx context.Context, r layer.Run, base []string, l string) ([]string, error) {
	if err := os.Mkdir(l, 0o755); err != nil {
		return nil, err
	}
	if len(base)+1 > b.maxDepth {
		if err := fstree.Copy(ctx, r.View, l, sealCopy); err != nil {
			return nil, fmt.Errorf("overlay: compact %s: %w", r.ID, err)
		}
		return []string{l}, nil
	}
	if err := fstree.Copy(ctx, upper(r), l, sealCopy); err != nil {
		return nil, fmt.Errorf("overlay: seal %s: %w", r.ID, err)
	}
	out := make([]string, 0, len(base)+1)
	return append(append(out, base...), l), nil
}

// Deactivate unmounts r's view and removes it with r's upper and work
// directories. A view that is in use stays, and the error says so.
func (b *Backend) Deactivate(ctx context.Context, r layer.Run) error {
	if err := mnt.UnmountAll(r.View); err != nil {
		if errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("overlay: %s is in use by a process: %w", r.View, err)
		}
		return err
	}
	if t := current(); t != nil {
		t.forget(upper(r))
	}
	// The upper directory is the run's delta, the part that can take long:
	// its removal reports progress.
	if err := fstree.PurgeContext(ctx, upper(r)); err != nil {
		return err
	}
	stale, _ := filepath.Glob(work(r) + ".stale-*")
	for _, d := range append([]string{r.View, work(r), layersFile(r)}, stale...) {
		if err := removeAll(d); err != nil {
			return err
		}
	}
	removeManifests(r)
	return nil
}

// RemoveLayer deletes layer directory l.
func (b *Backend) RemoveLayer(ctx context.Context, l string) error { return removeAll(l) }

func upper(r layer.Run) string      { return filepath.Join(r.Dir, "upper") }
func work(r layer.Run) string       { return filepath.Join(r.Dir, "work") }
func layersFile(r layer.Run) string { return filepath.Join(r.Dir, "layers.json") }

// mountView mounts layers with r's upper and work directories at r.View.
// Overlay mounts a view read-only, saying so only in the kernel's log,
// when it cannot reset the work directory (left full by a crash, or in use
// by an old mount of the view still alive in another mount namespace): a
// run whose files then refuse every write. So the work directory is moved
// aside for an empty one and the view mounted again; a view still
// read-only is an error.
func mountView(r layer.Run, layers []string) error {
	err := mountWritable(r, layers)
	if !errors.Is(err, errReadOnly) {
		return err
	}
	if err := os.Rename(work(r), staleWork(r)); err != nil {
		return err
	}
	if err := os.Mkdir(work(r), 0o755); err != nil {
		return err
	}
	return mountWritable(r, layers)
}

// errReadOnly is a view overlay mounted read-only.
var errReadOnly = errors.New("mounted read-only")

// mountWritable mounts r's view, and unmounts it again, with an error
// wrapping errReadOnly, when overlay made it read-only.
func mountWritable(r layer.Run, layers []string) error {
	data := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s,%s",
		lowerdir(layers), escape(upper(r)), escape(work(r)), options)
	if err := mnt.Mount("overlay", r.View, "overlay", 0, data); err != nil {
		return err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(r.View, &st); err != nil || st.Flags&unix.ST_RDONLY == 0 {
		return nil
	}
	if err := mnt.Unmount(r.View, 0); err != nil {
		return err
	}
	return fmt.Errorf("overlay: the view %s came up read-only: its work directory %s could not be reset (the kernel's log says why): %w", r.View, work(r), errReadOnly)
}

// staleWork is a new name beside r's work directory for one overlay could
// not reset; Deactivate removes them with the run.
func staleWork(r layer.Run) string {
	return fmt.Sprintf("%s.stale-%d", work(r), time.Now().UnixNano())
}

// mountReadOnly mounts layers without an upper directory at target.
// Overlay needs two lowers for that; a single layer is a whole tree and is
// returned as it is, with nothing mounted.
func mountReadOnly(layers []string, target string) (string, func() error, error) {
	if len(layers) == 1 {
		return layers[0], func() error { return nil }, nil
	}
	// Held while the mount is up: a command that dies drops it, and the
	// sweeper then knows the mount for a leftover (engine.sweepScratch).
	// The target's directory may not exist yet (a combine's staging).
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return "", nil, err
	}
	unlock, err := flock.Lock(target + ".lock")
	if err != nil {
		return "", nil, err
	}
	done := func() {
		os.Remove(target + ".lock")
		unlock()
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		done()
		return "", nil, err
	}
	data := "lowerdir=" + lowerdir(layers) + "," + options
	if err := mnt.Mount("overlay", target, "overlay", unix.MS_RDONLY, data); err != nil {
		os.Remove(target)
		done()
		return "", nil, err
	}
	testhook.Pause("scratch")
	return target, func() error {
		if err := mnt.Unmount(target, 0); err != nil {
			return err
		}
		defer done()
		return os.Remove(target)
	}, nil
}

// lowerdir lists layers top first, as overlay wants them.
func lowerdir(layers []string) string {
	parts := make([]string, len(layers))
	for i, l := range layers {
		parts[len(layers)-1-i] = escape(l)
	}
	return strings.Join(parts, ":")
}

// escape protects the characters overlay's option parser splits on.
func escape(p string) string {
	return strings.NewReplacer(`\`, `\\`, `:`, `\:`, `,`, `\,`).Replace(p)
}

func writeLayers(r layer.Run, layers []string) error {
	b, err := json.Marshal(layers)
	if err != nil {
		return err
	}
	return os.WriteFile(layersFile(r), b, 0o644)
}

func readLayers(r layer.Run) ([]string, error) {
	b, err := os.ReadFile(layersFile(r))
	if err != nil {
		return nil, err
	}
	var layers []string
	return layers, json.Unmarshal(b, &layers)
}

func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// removeAll removes p even where the overlay work directory left
// directories without write permission, or an agent made a file in its
// view immutable or append-only (chattr +i, +a; the flag lands on the
// upper directory's copy, and from there in a layer sealed by rename).
func removeAll(p string) error { return fstree.Purge(p) }

// Read mounts layers read-only at scratch (or returns the only layer).
func (b *Backend) Read(ctx context.Context, layers []string, scratch string) (string, func() error, error) {
	return mountReadOnly(layers, scratch)
}
