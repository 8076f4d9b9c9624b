package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/httpapi"
)

// forkOut is one fork as fork_run reports it.
type forkOut struct {
	Name     string `json:"name"`
	ID       string `json:"id"`
	Approach string `json:"approach,omitempty"`
	Addr     string `json:"addr,omitempty"`
}

// forkAnswer is what fork_run returns.
type forkAnswer struct {
	Parent    string              `json:"parent"`
	Group     string              `json:"group"`
	ForkPoint string              `json:"fork_point"`
	Forks     []forkOut           `json:"forks"`
	Live      []engine.LiveReport `json:"live,omitempty"`
}

func (t *tools) fork(ctx context.Context, in ForkInput) (*answer, error) {
	run, err := t.runOrSelf(in.Run)
	if err != nil {
		return nil, err
	}
	copies := in.Copies
	if copies == 0 {
		copies = max(1, len(in.Approaches))
	}
	if copies < 1 || copies > MaxCopies {
		return nil, inputErr("copies must be 1 to %d, not %d", MaxCopies, copies)
	}
	req := httpapi.ForkRequest{Copies: copies, Name: in.Name, Approaches: in.Approaches, Live: in.Live}
	var raw json.RawMessage
	code, err := t.call(ctx, "POST", runPath(run, "/fork"), req, &raw)
	if err != nil {
		return nil, err
	}
	if code == http.StatusAccepted {
		return deferred(raw)
	}
	var res engine.ForkResult
	if err := json.Unmarshal(raw, &res); err != nil || res.Parent == nil || res.Group == nil || res.Version == nil {
		return nil, fmt.Errorf("the daemon's answer to a fork: %.200s", raw)
	}
	return forkReport(&res), nil
}

// deferred is a fork the daemon put off (an agent forking itself mid-turn
// is forked when its turn stops): its message says what to do.
func deferred(raw json.RawMessage) (*answer, error) {
	var q struct {
		Message string `json:"message"`
	}
	if err := json.Unmarshal(raw, &q); err != nil || q.Message == "" {
		return nil, fmt.Errorf("the daemon's answer to a fork: %.200s", raw)
	}
	return &answer{Note: "Not forked yet: " + q.Message + ".", Data: map[string]any{"queued": true, "message": q.Message}}, nil
}

func forkReport(res *engine.ForkResult) *answer {
	out := forkAnswer{Parent: res.Parent.Name, Group: res.Group.ID, ForkPoint: res.Version.ID, Live: res.Live}
	for _, f := range res.Forks {
		out.Forks = append(out.Forks, forkOut{Name: f.Name, ID: f.ID, Approach: f.Approach, Addr: f.Addr})
	}
	note := fmt.Sprintf("forked %s into %d fork(s), group %s; compare them with inspect_branches group=%s.",
		res.Parent.Name, len(res.Forks), res.Group.ID, res.Group.ID)
	return &answer{Note: note, Data: out}
}
