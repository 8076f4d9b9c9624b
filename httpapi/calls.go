package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/runtime"
)

// The API's requests, typed: each method builds its route's path (the only
// place paths are built) and decodes its answer. An error answer is an
// error wrapping its sentinel, as Do returns it; what the daemon answered
// beside it (a merge's plan with its conflicts) is in the returned value,
// which is never nil.

// Pending is a 202 answer: an action asked from inside a run that waits
// for a person (Approval), or a fork queued until the agent's turn stops
// (Queued).
type Pending struct {
	Approval *tine.Approval `json:"approval,omitempty"`
	Queued   bool           `json:"queued,omitempty"`
	Message  string         `json:"message"`
}

// Diff is a run's changes since its fork point (GET /v1/runs/{ref}/diff).
type Diff struct {
	Run     *tine.Run      `json:"run"`
	Changes []layer.Change `json:"changes"`
}

// Discarded is the runs a discard removed.
type Discarded struct {
	Discarded []*tine.Run `json:"discarded"`
}

func runPath(ref string, rest ...string) string {
	p := "/v1/runs/" + url.PathEscape(ref)
	for _, r := range rest {
		p += "/" + r
	}
	return p
}

func groupPath(ref, rest string) string { return "/v1/groups/" + url.PathEscape(ref) + "/" + rest }

// get GETs path into a new T.
func get[T any](ctx context.Context, c *Client, path string) (*T, error) {
	var out T
	_, err := c.Do(ctx, http.MethodGet, path, nil, &out)
	return &out, err
}

// post POSTs body to path, decoding the answer into a new T.
func post[T any](ctx context.Context, c *Client, path string, body any) (*T, error) {
	var out T
	_, err := c.Do(ctx, http.MethodPost, path, body, &out)
	return &out, err
}

// act POSTs body to path, as an action that may be asked from inside a
// run: a 202 answer is returned as Pending, any other decoded into a new T.
func act[T any](ctx context.Context, c *Client, path string, body any) (*T, *Pending, error) {
	var out T
	var raw json.RawMessage
	code, err := c.Do(ctx, http.MethodPost, path, body, &raw)
	if code == http.StatusAccepted && err == nil {
		var p Pending
		if jerr := json.Unmarshal(raw, &p); jerr != nil || (p.Approval == nil && !p.Queued) {
			return &out, nil, fmt.Errorf("the daemon answered 202 without a pending approval or queued fork: %.200s", raw)
		}
		return &out, &p, nil
	}
	if len(raw) > 0 {
		if jerr := json.Unmarshal(raw, &out); jerr != nil && err == nil {
			err = fmt.Errorf("the tine daemon's answer: %w", jerr)
		}
	}
	return &out, nil, err
}

// Workspaces lists the workspaces the caller may see, with their runs.
func (c *Client) Workspaces(ctx context.Context) ([]engine.WorkspaceRecords, error) {
	out, err := get[[]engine.WorkspaceRecords](ctx, c, "/v1/workspaces")
	return *out, err
}

// Workspace is workspace ref with its runs.
func (c *Client) Workspace(ctx context.Context, ref string) (*engine.WorkspaceRecords, error) {
	return get[engine.WorkspaceRecords](ctx, c, "/v1/workspaces/"+url.PathEscape(ref))
}

// Init takes a directory under management (tine init).
func (c *Client) Init(ctx context.Context, req InitRequest) (*engine.Ref, error) {
	return post[engine.Ref](ctx, c, "/v1/workspaces", req)
}

// Release stops managing workspace ref (tine release).
func (c *Client) Release(ctx context.Context, ref string, req ReleaseRequest) (*engine.Released, error) {
	return post[engine.Released](ctx, c, "/v1/workspaces/"+url.PathEscape(ref)+"/release", req)
}

// Runs lists the live runs the caller may see (all: discarded ones too),
// of workspace ws if not "".
func (c *Client) Runs(ctx context.Context, ws string, all bool) ([]RunRow, error) {
	q := url.Values{}
	if all {
		q.Set("all", "true")
	}
	if ws != "" {
		q.Set("workspace", ws)
	}
	path := "/v1/runs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	out, err := get[[]RunRow](ctx, c, path)
	return *out, err
}

// PS is run ref with its processes and services.
func (c *Client) PS(ctx context.Context, ref string) (*runtime.PS, error) {
	return get[runtime.PS](ctx, c, runPath(ref))
}

// Path is where run ref's files are seen.
func (c *Client) Path(ctx context.Context, ref string) (*RunPath, error) {
	return get[RunPath](ctx, c, runPath(ref, "path"))
}

// Summary is run ref's summary as a fork of a fork-run (tine summary).
func (c *Client) Summary(ctx context.Context, ref string) (*forkrun.RunSummary, error) {
	return get[forkrun.RunSummary](ctx, c, runPath(ref, "summary"))
}

// Diff is run ref's changes since its fork point.
func (c *Client) Diff(ctx context.Context, ref string) (*Diff, error) {
	return get[Diff](ctx, c, runPath(ref, "diff"))
}

// Patch is run ref's changes as a patch: at most limit bytes of it, and
// the whole patch's length.
func (c *Client) Patch(ctx context.Context, ref string, limit int) (string, int64, error) {
	return c.Text(ctx, runPath(ref, "diff")+"?patch=true", limit)
}

// RunEvents is run ref's event log.
func (c *Client) RunEvents(ctx context.Context, ref string) ([]*tine.Event, error) {
	out, err := get[[]*tine.Event](ctx, c, runPath(ref, "events"))
	return *out, err
}

// Events is the events after the event id after, of workspace ws if not "".
func (c *Client) Events(ctx context.Context, ws string, after int64) ([]*tine.Event, error) {
	q := url.Values{"after": {strconv.FormatInt(after, 10)}}
	if ws != "" {
		q.Set("workspace", ws)
	}
	out, err := get[[]*tine.Event](ctx, c, "/v1/events?"+q.Encode())
	return *out, err
}

// Logs names run ref's logs: services', or every log without services.
func (c *Client) Logs(ctx context.Context, ref string, services []string) (*Logs, error) {
	return get[Logs](ctx, c, runPath(ref, "logs")+"?"+url.Values{"service": services}.Encode())
}

// LogChunk is the next part of run ref's log of service from offset.
func (c *Client) LogChunk(ctx context.Context, ref, service string, offset int64) (*LogChunk, error) {
	return get[LogChunk](ctx, c, runPath(ref, "logs", url.PathEscape(service))+"?offset="+strconv.FormatInt(offset, 10))
}

// Publish publishes a port of run ref on the host (tine port).
func (c *Client) Publish(ctx context.Context, ref string, req PublishRequest) (*Published, error) {
	return post[Published](ctx, c, runPath(ref, "ports"), req)
}

// Fork forks run ref; from inside a run during an agent's turn the fork is
// queued (Pending) until the turn stops.
func (c *Client) Fork(ctx context.Context, ref string, req ForkRequest) (*engine.ForkResult, *Pending, error) {
	return act[engine.ForkResult](ctx, c, runPath(ref, "fork"), req)
}

// Exec runs a command to its end inside run ref.
func (c *Client) Exec(ctx context.Context, ref string, req ExecRequest) (*runtime.ExecResult, error) {
	return post[runtime.ExecResult](ctx, c, runPath(ref, "exec"), req)
}

// Evidence records evidence of run ref (from its agent's hook).
func (c *Client) Evidence(ctx context.Context, ref string, req EvidenceRequest) error {
	_, err := c.Do(ctx, http.MethodPost, runPath(ref, "evidence"), req, nil)
	return err
}

// HookTiming reports how long a hook's decision took.
func (c *Client) HookTiming(ctx context.Context, t HookTiming) error {
	_, err := c.Do(ctx, http.MethodPost, "/v1/hooks/timing", t, nil)
	return err
}

// Checkpoint records a version of run ref.
func (c *Client) Checkpoint(ctx context.Context, ref string, req CheckpointRequest) (*tine.Version, error) {
	return post[tine.Version](ctx, c, runPath(ref, "checkpoint"), req)
}

// Rollback makes run ref's files those of a version.
func (c *Client) Rollback(ctx context.Context, ref string, req RollbackRequest) (*engine.RollbackResult, *Pending, error) {
	return act[engine.RollbackResult](ctx, c, runPath(ref, "rollback"), req)
}

// Discard discards run ref (or each fork of a group).
func (c *Client) Discard(ctx context.Context, ref string, req DiscardRequest) (*Discarded, *Pending, error) {
	return act[Discarded](ctx, c, runPath(ref, "discard"), req)
}

// Merge merges run ref into its target (or plans it, req.DryRun).
func (c *Client) Merge(ctx context.Context, ref string, req MergeRequest) (*engine.MergeResult, *Pending, error) {
	return act[engine.MergeResult](ctx, c, runPath(ref, "merge"), req)
}

// Promote makes run ref its workspace's source.
func (c *Client) Promote(ctx context.Context, ref string, req PromoteRequest) (*engine.PromoteResult, *Pending, error) {
	return act[engine.PromoteResult](ctx, c, runPath(ref, "promote"), req)
}

// Effect asks for an outside effect of run ref (tine effect): done already
// (the answer's Receipt), or pending a person's approval.
func (c *Client) Effect(ctx context.Context, ref string, req effect.Request) (*control.EffectAnswer, error) {
	return post[control.EffectAnswer](ctx, c, runPath(ref, "effects"), req)
}

// Start starts run ref's supervisor and services.
func (c *Client) Start(ctx context.Context, ref string, req StartRequest) (*runtime.StartResult, error) {
	return post[runtime.StartResult](ctx, c, runPath(ref, "start"), req)
}

// Combine merges chosen paths of forks of group ref into its parent, all
// at once (tine combine).
func (c *Client) Combine(ctx context.Context, ref string, req CombineRequest) (*engine.CombineResult, error) {
	return post[engine.CombineResult](ctx, c, groupPath(ref, "combine"), req)
}

// RunCell makes a cell of run ref and runs its command (tine cell run);
// the answer comes once the command ended, so the wait is the cell's TTL
// and a margin, not the client's usual bound.
func (c *Client) RunCell(ctx context.Context, ref string, o runtime.CellOptions) (*runtime.Cell, error) {
	return post[runtime.Cell](ctx, c.waiting(cellWait(o.TTL)), runPath(ref, "cells"), o)
}

// Cell is cell ref's record (tine cell show).
func (c *Client) Cell(ctx context.Context, ref string) (*runtime.Cell, error) {
	return get[runtime.Cell](ctx, c, runPath(ref, "cell"))
}

// PromoteCell merges paths of cell ref into its parent (tine cell promote).
func (c *Client) PromoteCell(ctx context.Context, ref string, req CellPromoteRequest) (*engine.MergeResult, error) {
	return post[engine.MergeResult](ctx, c, runPath(ref, "cell", "promote"), req)
}

// ReplayCell runs cell ref, whose TTL is ttl, again in a new cell (tine
// cell replay), waiting as RunCell does.
func (c *Client) ReplayCell(ctx context.Context, ref string, ttl time.Duration) (*runtime.Cell, error) {
	return post[runtime.Cell](ctx, c.waiting(cellWait(ttl)), runPath(ref, "cell", "replay"), nil)
}

// cellWait is how long a client waits for a cell of ttl: its TTL, and
// time to make, stop and record it.
func cellWait(ttl time.Duration) time.Duration {
	if ttl <= 0 {
		ttl = runtime.DefaultCellTTL
	}
	return ttl + 2*time.Minute
}

// Stop stops run ref's processes.
func (c *Client) Stop(ctx context.Context, ref string) (*tine.Run, error) {
	return post[tine.Run](ctx, c, runPath(ref, "stop"), nil)
}

// Compare compares the forks of group ref.
func (c *Client) Compare(ctx context.Context, ref string) (*engine.Comparison, error) {
	return get[engine.Comparison](ctx, c, groupPath(ref, "compare"))
}

// Export is group ref's fork-run as a record to keep (tine export).
func (c *Client) Export(ctx context.Context, ref string) (*forkrun.Export, error) {
	return get[forkrun.Export](ctx, c, groupPath(ref, "export"))
}

// Choose resolves group ref: keeps one fork, discards the rest.
func (c *Client) Choose(ctx context.Context, ref string, req ChooseRequest) (*engine.ChooseResult, *Pending, error) {
	return act[engine.ChooseResult](ctx, c, groupPath(ref, "choose"), req)
}

// Approvals lists the pending approvals, of workspace ws if not "".
func (c *Client) Approvals(ctx context.Context, ws string) ([]*tine.Approval, error) {
	out, err := get[[]*tine.Approval](ctx, c, "/v1/approvals?workspace="+url.QueryEscape(ws))
	return *out, err
}

// Approve approves approval id and carries out its action; the answer
// says what was approved even when the action failed.
func (c *Client) Approve(ctx context.Context, id string, req DecideRequest) (*control.Approved, error) {
	return post[control.Approved](ctx, c, "/v1/approvals/"+url.PathEscape(id)+"/approve", req)
}

// AttachPath is the path of POST /v1/runs/{ref}/attach, whose answer
// switches protocols (tine exec hands its standard streams over it), so
// its caller dials and writes the request itself.
func AttachPath(ref string) string { return runPath(ref, "attach") }

// Refuse refuses approval id.
func (c *Client) Refuse(ctx context.Context, id string, req DecideRequest) (*tine.Approval, error) {
	return post[tine.Approval](ctx, c, "/v1/approvals/"+url.PathEscape(id)+"/refuse", req)
}

// Dashboard returns the URL of the caller's dashboard, with their token.
func (c *Client) Dashboard(ctx context.Context) (*DashboardLink, error) {
	return post[DashboardLink](ctx, c, "/v1/dashboard", nil)
}

// RevokeDashboard makes the caller's dashboard token open nothing; the
// next Dashboard makes another.
func (c *Client) RevokeDashboard(ctx context.Context) (*DashboardLink, error) {
	var l DashboardLink
	_, err := c.Do(ctx, http.MethodDelete, "/v1/dashboard", nil, &l)
	return &l, err
}
