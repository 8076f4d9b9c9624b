package layer

import (
	"context"
	"io/fs"
	"time"
)

// Backend stores immutable layers of a workspace and gives each run a
// private, writable view of a version (a stack of layers, bottom first).
//
// The engine owns every path: it chooses a path per layer and per run under
// the state directory and passes them in (a layer path does not exist yet;
// the backend creates it, as a directory or a subvolume), so backends keep
// no bookkeeping of their own and a crash leaves only directories that the
// sweeper can match against the store.
//
// The lifecycle, for a workspace at /src:
//
//	Import(ctx, "/src", L0, move)        // L0 holds the workspace's files
//	Activate(ctx, src, []string{L0})     // src.View shows them, writable
//	... the run writes into src.View ...
//	Seal(ctx, src, []string{L0}, L1)     // returns the fork point's layers
//	Activate(ctx, fork, layers)          // fork.View starts from that point
//	Changes(ctx, fork, layers)           // what the fork changed since
//	Deactivate(ctx, fork)                // fork's view and delta are gone
//
// Stacking backends (overlay) return lowers+[new] from Seal, so a layer holds
// only a delta with whiteouts (character device 0/0) for deletions and the
// opaque mark on directories that replace their lower contents. Flat
// backends (btrfs, reflink, copy) return [new], a whole tree.
type Backend interface {
	// Name returns the backend's name as stored and shown: "overlay",
	// "btrfs", "reflink" or "copy".
	Name() string

	// Import creates layer holding the contents of directory dir. When move
	// is true the backend may move the entries (dir is left empty, the caller
	// mounts the source view over it); otherwise dir is untouched.
	Import(ctx context.Context, dir, layer string, move bool) error

	// Activate creates r's writable view of the version made of layers at
	// r.View, keeping private state (an overlay upper, say) under r.Dir.
	// r.View does not exist or is an empty directory.
	Activate(ctx context.Context, r Run, layers []string) error

	// Seal records r's current files into the new layer (a path that does
	// not exist yet) and
	// returns the layers of the resulting version, bottom first. r's view
	// stays as it is; base is the version r's view was activated with.
	Seal(ctx context.Context, r Run, base []string, layer string) ([]string, error)

	// Changes lists, sorted by path, where r's view differs from the version
	// made of base.
	Changes(ctx context.Context, r Run, base []string) ([]Change, error)

	// Deactivate removes r's view (the directory r.View itself included)
	// and private state; layers are untouched. For a flat backend the
	// source's view may be a workspace directory that was never activated.
	// Deactivating a run that is not active is not an error.
	Deactivate(ctx context.Context, r Run) error

	// Read makes the version made of layers readable at a directory and
	// returns it with a function that releases it. scratch is a path that
	// does not exist, which the backend may use as a mount point; a flat
	// backend returns layers[0] itself.
	Read(ctx context.Context, layers []string, scratch string) (dir string, release func() error, err error)

	// RemoveLayer deletes a layer no version refers to any more. Removing a
	// layer that does not exist is not an error.
	RemoveLayer(ctx context.Context, layer string) error
}

// Restorer is implemented by backends whose views do not survive a reboot
// (mounts): Restore brings r's view back if it is missing.
type Restorer interface {
	Restore(ctx context.Context, r Run, layers []string) error
}

// Mover is implemented by stacking backends that can seal in O(1): SealMove
// turns r's delta itself into the new layer l, leaving r an empty delta
// over the new version (its old layers plus l). r's view must not be
// mounted; the caller mounts it again with Restore. MaxDepth is the deepest
// stack the backend accepts before it must compact (Seal does that).
type Mover interface {
	Restorer
	SealMove(ctx context.Context, r Run, layer string) error
	MaxDepth() int
}

// Incremental is implemented by stacking backends that can seal a run
// whose view stays mounted (a busy source: a shell has its cwd in it) in
// O(change) instead of copying its whole delta each time. SealOnto records
// r's current files into the new layer l and returns the resulting
// version's layers. prev are the layers of the last version sealed from r
// over base (base plus the layers earlier seals stacked on it), or nil.
// When the backend still knows what prev holds, l holds only what r
// changed since (changed entries, whiteouts for deletions) and the version
// is prev plus l; otherwise l is a copy of r's whole delta (Whole is set)
// and the version is base plus l. When the backend knows that nothing
// changed since prev, it makes no layer and returns prev (Unchanged is
// set). A stack that would grow too deep is handled as Seal handles it.
type Incremental interface {
	SealOnto(ctx context.Context, r Run, base, prev []string, l string) ([]string, SealCost, error)
}

// ChainMax is how many layers incremental seals (Incremental) stack on a
// run's base before the next seal copies the run's whole delta again,
// starting a new chain: it bounds the depth forks of a busy source are
// mounted with.
const ChainMax = 16

// Settling is an Incremental backend whose process follows, with a change
// tracker, when each run's delta last changed: a daemon seals a busy run
// in the background once its writes settle, so its next fork copies only
// what changed since. Changed reports whether r's delta changed since its
// last seal by copy and when it last did; known is false when nothing
// follows r (no tracker, or no seal by copy of r yet).
type Settling interface {
	Changed(r Run) (changed bool, last time.Time, known bool)
}

// SealCost is what a seal by copy copied.
type SealCost struct {
	Whole bool  `json:"whole"` // the whole delta was copied, not only what changed since the last seal
	Files int   `json:"files"` // entries copied (files, directories, links, whiteouts)
	Bytes int64 `json:"bytes"` // bytes of file data copied
	// Pruned is set when a change tracker named the directories that
	// changed, so only those were walked.
	Pruned bool `json:"pruned,omitempty"`
	// Unchanged is set when nothing changed since the previous seal (the
	// change tracker vouched for it, or the walk found it): no layer was
	// made, and the layers returned are the previous seal's.
	Unchanged bool `json:"unchanged,omitempty"`
}

// Run is what a backend needs to know of a run: where its private state and
// its view live.
type Run struct {
	ID   string
	Dir  string // private directory for the backend, exists
	View string // where the run's files must appear
}

// Kind says how a path changed.
type Kind string

// Kinds of change.
const (
	Added       Kind = "added"
	Modified    Kind = "modified"
	Deleted     Kind = "deleted"
	TypeChanged Kind = "type_changed" // e.g. a file became a directory or a symlink
)

// Change is one path that differs between a version and a run's view.
type Change struct {
	Path    string `json:"path"` // slash-separated, relative to the workspace
	Kind    Kind   `json:"kind"`
	Type    string `json:"type"`     // "file", "dir", "symlink" or "other": the new type, or the old one when deleted
	Size    int64  `json:"size"`     // bytes now (0 when deleted)
	OldSize int64  `json:"old_size"` // bytes in the version (0 when added)
}

// TypeOf names the type of a file mode as Change.Type does.
func TypeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}

// SizeOf is the byte count a Change reports for a file: its length for
// regular files and symlinks, zero for everything else.
func SizeOf(fi fs.FileInfo) int64 {
	if fi.Mode().IsRegular() || fi.Mode()&fs.ModeSymlink != 0 {
		return fi.Size()
	}
	return 0
}

// Stat sums a list of changes: how many of each kind, and bytes before and
// after.
type Stat struct {
	Added       int   `json:"added"`
	Modified    int   `json:"modified"`
	Deleted     int   `json:"deleted"`
	TypeChanged int   `json:"type_changed"`
	BytesBefore int64 `json:"bytes_before"`
	BytesAfter  int64 `json:"bytes_after"`
}

// Summarize sums changes into a Stat.
func Summarize(changes []Change) Stat {
	var s Stat
	for _, c := range changes {
		switch c.Kind {
		case Added:
			s.Added++
		case Modified:
			s.Modified++
		case Deleted:
			s.Deleted++
		case TypeChanged:
			s.TypeChanged++
		}
		s.BytesBefore += c.OldSize
		s.BytesAfter += c.Size
	}
	return s
}
