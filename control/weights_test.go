package control_test

import (
	"context"
	"os"
	"testing"

	"github.com/tinehq/tine/control"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/judge"
	"github.com/tinehq/tine/layout"
)

func TestLearnFromChoice(t *testing.T) {
	lay := layout.New(t.TempDir())
	e, err := engine.Open(context.Background(), lay.Root(), enginetest.EngineOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p := control.Of(e)
	if err := os.MkdirAll(lay.Workspace("ws").Dir(), 0o755); err != nil {
		t.Fatal(err)
	}
	v := &grouprec.Verdict{Judge: "heuristic", Winner: "r1", Features: map[string][]float64{
		"r1": {1, 1, 1, 1, 1, 0.2},
		"r2": {1, 0.4, 1, 1, 1, 1},
	}}
	// A confirmation, a discard, a verdict without features: nothing learned.
	for _, chosen := range []string{"r1", ""} {
		if err := p.Chosen("ws", v, chosen); err != nil {
			t.Fatal(err)
		}
	}
	for _, other := range []*grouprec.Verdict{
		{Winner: "r1"}, // no features: another judge
		{Winner: "r1", Features: map[string][]float64{"r1": {1, 1, 1, 1, 1, 1}, "r2": {1, 1, 1, 1, 1, 1}}},
	} {
		if err := p.Chosen("ws", other, "r2"); err != nil {
			t.Fatal(err)
		}
	}
	if w, n := p.JudgeWeights("ws"); w != nil || n != 0 {
		t.Fatalf("weights learned without a disagreement: %v %d", w, n)
	}
	if _, err := os.Stat(lay.Workspace("ws").JudgeWeights()); !os.IsNotExist(err) {
		t.Fatalf("weights file written: %v", err)
	}
	for range 2 {
		if err := p.Chosen("ws", v, "r2"); err != nil {
			t.Fatal(err)
		}
	}
	w, n := p.JudgeWeights("ws")
	want := judge.Learn(judge.Learn(judge.DefaultWeights(), v.Features["r2"], v.Features["r1"]), v.Features["r2"], v.Features["r1"])
	if w == nil || *w != want || n != 2 {
		t.Errorf("weights %v after %d updates; want %v after 2", w, n, want)
	}
	// A damaged file is not used.
	if err := os.WriteFile(lay.Workspace("ws").JudgeWeights(), []byte(`{"weights":[9,9,9,9,9,9]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if w, _ := p.JudgeWeights("ws"); w != nil {
		t.Errorf("out-of-bounds weights used: %v", w)
	}
}
