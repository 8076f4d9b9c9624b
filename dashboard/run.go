package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge"
	"github.com/tinehq/tine/runtime"
)

// logTail is how much of the end of each service log a run page shows.
const logTail = 8 << 10

// runPage is GET /ui/runs/{r}: a run's processes, events, logs and versions.
type runPage struct {
	page
	Ref       engine.Ref
	PS        *runtime.PS
	ParentRef string
	GroupHref string
	Events    []eventView
	Logs      []logView
	Versions  []versionView
	Done      string
	ForkRun   *forkRunForm // nil: no fork-run can be started here
	// Effects are the receipts of the external effects done for the run
	// (tine effect), oldest first.
	Effects []effect.Receipt
}

type logView struct {
	Name, Tail string
	Cut        bool
}

type versionView struct {
	V       *tine.Version
	Mine    bool // recorded from this run's files
	Current bool // the run's view was made from it
}

func (h *Handler) run(w http.ResponseWriter, r *http.Request) {
	ref, err := h.e.FindRun(r.Context(), r.PathValue("r"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	h.showRun(w, r, ref, http.StatusOK, nil)
}

// showRun renders run ref's page with status code; form, when not nil, is
// the fork-run form as the person sent it, with why it was refused.
func (h *Handler) showRun(w http.ResponseWriter, r *http.Request, ref engine.Ref, code int, form *forkRunForm) {
	ctx := r.Context()
	p := runPage{page: h.livePage(ctx, "run "+ref.Run.Name, "run"), Ref: ref, Done: doneMessages[r.URL.Query().Get("done")]}
	if form != nil {
		// This page answers a POST: the script cannot fetch its address
		// again, and a refresh would not keep what the person typed.
		p.Live = false
	}
	var err error
	if p.PS, err = h.rt.PS(ctx, ref.Run.ID); err != nil {
		h.fail(w, r, err)
		return
	}
	if err := h.fillRun(ctx, &p); err != nil {
		h.fail(w, r, err)
		return
	}
	p.ForkRun = h.forkRunFormFor(ref, form)
	h.render(w, code, "run", p)
}

// fillRun adds the run's lineage links, events, logs and versions.
func (h *Handler) fillRun(ctx context.Context, p *runPage) error {
	states, err := h.e.Records(ctx, p.Ref.Workspace.ID)
	if err != nil {
		return err
	}
	names := runNames(states)
	if p.Ref.Run.Parent != "" {
		p.ParentRef = orDefault(names[p.Ref.Run.Parent], p.Ref.Run.Parent)
	}
	if p.Ref.Run.Group != "" {
		p.GroupHref = groupHref(p.Ref.Run.Group)
	}
	if p.Events, err = h.feed(ctx, tine.EventFilter{Run: p.Ref.Run.ID}, names); err != nil {
		return err
	}
	p.Logs = readLogs(h.rt.LogDir(p.Ref))
	for _, ev := range p.Events {
		var rec effect.Receipt
		if ev.Event.Kind == tine.EventEffect && json.Unmarshal(ev.Event.Detail, &rec) == nil {
			p.Effects = append([]effect.Receipt{rec}, p.Effects...) // the feed is newest first
		}
	}
	for _, st := range states {
		for _, v := range st.Versions {
			p.Versions = append(p.Versions, versionView{V: v, Mine: v.Run == p.Ref.Run.ID, Current: v.ID == p.Ref.Run.Base})
		}
	}
	return nil
}

// readLogs returns the tail of every log file in dir.
func readLogs(dir string) []logView {
	ents, _ := os.ReadDir(dir)
	var out []logView
	for _, en := range ents {
		if !en.Type().IsRegular() {
			continue
		}
		tail, cut, err := readTail(filepath.Join(dir, en.Name()), logTail)
		if err != nil {
			tail = "(unreadable: " + err.Error() + ")"
		}
		out = append(out, logView{Name: en.Name(), Tail: tail, Cut: cut})
	}
	return out
}

// readTail reads the last n bytes of file p, and whether it had more.
func readTail(p string, n int64) (string, bool, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	off := max(0, fi.Size()-n)
	b, err := io.ReadAll(io.NewSectionReader(f, off, n))
	return string(b), off > 0, err
}

// confirmPage asks a person to confirm a resolution after showing its plan.
type confirmPage struct {
	page
	Question   string
	Action     string // where the confirming form posts
	Back       string
	Fields     []field
	Plans      []planView
	Changes    []layer.Change
	Warn       string
	CanConfirm bool
	AskForce   bool // offer to discard unmerged work
}

type field struct{ Name, Value string }

// planView is a merge dry-run as a confirmation shows it.
type planView struct {
	Run, Target *tine.Run
	Href        string
	Scope       string
	Entries     []merge.Entry
	Conflicts   int
	Clean       bool
	Err         string
}

// plainPage is the layout data of a page the script leaves alone.
func (h *Handler) plainPage(title string) page { return page{Title: title, CSRF: h.csrf} }

// discard is POST /ui/runs/{r}/discard: with confirm=1 it discards the
// run (force=1 drops unmerged work); without, it lists the run's changes
// and asks.
func (h *Handler) discard(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ref, err := h.e.FindRun(ctx, r.PathValue("r"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if r.PostFormValue("confirm") == "1" {
		if _, err := h.e.Discard(context.WithoutCancel(ctx), ref.Run.ID, r.PostFormValue("force") == "1"); err != nil {
			h.fail(w, r, err)
			return
		}
		redirect(w, r, runHref(ref.Run.ID)+"?done=discard")
		return
	}
	if !ref.Run.Active() {
		h.fail(w, r, fmt.Errorf("%s is already %s: %w", ref.Run.Name, ref.Run.State, tine.ErrState))
		return
	}
	p := confirmPage{page: h.plainPage("confirm: discard " + ref.Run.Name), Action: runHref(ref.Run.ID) + "/discard",
		Back: runHref(ref.Run.ID), CanConfirm: true,
		Question: fmt.Sprintf("Discard %s? Its processes stop and its files go; its history and events stay.", ref.Run.Name)}
	p.Changes, err = h.e.Changes(ctx, ref)
	if err != nil {
		p.Warn = "Its changes could not be listed: " + err.Error()
	}
	p.AskForce = ref.Run.Resolution == tine.ResolutionNone && len(p.Changes) > 0
	h.render(w, http.StatusOK, "confirm", p)
}

// rollback is POST /ui/runs/{r}/rollback (to=VERSION): with confirm=1 it
// rolls the run back; without, it shows the version and asks.
func (h *Handler) rollback(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ref, err := h.e.FindRun(ctx, r.PathValue("r"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	to := r.PostFormValue("to")
	if to == "" {
		h.fail(w, r, fmt.Errorf("say which version to roll back to: %w", tine.ErrInvalid))
		return
	}
	if err := h.checkVersion(ctx, ref.Workspace.ID, to); err != nil {
		h.fail(w, r, err)
		return
	}
	if r.PostFormValue("confirm") == "1" {
		if _, err := h.e.Rollback(context.WithoutCancel(ctx), ref.Run.ID, to); err != nil {
			h.fail(w, r, err)
			return
		}
		redirect(w, r, runHref(ref.Run.ID)+"?done=rollback")
		return
	}
	p := confirmPage{page: h.plainPage("confirm: roll back " + ref.Run.Name), Action: runHref(ref.Run.ID) + "/rollback",
		Back: runHref(ref.Run.ID), CanConfirm: true, Fields: []field{{"to", to}},
		Question: fmt.Sprintf("Roll %s back to version %s? Its processes stop; the files it has now are first saved as a version, so nothing is lost. Its changes since its fork point:", ref.Run.Name, to)}
	if p.Changes, err = h.e.Changes(ctx, ref); err != nil {
		p.Warn = "Its changes could not be listed: " + err.Error()
	}
	h.render(w, http.StatusOK, "confirm", p)
}

// checkVersion fails unless to names (by id or label) a version of
// workspace ws.
func (h *Handler) checkVersion(ctx context.Context, ws, to string) error {
	states, err := h.e.Records(ctx, ws)
	if err != nil {
		return err
	}
	for _, st := range states {
		for _, v := range st.Versions {
			if v.ID == to || v.Label == to {
				return nil
			}
		}
	}
	return fmt.Errorf("no version %q in this workspace: %w", to, tine.ErrNotFound)
}
