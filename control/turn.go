package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/atomicfile"
)

// An agent's hooks report its turns and evidence to the daemon. While a
// run's agent is in a turn (a prompt was submitted and the turn has not
// stopped), a fork it asks of itself waits: the run's files are still
// moving. The turn's Stop carries out the waiting forks.

// A turn's bound, when it never reported its stop, is WithTurnTTL's.

func (p *Plane) turnPath(r engine.Ref) string {
	return p.e.Layout().Run(r.Workspace.ID, r.Run.ID).Turn()
}
func (p *Plane) queuePath(r engine.Ref) string {
	return p.e.Layout().Run(r.Workspace.ID, r.Run.ID).QueuedForks()
}

// InTurn reports whether run r's agent is in a turn.
func (p *Plane) InTurn(r engine.Ref) bool {
	st, err := os.Stat(p.turnPath(r))
	return err == nil && time.Since(st.ModTime()) < p.turnTTL
}

// RecordEvidence stores what a run's agent hook reported, as an event
// "evidence.KIND", and acts on turns and typed choices (the kinds
// engine.Evidence*). It returns what it
// did beyond recording, for the hook to tell the agent.
func (p *Plane) RecordEvidence(ctx context.Context, r engine.Ref, kind string, data json.RawMessage) (string, error) {
	if !tine.ValidName(kind) {
		return "", fmt.Errorf("evidence kind %q: %w", kind, tine.ErrInvalid)
	}
	if len(data) > 0 && !json.Valid(data) {
		return "", fmt.Errorf("evidence data is not JSON: %w", tine.ErrInvalid)
	}
	if err := p.e.AppendEvent(ctx, r.Workspace.ID, r.Run.ID, tine.EvidenceEvent(kind), data); err != nil {
		return "", err
	}
	switch kind {
	case engine.EvidenceTurnStarted:
		return "", atomicfile.Write(p.turnPath(r), []byte(p.now().UTC().Format(time.RFC3339)), 0o644)
	case engine.EvidenceTurnStopped:
		os.Remove(p.turnPath(r))
		return p.runQueuedForks(ctx, r)
	case engine.EvidenceApprovalChoice:
		return p.applyChoice(ctx, r, data)
	}
	return "", nil
}

// QueueFork records a fork run r asked of itself during its agent's turn.
func (p *Plane) QueueFork(r engine.Ref, o engine.ForkOptions) error {
	var q []engine.ForkOptions
	if b, err := os.ReadFile(p.queuePath(r)); err == nil {
		json.Unmarshal(b, &q)
	}
	b, err := json.Marshal(append(q, o))
	if err != nil {
		return err
	}
	return atomicfile.Write(p.queuePath(r), b, 0o644)
}

// runQueuedForks carries out the forks r asked for during its turn.
func (p *Plane) runQueuedForks(ctx context.Context, r engine.Ref) (string, error) {
	b, err := os.ReadFile(p.queuePath(r))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	os.Remove(p.queuePath(r))
	var q []engine.ForkOptions
	if err := json.Unmarshal(b, &q); err != nil {
		return "", err
	}
	var done []string
	var errs []error
	for _, o := range q {
		res, err := p.e.Fork(ctx, r.Run.ID, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range res.Forks {
			done = append(done, f.Name)
		}
	}
	msg := ""
	if len(done) > 0 {
		msg = "tine forked " + r.Run.Name + " into " + strings.Join(done, ", ")
	}
	return msg, errors.Join(errs...)
}

// choice is a hook's record of a person's typed choice.
type choice struct {
	Verb   string `json:"verb"`
	Target string `json:"target"`
	Fork   int    `json:"fork"`
}

// applyChoice approves (or refuses) a pending approval the person named
// in a prompt to r's agent: by id, or by the run and the action. Only
// approvals of r itself or of its direct forks can be decided this way.
func (p *Plane) applyChoice(ctx context.Context, r engine.Ref, data json.RawMessage) (string, error) {
	var c choice
	if err := json.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("choice: %v: %w", err, tine.ErrInvalid)
	}
	pending, err := p.Pending(ctx, r.Workspace.ID)
	if err != nil {
		return "", err
	}
	for _, a := range pending {
		if !p.decidableBy(ctx, a, r) || !p.matches(ctx, a, c, r) {
			continue
		}
		by := "a prompt to " + r.Run.Name
		if c.Verb == "refuse" {
			_, err := p.Refuse(ctx, a.ID, by)
			return "refused " + a.ID, err
		}
		if _, err := p.Approve(ctx, a.ID, by); err != nil {
			return "", err
		}
		return fmt.Sprintf("approved %s: %s done", a.ID, a.Action), nil
	}
	return "", fmt.Errorf("no pending request matches %q: %w", c.Verb+" "+c.Target, tine.ErrNotFound)
}

// decidableBy reports whether a prompt to run r may decide approval a: it
// is for r itself or one of r's direct forks, and was not asked for by r
// (an agent cannot approve its own request by feeding its hook a prompt).
func (p *Plane) decidableBy(ctx context.Context, a *tine.Approval, r engine.Ref) bool {
	if a.RequestedBy == r.Run.ID {
		return false
	}
	if a.Run == r.Run.ID {
		return true
	}
	t, err := p.e.FindRun(ctx, a.Run)
	return err == nil && t.Run.Parent == r.Run.ID
}

func (p *Plane) matches(ctx context.Context, a *tine.Approval, c choice, r engine.Ref) bool {
	switch c.Verb {
	case "approve", "refuse":
		return a.ID == c.Target
	}
	if string(a.Action) != c.Verb {
		return false
	}
	name := c.Target
	if c.Fork > 0 {
		name = fmt.Sprintf("%s-%d", r.Run.Name, c.Fork)
	}
	t, err := p.e.FindRun(ctx, r.Workspace.ID+"/"+name)
	return err == nil && t.Run.ID == a.Run
}
