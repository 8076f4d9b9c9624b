package engine

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
)

// An agent's hooks report its turns and evidence to the daemon. While a
// run's agent is in a turn (a prompt was submitted and the turn has not
// stopped), a fork it asks of itself waits: the run's files are still
// moving. The turn's Stop carries out the waiting forks.

// TurnTTL bounds a turn that never reported its stop (an agent that died).
var TurnTTL = time.Hour

func (e *Engine) turnPath(r Ref) string {
	return e.lay.Run(r.Workspace.ID, r.Run.ID).Turn()
}
func (e *Engine) queuePath(r Ref) string {
	return e.lay.Run(r.Workspace.ID, r.Run.ID).QueuedForks()
}

// InTurn reports whether run r's agent is in a turn.
func (e *Engine) InTurn(r Ref) bool {
	st, err := os.Stat(e.turnPath(r))
	return err == nil && time.Since(st.ModTime()) < TurnTTL
}

// Evidence kinds with a meaning for the engine; the others are recorded.
const (
	EvidenceTurnStarted    = "turn_started"
	EvidenceTurnStopped    = "turn_stopped"
	EvidenceApprovalChoice = "approval_choice"
)

// RecordEvidence stores what a run's agent hook reported, as an event
// "evidence.KIND", and acts on turns and typed choices. It returns what it
// did beyond recording, for the hook to tell the agent.
func (e *Engine) RecordEvidence(ctx context.Context, r Ref, kind string, data json.RawMessage) (string, error) {
	if !tine.ValidName(kind) {
		return "", fmt.Errorf("evidence kind %q: %w", kind, tine.ErrInvalid)
	}
	if len(data) > 0 && !json.Valid(data) {
		return "", fmt.Errorf("evidence data is not JSON: %w", tine.ErrInvalid)
	}
	err := e.store.Update(ctx, func(tx tine.Tx) error {
		ev := e.event(r.Workspace.ID, r.Run.ID, "evidence."+kind, nil)
		ev.Detail = data
		return tx.AppendEvent(ev)
	})
	if err != nil {
		return "", err
	}
	switch kind {
	case EvidenceTurnStarted:
		return "", writeFileAtomic(e.turnPath(r), []byte(e.now().UTC().Format(time.RFC3339)))
	case EvidenceTurnStopped:
		os.Remove(e.turnPath(r))
		return e.runQueuedForks(ctx, r)
	case EvidenceApprovalChoice:
		return e.applyChoice(ctx, r, data)
	}
	return "", nil
}

// QueueFork records a fork run r asked of itself during its agent's turn.
func (e *Engine) QueueFork(r Ref, o ForkOptions) error {
	var q []ForkOptions
	if b, err := os.ReadFile(e.queuePath(r)); err == nil {
		json.Unmarshal(b, &q)
	}
	b, err := json.Marshal(append(q, o))
	if err != nil {
		return err
	}
	return writeFileAtomic(e.queuePath(r), b)
}

// runQueuedForks carries out the forks r asked for during its turn.
func (e *Engine) runQueuedForks(ctx context.Context, r Ref) (string, error) {
	b, err := os.ReadFile(e.queuePath(r))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	os.Remove(e.queuePath(r))
	var q []ForkOptions
	if err := json.Unmarshal(b, &q); err != nil {
		return "", err
	}
	var done []string
	var errs []error
	for _, o := range q {
		res, err := e.Fork(ctx, r.Run.ID, o)
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
func (e *Engine) applyChoice(ctx context.Context, r Ref, data json.RawMessage) (string, error) {
	var c choice
	if err := json.Unmarshal(data, &c); err != nil {
		return "", fmt.Errorf("choice: %v: %w", err, tine.ErrInvalid)
	}
	pending, err := e.Pending(ctx, r.Workspace.ID)
	if err != nil {
		return "", err
	}
	for _, a := range pending {
		if !e.decidableBy(ctx, a, r) || !matches(ctx, e, a, c, r) {
			continue
		}
		by := "a prompt to " + r.Run.Name
		if c.Verb == "refuse" {
			_, err := e.Refuse(ctx, a.ID, by)
			return "refused " + a.ID, err
		}
		if _, err := e.Approve(ctx, a.ID, by); err != nil {
			return "", err
		}
		return fmt.Sprintf("approved %s: %s done", a.ID, a.Action), nil
	}
	return "", fmt.Errorf("no pending request matches %q: %w", c.Verb+" "+c.Target, tine.ErrNotFound)
}

// decidableBy reports whether a prompt to run r may decide approval a: it
// is for r itself or one of r's direct forks, and was not asked for by r
// (an agent cannot approve its own request by feeding its hook a prompt).
func (e *Engine) decidableBy(ctx context.Context, a *tine.Approval, r Ref) bool {
	if a.RequestedBy == r.Run.ID {
		return false
	}
	if a.Run == r.Run.ID {
		return true
	}
	t, err := e.FindRun(ctx, a.Run)
	return err == nil && t.Run.Parent == r.Run.ID
}

func matches(ctx context.Context, e *Engine, a *tine.Approval, c choice, r Ref) bool {
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
	t, err := e.FindRun(ctx, r.Workspace.ID+"/"+name)
	return err == nil && t.Run.ID == a.Run
}
