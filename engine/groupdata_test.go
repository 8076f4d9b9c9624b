package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/grouprec"
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
		// As control.Plane.RecordEvidence records what a hook reported.
		if err := f.e.AppendEvent(f.ctx, f.ref.Workspace.ID, f.ref.Run.ID, tine.EvidenceEvent(ev.kind), json.RawMessage(ev.data)); err != nil {
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

func TestChoose_WritesHistoryAndResolution(t *testing.T) {
	f := newFixture(t, "copy")
	res, err := f.e.Fork(f.ctx, f.ref.Run.ID, ForkOptions{Copies: 2})
	if err != nil {
		t.Fatal(err)
	}
	g := res.Group
	lg := f.e.Layout().Group(g.Workspace, g.ID)
	os.MkdirAll(lg.Dir(), 0o755)
	os.WriteFile(lg.Summary(), []byte(`{"outcome":"awaiting_choice"}`), 0o644)
	writeFiles(t, f.e.Path(f.ref.Workspace, res.Forks[0]), map[string]string{"new.txt": "x\n"})
	if _, err := f.e.Choose(f.ctx, g.ID, res.Forks[0].Name, ChooseOptions{}); err != nil {
		t.Fatal(err)
	}
	hs, err := grouprec.HistoryIn(f.e.Layout()).Read()
	if err != nil || len(hs) != 1 {
		t.Fatalf("history %+v, %v", hs, err)
	}
	h := hs[0]
	if h.Action != "merge" || h.Chosen != res.Forks[0].Name || len(h.Discarded) != 1 || h.Parent != f.ref.Run.Name ||
		string(h.ForkRun) != `{"outcome":"awaiting_choice"}` {
		t.Errorf("history line %+v", h)
	}
	var r grouprec.Resolution
	b, err := os.ReadFile(lg.Resolution())
	if err != nil || json.Unmarshal(b, &r) != nil || r.Chosen != h.Chosen {
		t.Errorf("resolution.json: %s, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(f.path, "new.txt")); string(b) != "x\n" {
		t.Errorf("the chosen fork was not merged: %q", b)
	}
}

// chosenSpy is a ControlPlane that records what Choose told it.
type chosenSpy struct {
	NopControlPlane
	ws, chosen string
	v          *grouprec.Verdict
	calls      int
}

func (s *chosenSpy) Chosen(ws string, v *grouprec.Verdict, chosen string) error {
	s.ws, s.v, s.chosen = ws, v, chosen
	s.calls++
	return nil
}

// Choose tells the control plane which fork a person chose and the
// group's stored verdict.
func TestChoose_TellsTheControlPlane(t *testing.T) {
	f := newFixture(t, "copy")
	spy := &chosenSpy{}
	f.e.Close()
	f.open(WithControl(func(*Engine) ControlPlane { return spy }))
	res, err := f.e.Fork(f.ctx, f.ref.Run.ID, ForkOptions{Copies: 2})
	if err != nil {
		t.Fatal(err)
	}
	type report struct {
		grouprec.Head
		Verdict *grouprec.Verdict `json:"verdict"`
	}
	v := &grouprec.Verdict{Judge: "heuristic", Winner: res.Forks[1].ID, Features: map[string][]float64{res.Forks[0].ID: {1}}}
	if err := grouprec.Open(f.e.Layout().Group(res.Group.Workspace, res.Group.ID)).SaveReport(&report{Verdict: v}, struct{}{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Choose(f.ctx, res.Group.ID, res.Forks[0].Name, ChooseOptions{}); err != nil {
		t.Fatal(err)
	}
	if spy.calls != 1 || spy.ws != f.ref.Workspace.ID || spy.chosen != res.Forks[0].ID || spy.v == nil || spy.v.Winner != v.Winner {
		t.Errorf("control plane told %d time(s): ws %q chosen %q verdict %+v", spy.calls, spy.ws, spy.chosen, spy.v)
	}
}
