package copyfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// Backend is a flat layer.Backend that copies whole trees: a layer is a
// directory holding a complete workspace, a view is a private copy of one.
// It works on any filesystem and platform, at the cost of time and space
// proportional to the workspace. The reflink backend is this one with
// cloned file data.
type Backend struct {
	name string
	opt  fstree.CopyOptions
}

var _ layer.Backend = (*Backend)(nil)

// Option tunes a Backend made by New.
type Option func(*Backend)

// WithName sets the name Backend.Name returns (default "copy").
func WithName(name string) Option { return func(b *Backend) { b.name = name } }

// WithCopyOptions sets how file data is copied (default: bytes).
func WithCopyOptions(opt fstree.CopyOptions) Option {
	return func(b *Backend) { b.opt = opt }
}

// New returns a copy backend.
func New(opts ...Option) *Backend {
	b := &Backend{name: "copy"}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Name returns the backend's name, "copy" unless set with WithName.
func (b *Backend) Name() string { return b.name }

// Import copies the contents of dir into the new layer. It always copies,
// whatever move says: for a flat backend the workspace directory stays the
// source's view, so its files must stay where they are.
func (b *Backend) Import(ctx context.Context, dir, layer string, _ bool) error {
	if err := b.copyNew(ctx, dir, layer); err != nil {
		return fmt.Errorf("%s: import %s: %w", b.name, dir, err)
	}
	return nil
}

// Activate copies the one layer of a flat version into r.View, creating it
// if missing.
func (b *Backend) Activate(ctx context.Context, r layer.Run, layers []string) error {
	if err := flat(layers); err != nil {
		return fmt.Errorf("%s: activate %s: %w", b.name, r.ID, err)
	}
	created, err := mkdirView(r.View)
	if err == nil {
		err = fstree.Copy(ctx, layers[0], r.View, b.copyOptions())
	}
	if err != nil {
		if created {
			_ = fstree.Purge(r.View)
		}
		return fmt.Errorf("%s: activate %s: %w", b.name, r.ID, err)
	}
	return nil
}

// Seal copies r's view into the new layer and returns it as the whole
// version: a flat layer holds a complete tree.
func (b *Backend) Seal(ctx context.Context, r layer.Run, _ []string, layer string) ([]string, error) {
	if err := b.copyNew(ctx, r.View, layer); err != nil {
		return nil, fmt.Errorf("%s: seal %s: %w", b.name, r.ID, err)
	}
	return []string{layer}, nil
}

// Changes compares r's view with the one layer of base.
func (b *Backend) Changes(ctx context.Context, r layer.Run, base []string) ([]layer.Change, error) {
	if err := flat(base); err != nil {
		return nil, fmt.Errorf("%s: changes of %s: %w", b.name, r.ID, err)
	}
	changes, err := fstree.Diff(ctx, base[0], r.View)
	if err != nil {
		return nil, fmt.Errorf("%s: changes of %s: %w", b.name, r.ID, err)
	}
	return changes, nil
}

// Deactivate removes r's view and whatever is inside r.Dir (the directory
// itself belongs to the engine). A missing view is not an error.
func (b *Backend) Deactivate(_ context.Context, r layer.Run) error {
	if err := RemoveRun(r); err != nil {
		return fmt.Errorf("%s: deactivate %s: %w", b.name, r.ID, err)
	}
	return nil
}

// Read returns the one layer of a flat version itself, with nothing to
// release; scratch is not used. The caller must not write there.
func (b *Backend) Read(_ context.Context, layers []string, _ string) (string, func() error, error) {
	if err := flat(layers); err != nil {
		return "", nil, fmt.Errorf("%s: read: %w", b.name, err)
	}
	return layers[0], func() error { return nil }, nil
}

// RemoveLayer deletes the layer's tree, immutable files included (see
// fstree.Purge); a missing layer is not an error.
func (b *Backend) RemoveLayer(_ context.Context, layer string) error {
	if err := fstree.Purge(layer); err != nil {
		return fmt.Errorf("%s: remove layer: %w", b.name, err)
	}
	return nil
}

// copyNew creates directory dst and copies the live tree src (a workspace,
// a run's view) into it, removing dst again if the copy fails. Whatever
// changes src meanwhile, an entry that vanishes mid-copy is left out, not
// an error.
func (b *Backend) copyNew(ctx context.Context, src, dst string) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	opt := b.copyOptions()
	opt.SkipVanished = true
	if err := fstree.Copy(ctx, src, dst, opt); err != nil {
		return errors.Join(err, fstree.Purge(dst))
	}
	return nil
}

// copyOptions is how the backend copies: as set, and keeping every file's
// chattr +i and +a, so that a layer and a view hold the files as the
// workspace had them (and a promoted fork's or a rolled back source's
// workspace directory keeps them).
func (b *Backend) copyOptions() fstree.CopyOptions {
	opt := b.opt
	opt.KeepPins = true
	return opt
}

// RemoveRun removes r.View and the contents of r.Dir, tolerating either
// being missing, and clearing any chattr +i or +a an agent set in its view
// (fstree.Purge). Flat backends share it.
func RemoveRun(r layer.Run) error {
	errs := []error{fstree.Purge(r.View)}
	names, err := readNames(r.Dir)
	errs = append(errs, err)
	for _, name := range names {
		errs = append(errs, fstree.Purge(filepath.Join(r.Dir, name)))
	}
	return errors.Join(errs...)
}

// readNames returns the names in dir; a missing dir has none.
func readNames(dir string) ([]string, error) {
	if dir == "" {
		return nil, nil
	}
	f, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// mkdirView makes the view directory unless it exists, reporting whether it
// made it.
func mkdirView(view string) (bool, error) {
	err := os.Mkdir(view, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// flat returns an error wrapping tine.ErrInvalid unless layers is a flat
// version: exactly one layer.
func flat(layers []string) error {
	if len(layers) != 1 {
		return fmt.Errorf("a flat backend's version has exactly one layer, got %d: %w", len(layers), tine.ErrInvalid)
	}
	return nil
}
