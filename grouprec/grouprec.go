// Package grouprec owns the records of a fork group: the files in a
// group's directory and the state directory's history of resolved groups.
// It is their one reader and writer; fork-run, the engine, the dashboard
// and the HTTP API all go through it.
//
// The paths are layout's (layout.Group, layout.Layout.History). A group's
// directory holds:
//
//	report.json      fork-run's report: the forks, their evidence, the
//	                 verdict; rewritten as the forks progress. Its "seq"
//	                 grows by one at each save: readers follow it
//	                 (Group.Seq) instead of the file's time.
//	summary.json     the short form of the report, written after it at
//	                 each save; it goes into the history line once the
//	                 group is resolved.
//	resolution.json  how the group was resolved (its history line without
//	                 the summary), written only for groups fork-run made.
//
// The state directory holds history.jsonl: one Resolution a line, appended
// under an exclusive lock.
//
// The report's content is fork-run's (forkrun.Report); this package keeps
// the parts others rely on: its version (Head), its verdict (Verdict) and
// its forks' readiness (ForkReadiness).
package grouprec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/layout"
)

// Verdict is the part of a stored judge's verdict that readers other than
// fork-run use: the recommended winner of a group and why.
type Verdict struct {
	Judge      string             `json:"judge"`
	Winner     string             `json:"winner"` // run id; "" when the judge found none
	Confidence float64            `json:"confidence"`
	Rationale  string             `json:"rationale"`
	Scores     map[string]float64 `json:"scores,omitempty"`
	// Features are the heuristic's per-fork feature values (see
	// judge.Verdict.Features).
	Features map[string][]float64 `json:"features,omitempty"`
}

// Resolution is how a group was resolved: a line of history.jsonl, and
// without ForkRun the content of resolution.json.
type Resolution struct {
	Time      time.Time       `json:"time"`
	Workspace string          `json:"workspace"`
	Group     string          `json:"group"`
	Parent    string          `json:"parent"`           // the run that was forked, by name
	Action    string          `json:"action"`           // merge, promote or discard
	Chosen    string          `json:"chosen,omitempty"` // the winner, by name
	Discarded []string        `json:"discarded"`        // by name
	ForkRun   json.RawMessage `json:"fork_run,omitempty"`
}

// Head is the part of a report this package keeps: its version. A report
// type embeds it as its first field, which makes it a Record.
type Head struct {
	// Seq is the report's version: 1 at its first save, one more at each
	// save after; 0 in reports written before it existed.
	Seq int64 `json:"seq,omitempty"`
}

func (h *Head) head() *Head { return h }

// Record is a report: any type that embeds Head.
type Record interface{ head() *Head }

// Group is the records of one group, kept in its directory.
type Group struct{ lay layout.Group }

// Open returns the records of the group laid out as g. Nothing is read or
// created until asked.
func Open(g layout.Group) Group { return Group{lay: g} }

// SaveReport writes report r and then its summary, each atomically,
// creating the directory if needed. It sets r's Seq to one more than the
// stored report's, so a caller passes a report nobody reads meanwhile (a
// copy). Saves of one group must not run concurrently.
func (g Group) SaveReport(r Record, summary any) error {
	if err := os.MkdirAll(g.lay.Dir(), 0o755); err != nil {
		return err
	}
	r.head().Seq = g.Seq() + 1
	if err := writeJSON(g.lay.Report(), r); err != nil {
		return err
	}
	return writeJSON(g.lay.Summary(), summary)
}

// LoadReport decodes the stored report into v (a pointer to the report
// type). An absent report is an error satisfying errors.Is(err,
// fs.ErrNotExist).
func (g Group) LoadReport(v any) error { return readJSON(g.lay.Report(), v) }

// LoadSummary decodes the stored summary into v, as LoadReport does.
func (g Group) LoadSummary(v any) error { return readJSON(g.lay.Summary(), v) }

// HasReport reports whether the group has a report (fork-run made it).
func (g Group) HasReport() bool {
	_, err := os.Stat(g.lay.Report())
	return err == nil
}

// Seq is the version of the stored report (see Head); 0 when there is
// none or it cannot be read. A change of Seq is a change of report.
func (g Group) Seq() int64 {
	var h Head
	if readJSON(g.lay.Report(), &h) != nil {
		return 0
	}
	return h.Seq
}

// Verdict returns the judge's verdict stored in the group's report, or nil
// when no judge ran on it (or there is no report).
func (g Group) Verdict() *Verdict {
	var rep struct {
		Verdict *Verdict `json:"verdict"`
	}
	if readJSON(g.lay.Report(), &rep) != nil {
		return nil
	}
	return rep.Verdict
}

// ForkReadiness is the part of a fork-run's fork that readers other than
// fork-run use: whether fork-run found it ready (finished, its agent did
// its work, real changes, tests passed or none configured, a clean
// merge), and why not.
type ForkReadiness struct {
	Run      string `json:"run"` // id
	State    string `json:"state"`
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
}

// Forks returns the readiness of the forks of the group's report, by run
// id; nil when there is no report.
func (g Group) Forks() map[string]ForkReadiness {
	var rep struct {
		Forks []ForkReadiness `json:"forks"`
	}
	if readJSON(g.lay.Report(), &rep) != nil {
		return nil
	}
	out := make(map[string]ForkReadiness, len(rep.Forks))
	for _, f := range rep.Forks {
		out[f.Run] = f
	}
	return out
}

// Resolution returns how the group was resolved, or nil when it was not
// (or fork-run did not make it).
func (g Group) Resolution() *Resolution {
	var h Resolution
	if readJSON(g.lay.Resolution(), &h) != nil {
		return nil
	}
	return &h
}

// Resolved records that the group was resolved as h: when fork-run made
// the group (it has a summary), h carries the summary into the history
// and resolution.json is written, best effort; then h is appended to hist.
func (g Group) Resolved(hist History, h Resolution) error {
	if b, err := os.ReadFile(g.lay.Summary()); err == nil && json.Valid(b) {
		h.ForkRun = b
		res := h
		res.ForkRun = nil
		writeJSON(g.lay.Resolution(), res)
	}
	return hist.Append(h)
}

// writeJSON writes v, indented, to path atomically.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o644)
}

// readJSON decodes the JSON file at path into v; a decoding error names
// the file.
func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	return nil
}
