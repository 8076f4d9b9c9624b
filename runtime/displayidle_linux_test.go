package runtime

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/layout"
)

// A display's live-forked copy that an idle stop ends is forgotten before
// it ends: the watcher that starts again the services whose copies ended
// with their origin (reviveEnded) must never find it recorded and dead,
// or it starts the display again beside the stop. Before, endAdopted
// killed the copy, waited for it to end and only then forgot it; CI saw
// the display come back.
func TestEndAdopted_ForgetsBeforeItEnds(t *testing.T) {
	m := &Manager{lay: layout.New(t.TempDir()), warnings: io.Discard}
	r := engine.Ref{Workspace: &tine.Workspace{ID: "w1"}, Run: &tine.Run{ID: "r1", Name: "fork"}}
	if err := os.MkdirAll(filepath.Dir(m.adoptedPath(r)), 0o755); err != nil {
		t.Fatal(err)
	}
	copyOf := exec.Command("sleep", "60")
	if err := copyOf.Start(); err != nil {
		t.Fatal(err)
	}
	defer copyOf.Process.Kill()
	go copyOf.Wait() // reaped as it ends, so that it is seen ended
	rec := Adopted{Service: "display", Pid: copyOf.Process.Pid, Start: startOf(t, copyOf.Process.Pid)}
	if err := m.writeAdopted(r, []Adopted{rec, {Service: "editor", Pid: os.Getpid(), Start: startOf(t, os.Getpid())}}); err != nil {
		t.Fatal(err)
	}
	var seenDead atomic.Bool
	done := make(chan struct{})
	watching := make(chan struct{})
	go func() {
		defer close(watching)
		for {
			select {
			case <-done:
				return
			default:
			}
			if len(endedOf(m.readAdopted(r))) > 0 {
				seenDead.Store(true)
			}
		}
	}()
	m.endAdopted(r, []string{"display"})
	close(done)
	<-watching
	if seenDead.Load() {
		t.Error("a watcher found the display's copy recorded after it ended: it would start the display again")
	}
	if rec.alive() {
		t.Error("the display's copy runs on after endAdopted")
	}
	if got := m.readAdopted(r); len(got) != 1 || got[0].Service != "editor" {
		t.Errorf("recorded after endAdopted: %+v, want the editor's copy alone", got)
	}
}

func startOf(t *testing.T, pid int) string {
	t.Helper()
	st, err := procfs.Read("", pid)
	if err != nil {
		t.Fatal(err)
	}
	return st.StartTime
}
