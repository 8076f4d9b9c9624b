package engine

import (
	"context"
	"encoding/json"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/grouprec"
)

// recordResolution records group g resolved by res (see
// grouprec.Group.Resolved), and tells the control plane of the choice
// (the judge's weights learn from it).
func (e *Engine) recordResolution(g *tine.Group, parent string, res *ChooseResult, promote bool) error {
	h := grouprec.Resolution{Time: e.now().UTC(), Workspace: g.Workspace, Group: g.ID, Parent: parent, Action: "discard", Discarded: []string{}}
	if res.Chosen != nil {
		h.Chosen, h.Action = res.Chosen.Name, "merge"
		if promote {
			h.Action = "promote"
		}
	}
	for _, r := range res.Discarded {
		h.Discarded = append(h.Discarded, r.Name)
	}
	rec := grouprec.Open(e.lay.Group(g.Workspace, g.ID))
	if res.Chosen != nil {
		// Learning is best effort: the choice is made and recorded whatever
		// happens to the weights file.
		e.ctl.Chosen(g.Workspace, rec.Verdict(), res.Chosen.ID)
	}
	return rec.Resolved(grouprec.HistoryIn(e.lay), h)
}

// runName returns the name of run id, or the id when it cannot be read.
func runName(ctx context.Context, st tine.Store, id string) string {
	name := id
	st.View(ctx, func(tx tine.Tx) error {
		if r, err := tx.Run(id); err == nil {
			name = r.Name
		}
		return nil
	})
	return name
}

// AppendEvent appends an event of kind to workspace ws's log, on behalf of
// a tool built on the engine (fork-run's progress).
func (e *Engine) AppendEvent(ctx context.Context, ws, run string, kind tine.EventKind, detail any) error {
	return e.store.Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(e.event(ws, run, kind, detail))
	})
}

// Evidence kinds with a meaning for tine: control.Plane.RecordEvidence
// acts on them, AgentSession reads the turns; the others are recorded.
const (
	EvidenceTurnStarted    = "turn_started"
	EvidenceTurnStopped    = "turn_stopped"
	EvidenceApprovalChoice = "approval_choice"
)

// AgentSession returns the conversation run r's agent of kind (claude,
// codex) last reported through its hook, so that forks can continue it;
// "" when none is known.
func (e *Engine) AgentSession(ctx context.Context, r Ref, kind string) string {
	evs, err := e.Events(ctx, tine.EventFilter{Workspace: r.Workspace.ID, Run: r.Run.ID})
	if err != nil {
		return ""
	}
	for i := len(evs) - 1; i >= 0; i-- {
		switch evs[i].Kind {
		case tine.EvidenceEvent(EvidenceTurnStarted), tine.EvidenceEvent(EvidenceTurnStopped):
		default:
			continue
		}
		var m struct {
			Agent     string `json:"agent"`
			SessionID string `json:"session_id"`
		}
		if json.Unmarshal(evs[i].Detail, &m) == nil && m.SessionID != "" && (m.Agent == "" || m.Agent == kind) {
			return m.SessionID
		}
	}
	return ""
}
