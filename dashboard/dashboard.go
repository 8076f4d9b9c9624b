package dashboard

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/hex"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/evidence"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/internal/buildinfo"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/runtime"
)

//go:embed assets
var assets embed.FS

// pollEvery is how often the event stream looks for new events.
var pollEvery = 500 * time.Millisecond

// pages are the page templates, each executed as "layout".
var pages = []string{"overview", "group", "run", "confirm", "message", "fleet"}

// Handler serves the dashboard under /ui/. Build it with New.
type Handler struct {
	e     *engine.Engine
	rt    *runtime.Manager // the processes of e's runs
	cp    *control.Plane   // e's control plane: approvals
	token string           // required bearer token or cookie; "" disables the check
	csrf  string           // per-process token every form carries
	mux   *http.ServeMux
	tmpl  map[string]*template.Template

	users   UserTokens      // nil: only the daemon's own token opens it
	starter ForkRunStarter  // nil: the dashboard starts no fork-runs
	started startedForkRuns // the warnings of the fork-runs started here
	fleet   FleetStatus     // nil: no fleet (the store is not PostgreSQL's)
	away    Elsewhere       // nil: every workspace's files are here

	cancelTask TaskCanceler // nil: the fleet's page cancels no task
}

// New returns the dashboard of e, serving paths under /ui/. When token is
// not empty (a TCP listener), every request must carry it as a bearer token
// or in the cookie set by a first visit to any page with ?token=TOKEN.
// State-changing requests must also carry the per-process CSRF token that
// every form embeds, and come from the same origin. With WithForkRuns, a
// live run's page also offers a form that starts a fork-run of it.
func New(e *engine.Engine, token string, opts ...Option) http.Handler {
	h := &Handler{e: e, rt: runtime.Of(e), cp: control.Of(e), token: token, csrf: randomToken(), mux: http.NewServeMux(), tmpl: parsePages()}
	for _, o := range opts {
		o(h)
	}
	h.routes()
	return h
}

func randomToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (h *Handler) routes() {
	m := h.mux
	m.HandleFunc("GET /ui/{$}", h.overview)
	m.HandleFunc("GET /ui/groups/{g}", h.own(h.group))
	m.HandleFunc("GET /ui/groups/{g}/forkrun", h.own(h.forkRunFragment))
	m.HandleFunc("GET /ui/groups/{g}/screen/{run}", h.own(h.finalScreen))
	m.HandleFunc("GET /ui/runs/{r}", h.own(h.run))
	m.HandleFunc("GET /ui/runs/{r}/vnc", h.own(h.vnc))
	m.HandleFunc("GET /ui/events/stream", h.stream)
	m.HandleFunc("GET /ui/fleet", h.fleetView)
	m.HandleFunc("POST /ui/fleet/tasks/{id}/cancel", h.cancelTaskForm)
	m.HandleFunc("POST /ui/approvals/{id}/{decision}", h.own(h.decide))
	m.HandleFunc("POST /ui/groups/{g}/choose", h.own(h.choose))
	m.HandleFunc("POST /ui/runs/{r}/discard", h.own(h.discard))
	m.HandleFunc("POST /ui/runs/{r}/rollback", h.own(h.rollback))
	m.HandleFunc("POST /ui/runs/{r}/fork-run", h.own(h.startForkRun))
	static, _ := fs.Sub(assets, "assets")
	m.Handle("GET /ui/assets/", http.StripPrefix("/ui/assets/", http.FileServerFS(static)))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.fail(w, r, fmt.Errorf("no page %s: %w", r.URL.Path, tine.ErrNotFound))
	})
}

func parsePages() map[string]*template.Template {
	out := map[string]*template.Template{}
	for _, p := range pages {
		t := template.New(p).Funcs(funcs)
		out[p] = template.Must(t.ParseFS(assets, "assets/layout.html", "assets/parts/*.html", "assets/"+p+".html"))
	}
	return out
}

// funcs are the templates' helpers. html/template escapes every value for
// HTML; path, text and lines (internal/display) also make the control
// characters, format characters and bytes that are not UTF-8 of what a run
// controls (its file names, an agent's output, an approach label) visible,
// as the CLI shows them.
var funcs = template.FuncMap{
	"version":    func() string { return buildinfo.Read().Short() }, // the footer's
	"path":       display.Path,                                      // a file name: quoted unless printable UTF-8
	"text":       display.Text,                                      // one line of text: control characters escaped
	"lines":      display.Block,                                     // text over lines (a <pre>): newlines and tabs kept
	"short":      short,
	"collapseAt": func() int { return collapseAt },
	"seconds":    seconds,
	"usd":        usd,
	"capUSD":     capUSD,
	"when":       func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") },
	"evCheck":    evCheck,
}

// evCheckView is one evidence command's outcome in a fork's card: which
// fork (Run), an id part (Kind) and a label for it.
type evCheckView struct {
	Run, Kind, Label string
	C                *evidence.Check
}

func evCheck(run, kind, label string, c *evidence.Check) evCheckView {
	return evCheckView{Run: run, Kind: kind, Label: label, C: c}
}

// short cuts s to n characters, marking the cut with an ellipsis.
func short(n int, s string) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// page is what every page's layout needs.
type page struct {
	Title string
	Kind  string // overview, group or run: what the script refreshes
	CSRF  string
	After int64 // the last event seq the page shows; the stream starts after it
	Live  bool  // whether the script keeps the page fresh
}

// render executes page name with data and writes it with status code.
func (h *Handler) render(w http.ResponseWriter, code int, name string, data any) {
	var buf bytes.Buffer
	if err := h.tmpl[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "rendering "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// messagePage is a one-line message, for errors and refusals.
type messagePage struct {
	page
	Status  int
	Message string
}

// fail writes err as a one-line message page with its HTTP status.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	h.failCode(w, status(err), err.Error())
}

func (h *Handler) failCode(w http.ResponseWriter, code int, msg string) {
	msg = strings.Join(strings.Fields(msg), " ")
	p := messagePage{page: page{Title: http.StatusText(code), CSRF: h.csrf}, Status: code, Message: msg}
	h.render(w, code, "message", p)
}

// status is err's HTTP status, as errcode gives its kind.
func status(err error) int { return errcode.Of(err).Status }

// redirect sends the browser to path after a completed action.
func redirect(w http.ResponseWriter, r *http.Request, path string) {
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// doneMessages are the fixed notes a page shows after a completed action
// (?done=KEY); nothing from the query is shown itself.
var doneMessages = map[string]string{
	"approve":  "Approved: the action ran.",
	"refuse":   "Refused.",
	"merge":    "The chosen fork was merged into its parent; the group's other forks were discarded.",
	"promote":  "The chosen fork was promoted to source; the group's other forks were discarded.",
	"discard":  "Discarded.",
	"rollback": "Rolled back; the files it had are saved as a version.",
	"forkrun":  "Fork-run started: its agents run in the forks below, and this page follows them until the fork-run ends.",
}
