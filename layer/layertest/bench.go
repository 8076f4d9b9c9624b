package layertest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tinehq/tine/layer"
)

// BenchmarkFork measures one fork cycle of backend be on a workspace of
// 2,000 files of 1 KiB under root: activate a view of the imported layer,
// seal it into a new layer, then drop both. Every backend's benchmark
// calls it, so their figures compare.
func BenchmarkFork(b *testing.B, be layer.Backend, root string) {
	ctx := context.Background()
	ws, l0 := filepath.Join(root, "ws"), filepath.Join(root, "l0")
	smallTree(b, ws, 2000)
	if err := be.Import(ctx, ws, l0, false); err != nil {
		b.Fatal(err)
	}
	r := layer.Run{ID: "r", Dir: b.TempDir(), View: filepath.Join(root, "view")}
	l1 := filepath.Join(root, "l1")
	b.ResetTimer()
	for range b.N {
		if err := forkCycle(ctx, be, r, l0, l1); err != nil {
			b.Fatal(err)
		}
	}
}

// forkCycle activates r on layer l0, seals it into l1 and removes both.
func forkCycle(ctx context.Context, be layer.Backend, r layer.Run, l0, l1 string) error {
	if err := be.Activate(ctx, r, []string{l0}); err != nil {
		return err
	}
	if _, err := be.Seal(ctx, r, []string{l0}, l1); err != nil {
		return err
	}
	if err := be.Deactivate(ctx, r); err != nil {
		return err
	}
	return be.RemoveLayer(ctx, l1)
}

// smallTree writes n files of 1 KiB under root, 100 to a directory.
func smallTree(b *testing.B, root string, n int) {
	data := make([]byte, 1024)
	for i := range n {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/100))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
