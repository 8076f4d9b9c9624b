package dashboard

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/runtime"
)

// maxPatchShown bounds the patch text a page shows per run.
const maxPatchShown = 256 << 10

// groupPage is GET /ui/groups/{g}: the group's forks side by side.
type groupPage struct {
	page
	C         *engine.Comparison
	Parent    *tine.Run
	Workspace *tine.Workspace
	Rows      []forkRow
	Winner    *forkRow
	Pair      *pairView
	// PairA and PairB are the runs the compare selector shows chosen: the
	// pair compared, or the first two forks.
	PairA, PairB string
	Done         string
	Warnings     []string    // tine.toml's problems, when this dashboard just started the fork-run
	FR           forkRunView // the fork-run's report; empty for a group of tine fork
	Screens      []forkRow   // the forks whose display is up, shown as tiles
}

// forkRow is one fork of the comparison, with its patch.
type forkRow struct {
	engine.ForkSummary
	Href   string
	Winner bool
	Proc   string
	Patch  patchView
	Tests  string // from the fork-run report: passed, failed, timed_out or none
	Cost   string // from the fork-run report
	// Evidence is the fork-run's evidence on the fork in a few words
	// (evidence.Fork.Short); "" without a report.
	Evidence string
	// Display is set when the fork's display is up: the page shows it as
	// a tile.
	Display bool
}

// patchView is a unified diff split into lines for display.
type patchView struct {
	Lines     []patchLine
	Truncated bool
	Err       string
}

type patchLine struct{ Class, Text string }

func (h *Handler) group(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c, err := h.e.Compare(ctx, r.PathValue("g"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	ws, err := h.e.FindWorkspace(ctx, c.Group.Workspace)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	p := groupPage{page: h.livePage(ctx, "group "+c.Group.ID, "group"), C: c, Workspace: ws,
		Done: doneMessages[r.URL.Query().Get("done")]}
	if parent, err := h.e.FindRun(ctx, c.Group.Parent); err == nil {
		p.Parent = parent.Run
	}
	if r.URL.Query().Get("done") == "forkrun" {
		p.Warnings = h.started.get(c.Group.ID)
	}
	p.FR = h.forkRun(c.Group, time.Now())
	p.Rows = h.forkRows(ctx, ws, c)
	p.FR.annotate(p.Rows)
	for _, row := range p.Rows {
		if row.Display {
			p.Screens = append(p.Screens, row)
		}
	}
	for i := range p.Rows {
		if p.Rows[i].Winner {
			p.Winner = &p.Rows[i]
		}
	}
	p.PairA, p.PairB = pairChoice(r.URL.Query(), p.Rows)
	if q := r.URL.Query(); q.Get("a") != "" || q.Get("b") != "" {
		if p.Pair, err = h.pair(ctx, ws, c, q.Get("a"), q.Get("b")); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	h.render(w, http.StatusOK, "group", p)
}

// pairChoice is what the compare selector shows chosen: the forks of the
// query (?a=&b=), each of those missing the first (a) or second (b) fork.
func pairChoice(q url.Values, rows []forkRow) (a, b string) {
	a, b = q.Get("a"), q.Get("b")
	if a == "" && len(rows) > 0 {
		a = rows[0].Run.ID
	}
	if b == "" && len(rows) > 1 {
		b = rows[1].Run.ID
	}
	return a, b
}

func (h *Handler) forkRows(ctx context.Context, ws *tine.Workspace, c *engine.Comparison) []forkRow {
	rows := make([]forkRow, 0, len(c.Forks))
	for _, f := range c.Forks {
		row := forkRow{ForkSummary: f, Href: runHref(f.Run.ID), Winner: f.Run.ID == c.Recommended, Proc: runtime.ProcStopped}
		if f.Run.Active() {
			ref := engine.Ref{Workspace: ws, Run: f.Run}
			row.Proc, _ = h.rt.ProcState(ref)
			row.Patch = h.patch(ctx, ref)
			// A display stopped for being idle keeps its tile, whose
			// reconnecting starts it again.
			row.Display = row.Proc == runtime.ProcRunning && (h.rt.DisplayUp(ctx, ref) || h.rt.IdleDisplayOf(ref) != nil)
		}
		rows = append(rows, row)
	}
	return rows
}

// annotate puts what the report says of each fork's tests, cost and
// evidence into the comparison's rows.
func (v *forkRunView) annotate(rows []forkRow) {
	if v.R == nil {
		return
	}
	for i := range rows {
		if f := v.R.Fork(rows[i].Run.ID); f != nil {
			rows[i].Tests, rows[i].Cost, rows[i].Evidence = forkrun.TestWord(f.Test), usd(f.CostUSD), f.Evidence.Short()
		}
	}
}

// patch renders run r's unified diff since its fork point.
func (h *Handler) patch(ctx context.Context, r engine.Ref) patchView {
	var buf bytes.Buffer
	if err := h.e.Patch(ctx, r, &buf); err != nil {
		return patchView{Err: err.Error()}
	}
	return splitPatch(buf.String())
}

// splitPatch classes each line of a unified diff by its prefix only
// (no syntax highlighting: the content is whatever the run wrote).
func splitPatch(s string) patchView {
	var v patchView
	if len(s) > maxPatchShown {
		s, v.Truncated = s[:maxPatchShown], true
	}
	for _, line := range strings.SplitAfter(s, "\n") {
		if line == "" {
			continue
		}
		v.Lines = append(v.Lines, patchLine{Class: lineClass(line), Text: line})
	}
	return v
}

func lineClass(line string) string {
	switch {
	case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "diff "):
		return "file"
	case strings.HasPrefix(line, "@@"):
		return "hunk"
	case strings.HasPrefix(line, "+"):
		return "add"
	case strings.HasPrefix(line, "-"):
		return "del"
	}
	return "ctx"
}

// findFork returns the fork of c that ref (an id or name) names.
func findFork(c *engine.Comparison, ref string) (*engine.ForkSummary, error) {
	for i, f := range c.Forks {
		if f.Run.ID == ref || f.Run.Name == ref {
			return &c.Forks[i], nil
		}
	}
	return nil, fmt.Errorf("%q is not a fork of group %s: %w", ref, c.Group.ID, tine.ErrInvalid)
}

// chooseModes are the resolutions the group page offers.
var chooseModes = map[string]string{"merge": "choose (merge)", "promote": "choose (promote)", "discard": "discard all"}

// choose is POST /ui/groups/{g}/choose: with confirm=1 it resolves the
// group; without, it shows the dry-run plan and asks.
func (h *Handler) choose(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	mode, run := r.PostFormValue("mode"), r.PostFormValue("run")
	if _, ok := chooseModes[mode]; !ok {
		h.fail(w, r, fmt.Errorf("mode %q: want merge, promote or discard: %w", mode, tine.ErrInvalid))
		return
	}
	c, err := h.e.Compare(ctx, r.PathValue("g"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	var chosen *engine.ForkSummary
	if mode != "discard" {
		if chosen, err = findFork(c, run); err != nil {
			h.fail(w, r, err)
			return
		}
	}
	if r.PostFormValue("confirm") != "1" {
		h.render(w, http.StatusOK, "confirm", h.confirmChoose(ctx, c, chosen, mode))
		return
	}
	id := ""
	if chosen != nil {
		id = chosen.Run.ID
	}
	if _, err := h.e.Choose(context.WithoutCancel(ctx), c.Group.ID, id, engine.ChooseOptions{Promote: mode == "promote"}); err != nil {
		h.fail(w, r, err)
		return
	}
	redirect(w, r, groupHref(c.Group.ID)+"?done="+url.QueryEscape(mode))
}

// confirmChoose builds the confirmation of a choice: the merge dry-run of
// the chosen fork, or of every live fork that discarding would drop.
func (h *Handler) confirmChoose(ctx context.Context, c *engine.Comparison, chosen *engine.ForkSummary, mode string) confirmPage {
	p := confirmPage{page: h.plainPage("confirm: " + chooseModes[mode]), Action: groupHref(c.Group.ID) + "/choose",
		Back: groupHref(c.Group.ID), Fields: []field{{"mode", mode}}, CanConfirm: true}
	switch mode {
	case "discard":
		p.Question = fmt.Sprintf("Discard every live fork of group %s? Their history stays; their unmerged work (planned below) is dropped.", c.Group.ID)
		for _, f := range c.Forks {
			if f.Run.Active() {
				p.Plans = append(p.Plans, h.dryRun(ctx, f.Run))
			}
		}
	default:
		p.Fields = append(p.Fields, field{"run", chosen.Run.ID})
		p.Plans = []planView{h.dryRun(ctx, chosen.Run)}
		p.Question = fmt.Sprintf("Merge %s into its parent, then discard the group's other forks?", chosen.Run.Name)
		if mode == "promote" {
			p.Question = fmt.Sprintf("Promote %s to be the source (the old source retires), then discard the group's other forks? The merge plan below shows what it changed.", chosen.Run.Name)
		} else if !p.Plans[0].Clean {
			p.CanConfirm, p.Warn = false, "The merge has conflicts; nothing can be merged until they are resolved."
		}
	}
	return p
}

// dryRun plans the merge of run into its parent without writing anything.
func (h *Handler) dryRun(ctx context.Context, run *tine.Run) planView {
	v := planView{Run: run, Href: runHref(run.ID), Clean: true}
	res, err := h.e.Merge(ctx, run.ID, engine.MergeOptions{DryRun: true})
	if res != nil {
		v.Target, v.Scope, v.Entries = res.Target, res.Plan.Scope, res.Plan.Entries
		v.Conflicts, v.Clean = len(res.Plan.Conflicts()), res.Plan.Clean()
	}
	if err != nil {
		v.Err, v.Clean = err.Error(), false
	}
	return v
}
