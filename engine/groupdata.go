package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/tinehq/tine"
	"golang.org/x/sys/unix"
)

// Files of a group's directory, written by fork-run and read here.
const (
	// GroupReportFile is fork-run's report of a group: the forks, their
	// evidence and the verdict.
	GroupReportFile = "report.json"
	// GroupSummaryFile is the short form of the report that goes into the
	// history line when the group is resolved.
	GroupSummaryFile = "summary.json"
	// GroupResolutionFile records how the group was resolved (its history
	// line), by fork-run's auto mode or by a person.
	GroupResolutionFile = "resolution.json"
	// HistoryFile, in the state directory, has one JSON line per resolved
	// group.
	HistoryFile = "history.jsonl"
)

// GroupDir is where what was learned about group g of workspace ws is kept:
// fork-run's report, the agents' logs. It outlives the group's runs, so the
// evidence of discarded forks stays readable.
func (e *Engine) GroupDir(ws, g string) string {
	return e.lay.Group(ws, g).Dir()
}

// GroupVerdict is the part of a stored judge's verdict the engine uses: the
// recommended winner of a group and why.
type GroupVerdict struct {
	Judge      string             `json:"judge"`
	Winner     string             `json:"winner"` // run id; "" when the judge found none
	Confidence float64            `json:"confidence"`
	Rationale  string             `json:"rationale"`
	Scores     map[string]float64 `json:"scores,omitempty"`
	// Features are the heuristic's per-fork feature values (see
	// judge.Verdict.Features).
	Features map[string][]float64 `json:"features,omitempty"`
}

// Verdict returns the stored verdict of group g of workspace ws, or nil
// when no judge ran on it.
func (e *Engine) Verdict(ws, g string) *GroupVerdict {
	b, err := os.ReadFile(filepath.Join(e.GroupDir(ws, g), GroupReportFile))
	if err != nil {
		return nil
	}
	var rep struct {
		Verdict *GroupVerdict `json:"verdict"`
	}
	if json.Unmarshal(b, &rep) != nil {
		return nil
	}
	return rep.Verdict
}

// HistoryEntry is one line of history.jsonl: a group resolved.
type HistoryEntry struct {
	Time      time.Time       `json:"time"`
	Workspace string          `json:"workspace"`
	Group     string          `json:"group"`
	Parent    string          `json:"parent"`           // the run that was forked, by name
	Action    string          `json:"action"`           // merge, promote or discard
	Chosen    string          `json:"chosen,omitempty"` // the winner, by name
	Discarded []string        `json:"discarded"`        // by name
	ForkRun   json.RawMessage `json:"fork_run,omitempty"`
}

// appendHistory adds one line to the state directory's history.jsonl,
// holding an exclusive lock on the file so that lines of concurrent
// writers never interleave.
func (e *Engine) appendHistory(h HistoryEntry) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(e.lay.History(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", HistoryFile, err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	_, err = f.Write(append(b, '\n'))
	return err
}

// History returns the lines of history.jsonl, oldest first.
func (e *Engine) History(ctx context.Context) ([]HistoryEntry, error) {
	b, err := os.ReadFile(e.lay.History())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []HistoryEntry
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var h HistoryEntry
		if err := dec.Decode(&h); err != nil {
			return out, fmt.Errorf("%s: %w", HistoryFile, err)
		}
		out = append(out, h)
	}
	return out, nil
}

// recordResolution appends the history line of group g resolved by res.
func (e *Engine) recordResolution(g *tine.Group, parent string, res *ChooseResult, promote bool) error {
	h := HistoryEntry{Time: e.now().UTC(), Workspace: g.Workspace, Group: g.ID, Parent: parent, Action: "discard", Discarded: []string{}}
	if res.Chosen != nil {
		h.Chosen, h.Action = res.Chosen.Name, "merge"
		if promote {
			h.Action = "promote"
		}
	}
	for _, r := range res.Discarded {
		h.Discarded = append(h.Discarded, r.Name)
	}
	if res.Chosen != nil {
		// Learning is best effort: the choice is made and recorded whatever
		// happens to the weights file.
		e.learnFromChoice(g.Workspace, e.Verdict(g.Workspace, g.ID), res.Chosen.ID)
	}
	dir := e.GroupDir(g.Workspace, g.ID)
	if b, err := os.ReadFile(filepath.Join(dir, GroupSummaryFile)); err == nil && json.Valid(b) {
		h.ForkRun = b
		res := h
		res.ForkRun = nil
		if b, err := json.MarshalIndent(res, "", "  "); err == nil {
			writeFileAtomic(filepath.Join(dir, GroupResolutionFile), append(b, '\n'))
		}
	}
	return e.appendHistory(h)
}

// runName returns the name of run id, or the id when it cannot be read.
func (e *Engine) runName(ctx context.Context, id string) string {
	name := id
	e.store.View(ctx, func(tx tine.Tx) error {
		if r, err := tx.Run(id); err == nil {
			name = r.Name
		}
		return nil
	})
	return name
}

// AppendEvent appends an event of kind to workspace ws's log, on behalf of
// a tool built on the engine (fork-run's progress).
func (e *Engine) AppendEvent(ctx context.Context, ws, run, kind string, detail any) error {
	return e.store.Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(e.event(ws, run, kind, detail))
	})
}

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
		case "evidence." + EvidenceTurnStarted, "evidence." + EvidenceTurnStopped:
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
