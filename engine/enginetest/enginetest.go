// Package enginetest builds the engines tests run against: an engine on a
// fresh state directory with one workspace on a chosen backend, released
// and unmounted when the test ends, and the skips for machines that
// cannot run a backend. Every package's tests build their engine here, so
// that how an engine is opened is written once.
package enginetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/loopfs"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/layer/builtin"
	"github.com/tinehq/tine/layer/overlay"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/sqlite"
)

// Options say what [New] makes. The zero value is an empty workspace on
// the copy backend, which needs no root.
type Options struct {
	// Backend is the workspace's: copy (the default), overlay, btrfs or
	// reflink. New skips the test when the machine cannot run it:
	// overlay needs root and overlay mounts, btrfs and reflink a loop
	// filesystem (btrfs, xfs) that the state directory and the workspace
	// share.
	Backend string
	// Name is the workspace's name; empty: the directory's base name
	// ("ws" unless Path is set).
	Name string
	// Files are written into the workspace before it is taken under
	// management, by slash path.
	Files map[string]string
	// Owner is who the workspace belongs to; nil: this process's user.
	Owner *engine.Owner
	// Home and Path, when set, are the state directory and the
	// workspace's path; by default fresh directories under [Root]. Files
	// already at Path stay and are taken under management with the rest.
	Home, Path string
}

// Workspace is an engine with one workspace taken under management.
type Workspace struct {
	Engine *engine.Engine
	Source engine.Ref // the workspace's source run
	Home   string     // the state directory
	Path   string     // the workspace path (the source's view)
}

// New opens an engine on a fresh state directory and inits one workspace
// as o says. When the test ends the workspace is released (its files left
// at its path), the engine closed and whatever is still mounted under the
// path unmounted; a release that fails is a test error.
func New(tb testing.TB, o Options) *Workspace {
	tb.Helper()
	if o.Backend == "" {
		o.Backend = "copy"
	}
	w := &Workspace{Home: o.Home, Path: o.Path}
	switch {
	case w.Home == "" || w.Path == "":
		root := Root(tb, o.Backend)
		if w.Home == "" { // short: supervisor sockets are below it, and bounded
			w.Home = filepath.Join(root, "h")
		}
		if w.Path == "" {
			w.Path = filepath.Join(root, "ws")
		}
	case o.Backend == "overlay":
		RequireOverlay(tb, "the overlay backend mounts")
	}
	WriteFiles(tb, w.Path, o.Files)
	ctx := context.Background()
	w.Engine = Open(tb, w.Home)
	tb.Cleanup(func() {
		if _, err := w.Engine.Release(ctx, w.Path, true); err != nil && !errors.Is(err, tine.ErrNotFound) {
			tb.Errorf("Release: %v", err)
		}
		mnt.UnmountAll(w.Path)
	})
	ref, err := w.Engine.Init(ctx, engine.InitOptions{Path: w.Path, Backend: o.Backend, Name: o.Name, Owner: o.Owner})
	if err != nil {
		tb.Fatalf("Init %s: %v", o.Backend, err)
	}
	w.Source = ref
	return w
}

// Root returns a fresh directory where backend works, for a state
// directory and workspaces that share its filesystem (a loop-mounted one
// for btrfs and reflink); it skips the test when the machine cannot run
// backend.
func Root(tb testing.TB, backend string) string {
	tb.Helper()
	switch backend {
	case "overlay":
		RequireOverlay(tb, "the overlay backend mounts")
	case "btrfs":
		return loopfs.Mount(tb, "btrfs")
	case "reflink":
		return loopfs.Mount(tb, "xfs")
	}
	return tb.TempDir()
}

// Open opens an engine on state directory home, wired as tine wires it
// (EngineOptions) plus opts, and closes it when the test ends (after the
// cleanups registered later, as t.Cleanup runs them last first).
func Open(tb testing.TB, home string, opts ...engine.Option) *engine.Engine {
	tb.Helper()
	e, err := engine.Open(context.Background(), home, EngineOptions(opts...)...)
	if err != nil {
		tb.Fatalf("engine.Open: %v", err)
	}
	tb.Cleanup(func() { e.Close() })
	return e
}

// EngineOptions are the options tine opens its engine with (the SQLite
// store, tine's backends, the process runtime and the control plane, as
// cmd/tine wires them), then extra.
func EngineOptions(extra ...engine.Option) []engine.Option {
	return append([]engine.Option{engine.WithStore(sqlite.Open), engine.WithBackends(builtin.Backends()...),
		runtime.With(runtime.Options{}), control.With()}, extra...)
}

// RequireOverlay skips the test unless it runs as root where overlay
// mounts work; why says what needs them.
func RequireOverlay(tb testing.TB, why string) {
	tb.Helper()
	testkit.RequireRoot(tb, why)
	if err := overlay.Probe(tb.TempDir()); err != nil {
		tb.Skipf("requires overlay mounts (%s): %v", why, err)
	}
}

// WriteFiles writes files (contents by slash path) under root, making
// the directories.
func WriteFiles(tb testing.TB, root string, files map[string]string) {
	tb.Helper()
	if err := os.MkdirAll(root, 0o755); err != nil {
		tb.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}
