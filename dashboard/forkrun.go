package dashboard

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/grouprec"
	"github.com/tinehq/tine/judge"
)

// forkRunView is a group's fork-run report as the group page shows it;
// the zero value (no report) renders as an empty section the script can
// fill when a report appears.
type forkRunView struct {
	Group   string // the group's id
	Stamp   int64  // the report's version (grouprec.Head.Seq); 0 when absent
	R       *forkrun.Report
	Err     string // the report exists but could not be read
	Running bool
	Elapsed float64 // seconds the fork-run has run (so far)
	Forks   []forkView
	Winner  *forkView
	Rounds  []roundView
}

// forkView is one fork of a fork-run report.
type forkView struct {
	F       *forkrun.Fork
	Href    string
	Winner  bool
	Tests   string // passed, failed, timed_out or none
	Score   float64
	Scored  bool
	Elapsed float64 // seconds
	Ticking bool    // the script advances Elapsed: the fork runs or tests
}

// roundView is one round of a vote.
type roundView struct {
	Winner     string // by name; "" when the round named none
	Confidence float64
}

// records are group g's fork-run records.
func (h *Handler) records(g *tine.Group) grouprec.Group {
	return grouprec.Open(h.e.Layout().Group(g.Workspace, g.ID))
}

// forkRun reads group g's fork-run report, if it has one, as of now. Its
// stamp is the version of the report read, so the two always agree.
func (h *Handler) forkRun(g *tine.Group, now time.Time) forkRunView {
	v := forkRunView{Group: g.ID}
	rep, err := forkrun.Load(h.e, g.Workspace, g.ID)
	switch {
	case errors.Is(err, tine.ErrNotFound):
		return v
	case err != nil:
		v.Err = err.Error()
		return v
	}
	v.R, v.Running, v.Stamp = rep, rep.Outcome == forkrun.OutcomeRunning, rep.Seq
	v.Elapsed = rep.Seconds
	if v.Running || rep.FinishedAt.IsZero() {
		v.Elapsed = max(0, now.Sub(rep.StartedAt).Seconds())
	}
	for _, f := range rep.Forks {
		v.Forks = append(v.Forks, forkViewOf(rep, f, now))
	}
	for i := range v.Forks {
		if v.Forks[i].Winner {
			v.Winner = &v.Forks[i]
		}
	}
	if rep.Verdict != nil {
		v.Rounds = rounds(rep, rep.Verdict.Rounds)
	}
	return v
}

func forkViewOf(rep *forkrun.Report, f *forkrun.Fork, now time.Time) forkView {
	fv := forkView{F: f, Href: runHref(f.Run), Tests: forkrun.TestWord(f.Test),
		Elapsed: f.Elapsed(now).Seconds(), Ticking: !f.State.Terminal() && !f.StartedAt.IsZero()}
	if v := rep.Verdict; v != nil {
		fv.Winner = v.Winner != "" && v.Winner == f.Run
		fv.Score, fv.Scored = v.Scores[f.Run]
	}
	return fv
}

// rounds names each round's winner of a vote.
func rounds(rep *forkrun.Report, vs []*judge.Verdict) []roundView {
	out := make([]roundView, 0, len(vs))
	for _, v := range vs {
		if v == nil {
			continue
		}
		rv := roundView{Winner: v.Winner, Confidence: v.Confidence}
		if f := rep.Fork(v.Winner); f != nil {
			rv.Winner = f.Name
		}
		out = append(out, rv)
	}
	return out
}

// forkRunFragment is GET /ui/groups/{g}/forkrun: the group page's
// fork-run section alone, which the script swaps in while forks run.
// It reads only the store's group and report.json, never the forks' files.
func (h *Handler) forkRunFragment(w http.ResponseWriter, r *http.Request) {
	g, _, err := h.e.Group(r.Context(), r.PathValue("g"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var buf bytes.Buffer
	if err := h.tmpl["group"].ExecuteTemplate(&buf, "forkrun", h.forkRun(g, time.Now())); err != nil {
		http.Error(w, "rendering the fork-run: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write(buf.Bytes())
}

// forkRunSummary reads the short form of group g's fork-run report
// (summary.json, written with report.json), for the overview; nil when
// g was not forked by fork-run.
func (h *Handler) forkRunSummary(g *tine.Group) *forkrun.Summary {
	s, err := forkrun.LoadSummary(h.e, g.Workspace, g.ID)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil || s.Outcome == "":
		return &forkrun.Summary{Outcome: "unknown"}
	}
	return s
}

// seconds formats a duration in seconds as app.js does: 42s, 3m07s, 1h05m.
func seconds(s float64) string {
	n := int64(max(0, s))
	switch {
	case n < 60:
		return strconv.FormatInt(n, 10) + "s"
	case n < 3600:
		return fmt.Sprintf("%dm%02ds", n/60, n%60)
	}
	return fmt.Sprintf("%dh%02dm", n/3600, n%3600/60)
}

// usd formats dollars, with more digits for amounts under a cent.
func usd(x float64) string {
	if x > 0 && x < 0.01 {
		return fmt.Sprintf("$%.4f", x)
	}
	return fmt.Sprintf("$%.2f", x)
}

// capUSD formats a budget cap; 0 means none.
func capUSD(x float64) string {
	if x <= 0 {
		return "none"
	}
	return usd(x)
}
