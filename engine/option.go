package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/layer"
)

// StoreFile is the store as the engine opens it from its file in the state
// directory: besides tine.Store, it checks its own integrity and carries an
// id, which the state directory records beside the workspaces, so that a
// store that is not theirs is refused.
type StoreFile interface {
	tine.Store
	// Check verifies the store's integrity; it wraps tine.ErrStore when
	// the store is damaged.
	Check(ctx context.Context) error
	// ID returns the store's id and when it was created.
	ID(ctx context.Context) (id string, created time.Time, err error)
	// SetID gives the store another id (a rebuilt store takes the id the
	// workspaces record).
	SetID(ctx context.Context, id string, created time.Time) error
}

// Option configures Open, and the functions that work on a state directory
// without opening an engine (CheckStore, Diagnose, SetAside, Rebuild,
// Purge), which take the same options.
type Option func(*options)

type options struct {
	open     func(path string) (StoreFile, error)
	server   string // the store's server, for WithStoreServer; "" for a store file
	drivers  layer.Drivers
	warnings io.Writer
	runtime  func(*Engine) Runtime      // see WithRuntime
	control  func(*Engine) ControlPlane // see WithControl
	noSweep  bool                       // see WithoutSweep
}

// WithStore says how to open the store file of the state directory; tine
// passes sqlite.Open. open creates the file when it is missing (the engine
// decides when a fresh store may be created) and returns an error wrapping
// tine.ErrStore for a file that is not a store. Required.
func WithStore[S StoreFile](open func(path string) (S, error)) Option {
	return func(o *options) {
		o.server = ""
		o.open = func(path string) (StoreFile, error) {
			st, err := open(path)
			if err != nil {
				return nil, err
			}
			return st, nil
		}
	}
}

// WithStoreServer says the store is not a file of the state directory but
// a database on a server (PostgreSQL, see package store): open connects to
// it, and where names it in messages (its URL without a password). It
// replaces WithStore. The state directory still records the store's id
// beside its workspaces, so a store that is not theirs (an empty database,
// another state directory's) is refused as a foreign store file is; tine
// doctor --rebuild refuses to refill a server's store, whose backups are
// the server's.
func WithStoreServer[S StoreFile](where string, open func() (S, error)) Option {
	return func(o *options) {
		o.server = where
		o.open = func(string) (StoreFile, error) {
			st, err := open()
			if err != nil {
				return nil, err
			}
			return st, nil
		}
	}
}

// WithBackends registers the file backends, in the order "auto" tries
// them. A workspace whose backend is not registered cannot be used.
// Required by Open.
func WithBackends(ds ...layer.Driver) Option {
	return func(o *options) { o.drivers = append(o.drivers, ds...) }
}

// WithWarnings sets where warnings go: what the sweeper could not put
// right, and other problems that never stop a command (default: standard
// error).
func WithWarnings(w io.Writer) Option {
	return func(o *options) { o.warnings = w }
}

// WithoutSweep makes Open leave the sweep to the daemon that serves the
// state directory (tine serve): it sweeps when it starts, on its schedule
// and after what it finds unfinished, and does the work the command asks
// for, so a command that only sends that work to it costs its own work,
// not a check of every workspace's live runs.
func WithoutSweep() Option {
	return func(o *options) { o.noSweep = true }
}

var (
	errNoStore    = errors.New("engine: no store to open (engine.WithStore)")
	errNoBackends = errors.New("engine: no backends registered (engine.WithBackends)")
)

// newOptions applies opts; the store is required.
func newOptions(opts []Option) (*options, error) {
	o := &options{warnings: os.Stderr}
	for _, opt := range opts {
		opt(o)
	}
	if o.open == nil {
		return nil, errNoStore
	}
	return o, nil
}

// openingOptions applies opts for what opens the state directory home
// (Open, Rebuild), which needs the store and the backends, and makes home
// absolute.
func openingOptions(home string, opts []Option) (*options, string, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, "", err
	}
	if len(o.drivers) == 0 {
		return nil, "", errNoBackends
	}
	home, err = filepath.Abs(home)
	return o, home, err
}
