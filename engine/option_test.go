package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/layer/builtin"
	"github.com/tinehq/tine/layer/copyfs"
	"github.com/tinehq/tine/sqlite"
)

// testOptions are what tests open engines with: tine's SQLite store and
// backends, then extra.
func testOptions(extra ...Option) []Option {
	return append([]Option{WithStore(sqlite.Open), WithBackends(builtin.Backends()...)}, extra...)
}

// TestOpen_NeedsStoreAndBackends: the engine wires nothing itself; without
// a store or backends Open says which option is missing and creates
// nothing.
func TestOpen_NeedsStoreAndBackends(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string][]Option{
		"no store":    {WithBackends(builtin.Backends()...)},
		"no backends": {WithStore(sqlite.Open)},
	} {
		home := filepath.Join(t.TempDir(), "home")
		e, err := Open(ctx, home, opts...)
		if err == nil {
			e.Close()
			t.Errorf("%s: Open succeeded", name)
			continue
		}
		want := map[string]string{"no store": "WithStore", "no backends": "WithBackends"}[name]
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Open = %v, want it to name %s", name, err, want)
		}
		if _, err := os.Stat(home); !os.IsNotExist(err) {
			t.Errorf("%s: Open left %s behind: %v", name, home, err)
		}
	}
	if _, err := CheckStore(ctx, t.TempDir()); !errors.Is(err, errNoStore) {
		t.Errorf("CheckStore without a store = %v", err)
	}
}

// TestOpen_RegisteredBackends: auto takes the first registered backend
// whose probe passes, in the order given, and a name that is not
// registered is refused naming those that are.
func TestOpen_RegisteredBackends(t *testing.T) {
	ctx := context.Background()
	probed := 0
	never := layer.Driver{Name: "never", New: copyfs.Driver().New, Probe: func(path, dir string) error {
		probed++
		return fmt.Errorf("never works: %w", tine.ErrUnsupported)
	}}
	e, err := Open(ctx, t.TempDir(), WithStore(sqlite.Open), WithBackends(never, copyfs.Driver()))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ws := filepath.Join(t.TempDir(), "ws")
	writeFiles(t, ws, map[string]string{"a.txt": "alpha\n"})
	ref, err := e.Init(ctx, InitOptions{Path: ws})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Workspace.Backend != "copy" || probed != 1 {
		t.Errorf("auto chose %q after %d probes of never, want copy after 1", ref.Workspace.Backend, probed)
	}
	other := filepath.Join(t.TempDir(), "other")
	writeFiles(t, other, map[string]string{"b.txt": "beta\n"})
	_, err = e.Init(ctx, InitOptions{Path: other, Backend: "overlay"})
	if !errors.Is(err, tine.ErrInvalid) || !strings.Contains(err.Error(), `unknown backend "overlay" (want auto, never or copy)`) {
		t.Errorf("Init with an unregistered backend = %v", err)
	}
}

// TestOpen_WithWarnings: what the sweeper cannot put right goes to the
// writer given, not to standard error.
func TestOpen_WithWarnings(t *testing.T) {
	home := t.TempDir()
	writeFiles(t, filepath.Join(home, "workspaces", "wjunk1"), map[string]string{"init.json": "{"})
	var buf bytes.Buffer
	e, err := Open(context.Background(), home, testOptions(WithWarnings(&buf))...)
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if !strings.Contains(buf.String(), "tine: warning: unreadable init journal") {
		t.Errorf("warnings = %q, want the sweeper's", buf.String())
	}
}

// TestEngine_WiresNothing: the engine's own code imports neither a backend
// nor the SQLite store (the program registers them: WithBackends,
// WithStore), nor the runtime, the control plane or what runs processes.
func TestEngine_WiresNothing(t *testing.T) {
	testkit.ForbidImports(t, "layer/", "sqlite",
		"runtime", "supervisor", "cgroup", "netns", "livefork", "control") // engine reaches them through interfaces it owns
}
