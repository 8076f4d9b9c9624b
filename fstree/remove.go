package fstree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/tinehq/tine/internal/progress"
)

// RemoveAll removes path and everything beneath it like os.RemoveAll. When a
// read-only directory is in the way (as when not root) it makes every
// directory beneath path writable and tries again. A missing path is not an
// error.
func RemoveAll(path string) error {
	err := removeAll(path)
	if err != nil && errors.Is(err, fs.ErrPermission) {
		makeWritable(path)
		err = removeAll(path)
	}
	if err != nil {
		return fmt.Errorf("fstree: remove: %w", err)
	}
	return nil
}

// makeWritable gives the owner full access to every directory under root,
// best effort: errors surface in the RemoveAll that follows.
func makeWritable(root string) {
	_ = WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			_ = Chmod(p, 0o700)
		}
		return nil
	})
}

// ErrPinned is wrapped by the errors of Purge and MoveContents for a file
// whose immutable or append-only flag (chattr +i, +a) stops it being
// removed or renamed.
var ErrPinned = errors.New("immutable or append-only (chattr +i or +a)")

// Purge removes path and everything beneath it like RemoveAll and, as tine
// does for its own state (layers, views, upper directories; never a user's
// workspace), also clears the immutable and append-only flags (chattr -i
// -a) of any entry that stands in the way: a file an agent made immutable
// in its run must not leave an undeletable layer behind. Clearing flags
// needs CAP_LINUX_IMMUTABLE; without it the error wraps ErrPinned and names
// the file. A missing path is not an error.
func Purge(path string) error {
	err := RemoveAll(path)
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	cleared, cerr := clearPinned(path)
	if cerr != nil {
		return fmt.Errorf("fstree: remove %s: %w", path, cerr)
	}
	if !cleared {
		return err
	}
	return RemoveAll(path)
}

// PurgeContext is Purge that reports, when ctx carries a progress.Func,
// how many entries it has removed ("removing", total not known): entries
// are then removed one by one, deepest first, and whatever that cannot
// remove (a pinned file) is left to Purge. It is not stopped by ctx's end:
// a removal that has begun is finished.
func PurgeContext(ctx context.Context, path string) error {
	if progress.On(ctx) {
		n := 0
		_ = removeCounted(ctx, path, &n) // what is left, Purge removes or names
	}
	return Purge(path)
}

// removeCounted removes p and everything beneath it, deepest first,
// reporting each removed entry to ctx's progress.Func; it stops at the
// first error.
func removeCounted(ctx context.Context, p string, n *int) error {
	fi, err := Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		names, err := readNames(p)
		if err != nil {
			return err
		}
		for _, name := range names {
			if err := removeCounted(ctx, filepath.Join(p, name), n); err != nil {
				return err
			}
		}
	}
	if err := Remove(p); err != nil {
		return err
	}
	*n++
	progress.Report(ctx, "removing", *n, 0)
	return nil
}

// clearPinned clears the immutable and append-only flags of every entry
// under root, reporting whether any had them.
func clearPinned(root string) (bool, error) {
	found := false
	err := WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.Type()&(fs.ModeSymlink|fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			return nil
		}
		ok, err := clearFlagsInTheWay(p)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrPinned, err)
		}
		found = found || ok
		return nil
	})
	return found, err
}

// Pins are the chattr flags that pin a file where it is: immutable (+i),
// append-only (+a). They are set last, after a file's content, metadata
// and any rename, since a pinned file can be neither written nor renamed.
type Pins int

// The pins, as linux/fs.h numbers them.
const (
	PinImmutable Pins = 0x10 // FS_IMMUTABLE_FL, chattr +i
	PinAppend    Pins = 0x20 // FS_APPEND_FL, chattr +a
)

// ParsePins reads pins written as chattr's letters "i" and "a", as
// overlayfs records an upper entry's in its trusted.overlay.protattr
// attribute; other letters are ignored.
func ParsePins(letters string) Pins {
	var p Pins
	for _, c := range letters {
		switch c {
		case 'i':
			p |= PinImmutable
		case 'a':
			p |= PinAppend
		}
	}
	return p
}
