package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

func TestAgentSession_FromTheHooksTurns(t *testing.T) {
	f := newFixture(t, "copy")
	if s := f.e.AgentSession(f.ctx, f.ref, "claude"); s != "" {
		t.Fatalf("a run without turns has session %q", s)
	}
	for _, ev := range []struct{ kind, data string }{
		{EvidenceTurnStarted, `{"agent":"claude","session_id":"s-1"}`},
		{EvidenceTurnStopped, `{"agent":"claude","session_id":"s-1"}`},
		{EvidenceTurnStarted, `{"agent":"codex","session_id":"c-9"}`},
		{"tool_call", `{"agent":"claude","session_id":"not-a-turn"}`},
	} {
		if _, err := f.e.RecordEvidence(f.ctx, f.ref, ev.kind, json.RawMessage(ev.data)); err != nil {
			t.Fatal(err)
		}
	}
	if s := f.e.AgentSession(f.ctx, f.ref, "claude"); s != "s-1" {
		t.Errorf("claude session %q, want s-1", s)
	}
	if s := f.e.AgentSession(f.ctx, f.ref, "codex"); s != "c-9" {
		t.Errorf("codex session %q, want c-9", s)
	}
}

// On Linux one O_APPEND write to a regular file already lands whole, so
// this checks the outcome (every line whole, none lost), not that the flock
// is needed; the lock is for writers whose lines take more than one write.
func TestHistory_ConcurrentAppendsStayWhole(t *testing.T) {
	f := newFixture(t, "copy")
	// A second engine on the same state directory, as a second process.
	other, err := Open(f.ctx, f.home)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	long := string(make([]byte, 8<<10)) // long lines: each must come back whole, in one piece
	var wg sync.WaitGroup
	for w, e := range []*Engine{f.e, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				h := HistoryEntry{Workspace: "w", Group: fmt.Sprintf("g%d-%d", w, i), Action: "discard", Parent: long}
				if err := e.appendHistory(h); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	hs, err := f.e.History(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 100 {
		t.Fatalf("%d lines, want 100", len(hs))
	}
	seen := map[string]bool{}
	for _, h := range hs {
		seen[h.Group] = true
	}
	if len(seen) != 100 {
		t.Errorf("%d distinct lines, want 100", len(seen))
	}
}

func TestChoose_WritesHistoryAndResolution(t *testing.T) {
	f := newFixture(t, "copy")
	res, err := f.e.Fork(f.ctx, f.ref.Run.ID, ForkOptions{Copies: 2})
	if err != nil {
		t.Fatal(err)
	}
	g := res.Group
	dir := f.e.GroupDir(g.Workspace, g.ID)
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, GroupSummaryFile), []byte(`{"outcome":"awaiting_choice"}`), 0o644)
	writeFiles(t, f.e.Path(f.ref.Workspace, res.Forks[0]), map[string]string{"new.txt": "x\n"})
	if _, err := f.e.Choose(f.ctx, g.ID, res.Forks[0].Name, false); err != nil {
		t.Fatal(err)
	}
	hs, err := f.e.History(f.ctx)
	if err != nil || len(hs) != 1 {
		t.Fatalf("history %+v, %v", hs, err)
	}
	h := hs[0]
	if h.Action != "merge" || h.Chosen != res.Forks[0].Name || len(h.Discarded) != 1 || h.Parent != f.ref.Run.Name ||
		string(h.ForkRun) != `{"outcome":"awaiting_choice"}` {
		t.Errorf("history line %+v", h)
	}
	var r HistoryEntry
	b, err := os.ReadFile(filepath.Join(dir, GroupResolutionFile))
	if err != nil || json.Unmarshal(b, &r) != nil || r.Chosen != h.Chosen {
		t.Errorf("resolution.json: %s, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.path, "new.txt")); string(b) != "x\n" {
		t.Errorf("the chosen fork was not merged: %q", b)
	}
}
