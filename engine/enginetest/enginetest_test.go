package enginetest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine/enginetest"
)

// TestNew_ReleasesAtCleanup: New's workspace holds Files under
// management, and once the test ends they are released: back at its path,
// and the engine knows the workspace no more.
func TestNew_ReleasesAtCleanup(t *testing.T) {
	root := t.TempDir() // outlives the inner test
	home, path := filepath.Join(root, "h"), filepath.Join(root, "ws")
	t.Run("inner", func(t *testing.T) {
		w := enginetest.New(t, enginetest.Options{Name: "kit", Home: home, Path: path, Files: map[string]string{"d/a.txt": "a\n"}})
		if w.Source.Workspace.Name != "kit" || w.Source.Workspace.Backend != "copy" || !w.Source.Run.Active() {
			t.Fatalf("workspace %+v, run %+v", w.Source.Workspace, w.Source.Run)
		}
		if b, err := os.ReadFile(filepath.Join(path, "d", "a.txt")); err != nil || string(b) != "a\n" {
			t.Errorf("the source's view: %q, %v", b, err)
		}
	})
	if b, err := os.ReadFile(filepath.Join(path, "d", "a.txt")); err != nil || string(b) != "a\n" {
		t.Errorf("after cleanup: %q, %v", b, err)
	}
	e := enginetest.Open(t, home)
	if _, err := e.FindWorkspace(context.Background(), "kit"); !errors.Is(err, tine.ErrNotFound) {
		t.Errorf("after cleanup the engine still has the workspace: %v", err)
	}
}
