package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tinehq/tine"
)

// ForkLanded returns what the fork of run parent made for request
// (ForkOptions.Request), as the store recorded it, or an error wrapping
// tine.ErrNotFound when no such fork was recorded. A client whose daemon
// stopped before answering asks it to say truthfully whether its fork
// happened. The result has no live reports: whoever made the forks may not
// have lived to start their processes.
func (e *Engine) ForkLanded(ctx context.Context, parent, request string) (*ForkResult, error) {
	if request == "" {
		return nil, fmt.Errorf("no request key: %w", tine.ErrInvalid)
	}
	var res *ForkResult
	err := e.store.View(ctx, func(tx tine.Tx) error {
		evs, err := tx.Events(tine.EventFilter{Run: parent})
		if err != nil {
			return err
		}
		for _, ev := range evs {
			var d struct {
				Request string   `json:"request"`
				Group   string   `json:"group"`
				Version string   `json:"version"`
				Forks   []string `json:"forks"`
			}
			if ev.Kind != tine.EventForked || json.Unmarshal(ev.Detail, &d) != nil || d.Request != request {
				continue
			}
			res, err = forkRecord(tx, parent, d.Group, d.Version, d.Forks)
			return err
		}
		return fmt.Errorf("no fork of %s for request %s: %w", parent, request, tine.ErrNotFound)
	})
	return res, err
}

// forkRecord reads back the records one fork made.
func forkRecord(tx tine.Tx, parent, group, version string, forks []string) (*ForkResult, error) {
	var res ForkResult
	var err error
	if res.Parent, err = tx.Run(parent); err != nil {
		return nil, err
	}
	if res.Group, err = tx.Group(group); err != nil {
		return nil, err
	}
	if res.Version, err = tx.Version(version); err != nil {
		return nil, err
	}
	for _, id := range forks {
		r, err := tx.Run(id)
		if err != nil {
			return nil, err
		}
		res.Forks = append(res.Forks, r)
	}
	return &res, nil
}
