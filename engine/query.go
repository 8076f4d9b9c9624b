package engine

import (
	"context"
	"errors"

	"github.com/tinehq/tine"
)

// WorkspaceRecords is everything recorded of one workspace.
type WorkspaceRecords struct {
	Workspace *tine.Workspace `json:"workspace"`
	Runs      []*tine.Run     `json:"runs"`
	Versions  []*tine.Version `json:"versions"`
	Groups    []*tine.Group   `json:"groups"`
}

// Records returns the records of the workspace ref (an id, name or path), or
// of every workspace when ref is empty.
func (e *Engine) Records(ctx context.Context, ref string) ([]WorkspaceRecords, error) {
	return e.records(ctx, ref, workspaceRecords)
}

// LiveRecords is Records with only the live runs of each workspace, each
// followed by its parent when that is not live, and no versions or
// groups: what tine ls shows, at the cost of the live runs rather than of
// the workspace's history.
func (e *Engine) LiveRecords(ctx context.Context, ref string) ([]WorkspaceRecords, error) {
	return e.records(ctx, ref, liveRecords)
}

// records returns what read records of the workspace ref, or of every
// workspace when ref is empty.
func (e *Engine) records(ctx context.Context, ref string, read func(tine.Tx, *tine.Workspace) (WorkspaceRecords, error)) ([]WorkspaceRecords, error) {
	var out []WorkspaceRecords
	err := e.store.View(ctx, func(tx tine.Tx) error {
		var ws []*tine.Workspace
		if ref == "" {
			var err error
			if ws, err = tx.Workspaces(); err != nil {
				return err
			}
		} else {
			w, err := findWorkspace(tx, ref)
			if err != nil {
				return err
			}
			ws = []*tine.Workspace{w}
		}
		for _, w := range ws {
			s, err := read(tx, w)
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// liveRecords reads the live runs of w, and the parents that are not.
func liveRecords(tx tine.Tx, w *tine.Workspace) (WorkspaceRecords, error) {
	s := WorkspaceRecords{Workspace: w}
	live, err := tx.Runs(tine.RunFilter{Workspace: w.ID, State: tine.StateActive})
	if err != nil {
		return s, err
	}
	have := map[string]bool{}
	for _, r := range live {
		have[r.ID] = true
	}
	s.Runs = live
	for _, r := range live {
		if r.Parent == "" || have[r.Parent] {
			continue
		}
		p, err := tx.Run(r.Parent)
		if err != nil {
			return s, err
		}
		have[p.ID] = true
		s.Runs = append(s.Runs, p)
	}
	return s, nil
}

func workspaceRecords(tx tine.Tx, w *tine.Workspace) (WorkspaceRecords, error) {
	s := WorkspaceRecords{Workspace: w}
	var err error
	if s.Runs, err = tx.Runs(tine.RunFilter{Workspace: w.ID}); err != nil {
		return s, err
	}
	if s.Versions, err = tx.Versions(w.ID); err != nil {
		return s, err
	}
	s.Groups, err = tx.Groups(w.ID)
	return s, err
}

// Events returns the event log selected by f.
func (e *Engine) Events(ctx context.Context, f tine.EventFilter) ([]*tine.Event, error) {
	var out []*tine.Event
	err := e.store.View(ctx, func(tx tine.Tx) error {
		var err error
		out, err = tx.Events(f)
		return err
	})
	return out, err
}

// LastSeq returns the sequence number of the newest event of the log (0
// when it is empty), with O(log n) one-event reads: an event follows x
// exactly when x is below the newest.
func (e *Engine) LastSeq(ctx context.Context) (int64, error) {
	var failed error
	after := func(x int64) bool {
		evs, err := e.Events(ctx, tine.EventFilter{After: x, Limit: 1})
		failed = errors.Join(failed, err)
		return err == nil && len(evs) > 0
	}
	if !after(0) {
		return 0, failed
	}
	lo, hi := int64(0), int64(1) // after(lo); !after(hi) once found
	for after(hi) {
		lo, hi = hi, hi*2
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if after(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, failed
}
