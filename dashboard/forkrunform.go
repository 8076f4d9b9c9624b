package dashboard

import (
	"context"
	"fmt"
	"github.com/tinehq/tine/internal/access"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
)

// ForkRunStarter starts a fork-run of run ref for the person at the
// dashboard, with tine.toml (the run's copy) filling what req leaves out,
// and returns once the forks exist: the fork-run's group and the problems
// of tine.toml it worked around. The fork-run goes on after ctx ends.
// Errors wrap tine.ErrInvalid (a bad value), tine.ErrUnsupported (the
// agent's binary missing, fork-run disabled), tine.ErrNotFound or
// tine.ErrState, which the run page shows with the form.
//
// tine serve passes its API server's StartForkRun, so the daemon runs the
// fork-run, its report route follows it and its shutdown cancels it.
type ForkRunStarter func(ctx context.Context, ref string, req forkrun.Request) (group string, warnings []string, err error)

// Option configures the Handler New returns.
type Option func(*Handler)

// UserTokens returns the normal user a dashboard token stands for, or nil
// when it stands for none.
type UserTokens func(token string) *access.Caller

// WithUsers lets normal users' tokens open the dashboard (on a listener
// with a token): each sees and acts on only the workspaces they may use.
func WithUsers(check UserTokens) Option {
	return func(h *Handler) { h.users = check }
}

// WithForkRuns offers, on the page of every live run, a form that starts
// a fork-run of it with start; without it (a dashboard without a daemon)
// the form is not shown and POST /ui/runs/{r}/fork-run is refused.
func WithForkRuns(start ForkRunStarter) Option {
	return func(h *Handler) { h.starter = start }
}

// The choices the form offers besides "" (tine.toml's value).
var (
	formMergeModes = []string{string(forkrun.AutoWithFallback), string(forkrun.Auto), string(forkrun.VoteMode), string(forkrun.Manual)}
	formJudges     = []string{config.JudgeHeuristic, config.JudgeLLM, config.JudgePairwise}
)

// forkRunForm is the run page's form that starts a fork-run: the values
// as the person typed them (kept when the page comes back with an error)
// and what tine.toml gives the fields left empty.
type forkRunForm struct {
	Prompt, N, Approaches, Agent, AgentCmd, Test, MergeMode, Judge, Budget string
	// Holdout and Regression are evidence commands (see forkrun.Options).
	Holdout, Regression string

	Err      string // why the last submission was refused
	Defaults forkRunDefaults
}

// forkRunDefaults are tine.toml's values, shown as placeholders.
type forkRunDefaults struct {
	N          int
	Agent      string
	Test       string
	Holdout    string
	Regression string
	MergeMode  string
	Judge      string
	Budget     string
	ConfigErr  string // tine.toml could not be read: the defaults are tine's
}

// MergeModes are the merge modes the form's select offers.
func (forkRunForm) MergeModes() []string { return formMergeModes }

// Judges are the judges the form's select offers.
func (forkRunForm) Judges() []string { return formJudges }

// formOf reads the fork-run form of r, with the line ends browsers send
// (CRLF) made plain.
func formOf(r *http.Request) *forkRunForm {
	v := func(k string) string { return strings.ReplaceAll(r.PostFormValue(k), "\r\n", "\n") }
	return &forkRunForm{Prompt: v("prompt"), N: v("n"), Approaches: v("approaches"), Agent: v("agent"),
		AgentCmd: v("agent_cmd"), Test: v("test"), MergeMode: v("merge_mode"), Judge: v("judge"), Budget: v("budget"),
		Holdout: v("holdout"), Regression: v("regression")}
}

// request maps the form to a forkrun.Request. A field left empty stays
// unset, so tine.toml fills it. Errors wrap tine.ErrInvalid.
func (f *forkRunForm) request() (forkrun.Request, error) {
	req := forkrun.Request{Prompt: f.Prompt, Agent: strings.TrimSpace(f.Agent), AgentCmd: strings.TrimSpace(f.AgentCmd)}
	if strings.TrimSpace(f.Prompt) == "" {
		return req, fmt.Errorf("a fork-run needs a prompt: the task every fork's agent is given: %w", tine.ErrInvalid)
	}
	for _, line := range strings.Split(f.Approaches, "\n") {
		if a := strings.TrimSpace(line); a != "" {
			req.Approaches = append(req.Approaches, a)
		}
	}
	if t := strings.TrimSpace(f.Test); t != "" {
		req.Test = &t
	}
	if t := strings.TrimSpace(f.Holdout); t != "" {
		req.Holdout = &t
	}
	if t := strings.TrimSpace(f.Regression); t != "" {
		req.Regression = &t
	}
	var err error
	if req.N, err = formInt("number of forks", f.N); err != nil {
		return req, err
	}
	if req.BudgetUSD, err = formUSD("per-fork budget", f.Budget); err != nil {
		return req, err
	}
	if req.MergeMode, err = formChoice("merge mode", f.MergeMode, formMergeModes); err != nil {
		return req, err
	}
	req.Judge, err = formChoice("judge", f.Judge, formJudges)
	return req, err
}

// formInt parses a count of at least 1; nil when s is empty.
func formInt(what, s string) (*int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return nil, fmt.Errorf("%s %q: want a whole number, 1 or more: %w", what, s, tine.ErrInvalid)
	}
	return &n, nil
}

// formUSD parses dollars, 0 or more; nil when s is empty.
func formUSD(what, s string) (*float64, error) {
	s = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), "$"))
	if s == "" {
		return nil, nil
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil || x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, fmt.Errorf("%s %q: want US dollars, 0 or more (0 is no cap): %w", what, s, tine.ErrInvalid)
	}
	return &x, nil
}

// formChoice checks that s is "" (tine.toml's value) or one of choices.
func formChoice(what, s string, choices []string) (string, error) {
	if s == "" || slices.Contains(choices, s) {
		return s, nil
	}
	return "", fmt.Errorf("%s %q: want %s, or empty for tine.toml's: %w", what, s, strings.Join(choices, ", "), tine.ErrInvalid)
}

// forkRunFormFor returns the fork-run form run ref's page shows: sent as
// the person sent it, or empty; nil when the dashboard starts no
// fork-runs or the run is not live.
func (h *Handler) forkRunFormFor(ref engine.Ref, sent *forkRunForm) *forkRunForm {
	if h.starter == nil || !ref.Run.Active() {
		return nil
	}
	f := sent
	if f == nil {
		f = &forkRunForm{}
	}
	d := forkRunDefaults{N: forkrun.DefaultN}
	cfg, err := forkrun.LoadConfig(h.e, ref, "")
	if err != nil {
		cfg, d.ConfigErr = config.Default(), err.Error()
	}
	fc := cfg.Fork
	d.Agent, d.Test, d.Budget = fc.Agent, fc.TestCommand, capUSD(fc.DefaultBudgetUSD)
	d.Holdout, d.Regression = fc.HoldoutCommand, fc.RegressionCommand
	d.MergeMode = orDefault(fc.MergeMode, string(forkrun.AutoWithFallback))
	d.Judge = orDefault(fc.Judge, config.JudgeHeuristic)
	f.Defaults = d
	return f
}

// startForkRun is POST /ui/runs/{r}/fork-run: it starts a fork-run of the
// run from the form and sends the browser to the group page, which
// follows the forks live. A value refused here or by the starter brings
// the run page back with the error and the values as typed.
func (h *Handler) startForkRun(w http.ResponseWriter, r *http.Request) {
	if h.starter == nil {
		h.fail(w, r, fmt.Errorf("this dashboard starts no fork-runs (it is not served by tine serve): use tine fork-run: %w", tine.ErrUnsupported))
		return
	}
	ctx := r.Context()
	ref, err := h.e.FindRun(ctx, r.PathValue("r"))
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !ref.Run.Active() {
		h.fail(w, r, fmt.Errorf("%s is %s: only a live run can be forked: %w", ref.Run.Name, ref.Run.State, tine.ErrState))
		return
	}
	form := formOf(r)
	req, err := form.request()
	if err == nil {
		var group string
		var warnings []string
		if group, warnings, err = h.starter(context.WithoutCancel(ctx), ref.Run.ID, req); err == nil {
			h.started.put(group, warnings)
			redirect(w, r, groupHref(group)+"?done=forkrun")
			return
		}
	}
	form.Err = strings.Join(strings.Fields(err.Error()), " ")
	h.showRun(w, r, ref, status(err), form)
}

// maxStarted bounds the fork-runs whose start warnings are kept.
const maxStarted = 64

// startedForkRuns keeps the warnings of the fork-runs started here, for
// the group page the browser is sent to (?done=forkrun): only they are
// shown, never text from the query.
type startedForkRuns struct {
	mu     sync.Mutex
	groups []string // oldest first
	warn   map[string][]string
}

func (s *startedForkRuns) put(group string, warnings []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warn == nil {
		s.warn = map[string][]string{}
	}
	if _, ok := s.warn[group]; !ok {
		s.groups = append(s.groups, group)
	}
	s.warn[group] = warnings
	for len(s.groups) > maxStarted {
		delete(s.warn, s.groups[0])
		s.groups = s.groups[1:]
	}
}

// get returns the warnings of starting group's fork-run here.
func (s *startedForkRuns) get(group string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.warn[group]
}
