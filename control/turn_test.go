package control_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
)

// A turn that never reported its stop ends after the plane's turn TTL.
func TestInTurn_BoundedByTheTurnTTL(t *testing.T) {
	e, err := engine.Open(context.Background(), t.TempDir(), enginetest.EngineOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r := engine.Ref{Workspace: &tine.Workspace{ID: "w1"}, Run: &tine.Run{ID: "r1"}}
	short, def := control.New(e, control.WithTurnTTL(time.Minute)), control.New(e)
	if short.InTurn(r) || def.InTurn(r) {
		t.Fatal("in a turn without a turn file")
	}
	turn := e.Layout().Run("w1", "r1").Turn()
	if err := os.MkdirAll(filepath.Dir(turn), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(turn, []byte("started"), 0o644); err != nil {
		t.Fatal(err)
	}
	if !short.InTurn(r) || !def.InTurn(r) {
		t.Fatal("not in a turn just started")
	}
	old := time.Now().Add(-10 * time.Minute)
	os.Chtimes(turn, old, old)
	if short.InTurn(r) {
		t.Error("a turn started 10 minutes ago is still on with a one-minute TTL")
	}
	if !def.InTurn(r) {
		t.Error("a turn started 10 minutes ago is over with the default TTL of an hour")
	}
}
