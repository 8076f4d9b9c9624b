package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/judge"
)

// weightsFile is what a workspace's judge-weights.json holds
// (layout.Workspace.JudgeWeights): the heuristic judge's weights learned
// from people's choices in that workspace.
type weightsFile struct {
	Features []string      `json:"features"` // judge.FeatureNames, for a reader
	Weights  judge.Weights `json:"weights"`
	Updates  int           `json:"updates"` // choices against the recommendation learned from
}

// JudgeWeights returns workspace ws's learned weights of the heuristic
// judge and how many choices they learned from; nil and 0 when none were
// learned (or the file is unreadable or out of bounds), so the built-in
// weights apply.
func (p *Plane) JudgeWeights(ws string) (*judge.Weights, int) {
	b, err := os.ReadFile(p.e.Layout().Workspace(ws).JudgeWeights())
	if err != nil {
		return nil, 0
	}
	var f weightsFile
	if json.Unmarshal(b, &f) != nil || !f.Weights.Valid() {
		return nil, 0
	}
	return &f.Weights, f.Updates
}

// LearnedWeights are a workspace's weights of the heuristic judge.
type LearnedWeights struct {
	Features []string      `json:"features"` // judge.FeatureNames
	Weights  judge.Weights `json:"weights"`
	// Updates is how many choices against the recommendation they
	// learned from; 0: the built-in weights.
	Updates int `json:"updates"`
}

// WeightsOf returns the heuristic weights of each of wss, by workspace
// name.
func (p *Plane) WeightsOf(wss []*tine.Workspace) map[string]LearnedWeights {
	out := make(map[string]LearnedWeights, len(wss))
	for _, w := range wss {
		lw := LearnedWeights{Features: judge.FeatureNames[:], Weights: judge.DefaultWeights()}
		if ww, n := p.JudgeWeights(w.ID); ww != nil {
			lw.Weights, lw.Updates = *ww, n
		}
		out[w.Name] = lw
	}
	return out
}

// ResetJudgeWeights removes the learned weights of the workspace called
// name: the built-in ones apply again. Having none is not an error; an
// unknown workspace is.
func (p *Plane) ResetJudgeWeights(ctx context.Context, name string) error {
	var w *tine.Workspace
	err := p.e.Store().View(ctx, func(tx tine.Tx) (err error) {
		w, err = tx.WorkspaceByName(name)
		return err
	})
	if err != nil {
		return err
	}
	err = os.Remove(p.e.Layout().Workspace(w.ID).JudgeWeights())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Chosen updates workspace ws's weights when a person chose chosen (a run
// id) in a group whose heuristic verdict v recommended another fork; a
// confirmation, a discard or a verdict without features changes nothing.
// The engine calls it from Choose (engine.ControlPlane).
func (p *Plane) Chosen(ws string, v *grouprec.Verdict, chosen string) error {
	if v == nil || v.Winner == "" || chosen == "" || chosen == v.Winner {
		return nil
	}
	fc, fw := v.Features[chosen], v.Features[v.Winner]
	if fc == nil || fw == nil {
		return nil
	}
	f := weightsFile{Weights: judge.DefaultWeights()}
	if w, n := p.JudgeWeights(ws); w != nil {
		f.Weights, f.Updates = *w, n
	}
	w := judge.Learn(f.Weights, fc, fw)
	if w == f.Weights {
		return nil // the forks differ in nothing the weights weigh
	}
	f.Weights = w
	f.Updates++
	f.Features = judge.FeatureNames[:]
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(p.e.Layout().Workspace(ws).JudgeWeights(), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("judge weights: %w", err)
	}
	return nil
}
