package grouprec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine/layout"
)

// report is a report type as fork-run's: Head embedded first.
type report struct {
	Head
	Outcome string   `json:"outcome"`
	Verdict *Verdict `json:"verdict,omitempty"`
}

func TestGroup_SaveReportBumpsSeq(t *testing.T) {
	g := Open(layout.New(t.TempDir()).Group("w", "g1"))
	if g.Seq() != 0 || g.HasReport() {
		t.Fatalf("an empty group has seq %d, report %v", g.Seq(), g.HasReport())
	}
	for want := int64(1); want <= 3; want++ {
		r := &report{Outcome: "running"}
		if err := g.SaveReport(r, map[string]string{"outcome": "running"}); err != nil {
			t.Fatal(err)
		}
		if g.Seq() != want || r.Seq != want {
			t.Fatalf("save %d: stored seq %d, report's %d", want, g.Seq(), r.Seq)
		}
	}
	var back report
	if err := g.LoadReport(&back); err != nil || back.Outcome != "running" || back.Seq != 3 {
		t.Fatalf("loaded %+v, %v", back, err)
	}
	var s struct{ Outcome string }
	if err := g.LoadSummary(&s); err != nil || s.Outcome != "running" {
		t.Fatalf("summary %+v, %v", s, err)
	}
}

// The files keep the format written before this package: indented JSON
// ending in a newline, "seq" first and only when set.
func TestGroup_FileFormat(t *testing.T) {
	lg := layout.New(t.TempDir()).Group("w", "g1")
	g := Open(lg)
	if err := g.SaveReport(&report{Outcome: "merged"}, struct {
		Outcome string `json:"outcome"`
	}{"merged"}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(lg.Report())
	if want := "{\n  \"seq\": 1,\n  \"outcome\": \"merged\"\n}\n"; string(b) != want {
		t.Errorf("report.json = %q, want %q", b, want)
	}
	b, _ = os.ReadFile(lg.Summary())
	if want := "{\n  \"outcome\": \"merged\"\n}\n"; string(b) != want {
		t.Errorf("summary.json = %q, want %q", b, want)
	}
	if m, _ := filepath.Glob(filepath.Join(lg.Dir(), "*.tmp")); len(m) != 0 {
		t.Errorf("left behind %v", m)
	}
}

// A report written before Seq existed still reads, with seq 0.
func TestGroup_OldReportReads(t *testing.T) {
	lg := layout.New(t.TempDir()).Group("w", "g1")
	g := Open(lg)
	os.MkdirAll(lg.Dir(), 0o755)
	old := `{"outcome":"awaiting_choice","verdict":{"judge":"heuristic","winner":"r2","confidence":0.8,"rationale":"tests","scores":{"r2":0.9}}}`
	os.WriteFile(lg.Report(), []byte(old), 0o644)
	if g.Seq() != 0 || !g.HasReport() {
		t.Errorf("seq %d, has report %v", g.Seq(), g.HasReport())
	}
	v := g.Verdict()
	if v == nil || v.Winner != "r2" || v.Scores["r2"] != 0.9 || v.Judge != "heuristic" {
		t.Errorf("verdict %+v", v)
	}
	if err := g.SaveReport(&report{Outcome: "resolved"}, nil); err != nil || g.Seq() != 1 {
		t.Errorf("resave: seq %d, %v", g.Seq(), err)
	}
}

func TestGroup_AbsentAndBroken(t *testing.T) {
	lg := layout.New(t.TempDir()).Group("w", "g1")
	g := Open(lg)
	var r report
	if err := g.LoadReport(&r); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent report: %v", err)
	}
	if err := g.LoadSummary(&r); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("absent summary: %v", err)
	}
	if g.Verdict() != nil || g.Resolution() != nil {
		t.Error("an empty group has a verdict or a resolution")
	}
	os.MkdirAll(lg.Dir(), 0o755)
	os.WriteFile(lg.Report(), []byte("{not json"), 0o644)
	if err := g.LoadReport(&r); err == nil || !strings.HasPrefix(err.Error(), "report.json: ") {
		t.Errorf("broken report: %v", err)
	}
	if g.Seq() != 0 || g.Verdict() != nil {
		t.Error("a broken report has a seq or a verdict")
	}
}

func TestGroup_Resolved(t *testing.T) {
	l := layout.New(t.TempDir())
	hist := HistoryIn(l)
	plain, made := Open(l.Group("w", "plain")), Open(l.Group("w", "made"))
	os.MkdirAll(l.Group("w", "plain").Dir(), 0o755)
	if err := made.SaveReport(&report{Outcome: "awaiting_choice"}, map[string]string{"outcome": "awaiting_choice"}); err != nil {
		t.Fatal(err)
	}
	when := time.Date(2025, 11, 30, 12, 0, 0, 0, time.UTC)
	if err := plain.Resolved(hist, Resolution{Time: when, Group: "plain", Action: "discard", Discarded: []string{"a-1"}}); err != nil {
		t.Fatal(err)
	}
	if err := made.Resolved(hist, Resolution{Time: when, Group: "made", Action: "merge", Chosen: "a-2", Parent: "a", Discarded: []string{"a-1"}}); err != nil {
		t.Fatal(err)
	}
	if plain.Resolution() != nil {
		t.Error("a group fork-run did not make got a resolution.json")
	}
	r := made.Resolution()
	if r == nil || r.Chosen != "a-2" || r.Action != "merge" || r.ForkRun != nil || !r.Time.Equal(when) {
		t.Errorf("resolution %+v", r)
	}
	hs, err := hist.Read()
	if err != nil || len(hs) != 2 {
		t.Fatalf("history %+v, %v", hs, err)
	}
	if hs[0].ForkRun != nil || hs[1].Group != "made" {
		t.Errorf("history %+v", hs)
	}
	var s map[string]string
	if json.Unmarshal(hs[1].ForkRun, &s) != nil || s["outcome"] != "awaiting_choice" {
		t.Errorf("history line's fork_run = %s", hs[1].ForkRun)
	}
}

func TestHistory_ReadStopsAtABrokenLine(t *testing.T) {
	l := layout.New(t.TempDir())
	hist := HistoryIn(l)
	if hs, err := hist.Read(); hs != nil || err != nil {
		t.Fatalf("no history: %v, %v", hs, err)
	}
	hist.Append(Resolution{Group: "g1", Action: "discard"})
	f, _ := os.OpenFile(l.History(), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{broken\n")
	f.Close()
	hs, err := hist.Read()
	if len(hs) != 1 || hs[0].Group != "g1" || err == nil || !strings.HasPrefix(err.Error(), "history.jsonl: ") {
		t.Errorf("history %+v, %v", hs, err)
	}
}

// On Linux one O_APPEND write to a regular file already lands whole, so
// this checks the outcome (every line whole, none lost), not that the flock
// is needed; the lock is for writers whose lines take more than one write.
func TestHistory_ConcurrentAppendsStayWhole(t *testing.T) {
	l := layout.New(t.TempDir())
	long := string(make([]byte, 8<<10)) // long lines: each must come back whole
	var wg sync.WaitGroup
	for w := range 2 {
		hist := HistoryIn(l) // one value each, as two processes
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := hist.Append(Resolution{Group: fmt.Sprintf("g%d-%d", w, i), Action: "discard", Parent: long}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	hs, err := HistoryIn(l).Read()
	if err != nil || len(hs) != 100 {
		t.Fatalf("%d lines, %v; want 100", len(hs), err)
	}
	seen := map[string]bool{}
	for _, h := range hs {
		seen[h.Group] = true
	}
	if len(seen) != 100 {
		t.Errorf("%d distinct lines, want 100", len(seen))
	}
}
