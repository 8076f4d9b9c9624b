package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/runtime"
)

// Terminal states a run is counted in by tine_runs_finished_total. A
// merged run stays live until it is discarded, and is then counted again.
const (
	StateMerged    = "merged"    // its work was merged into another run
	StatePromoted  = "promoted"  // it became its workspace's source
	StateDiscarded = "discarded" // it was discarded
	StateRetired   = "retired"   // it was the source, and a promoted fork replaced it
)

// Buckets of the histograms, in their units.
var (
	// OperationBuckets are for forks and merges: milliseconds on overlay,
	// up to minutes for a copy of a large tree.
	OperationBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120}
	// HookBuckets are for a hook's decision, which an agent waits for on
	// every tool call.
	HookBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}
	// AgentWallBuckets are for an agent's whole turn in a fork, in seconds.
	AgentWallBuckets = []float64{5, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200, 14400}
	// AgentSpendBuckets are for what an agent spent in a fork, in US dollars.
	AgentSpendBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 25, 50}
)

// ScrapeTimeout bounds how long a scrape waits for a Source.
const ScrapeTimeout = 5 * time.Second

// Metrics is tine's metrics in a registry of their own. It is the
// engine's Observer; the hook feeds its own through ObserveHook, and
// fork-runs, which run in another process, are read by WithForkRuns (or
// fed through ObserveVerdict and ObserveAgent). Its methods are safe for
// concurrent use.
type Metrics struct {
	reg    *prometheus.Registry
	errLog promhttp.Logger

	forks        *prometheus.CounterVec
	runsFinished *prometheus.CounterVec
	merges       *prometheus.CounterVec
	promotions   prometheus.Counter
	discards     prometheus.Counter
	rollbacks    prometheus.Counter
	approvals    *prometheus.CounterVec
	verdicts     *prometheus.CounterVec
	forkRuns     *prometheus.CounterVec

	forkSeconds  *prometheus.HistogramVec
	mergePlan    prometheus.Histogram
	mergeApply   prometheus.Histogram
	hookSeconds  *prometheus.HistogramVec
	agentSeconds *prometheus.HistogramVec
	agentSpend   *prometheus.HistogramVec

	feed *forkRunFeed // nil without WithForkRuns
}

var _ engine.Observer = (*Metrics)(nil)

// Option configures New.
type Option func(*Metrics)

// WithSource adds the gauges of what tine holds, read from src at each
// scrape: tine_runs_live, tine_runs_running, tine_runs_frozen, tine_layers
// and tine_layer_bytes.
func WithSource(src Source) Option {
	return func(m *Metrics) { m.reg.MustRegister(newHoldingsCollector(src)) }
}

// WithErrorLog makes the handler log what went wrong in a scrape (a Source
// that failed); the rest of the metrics are served regardless.
func WithErrorLog(l promhttp.Logger) Option {
	return func(m *Metrics) { m.errLog = l }
}

// New returns tine's metrics, registered with the Go runtime's and the
// process's in a new registry.
func New(opts ...Option) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.counters()
	m.histograms()
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, o := range opts {
		o(m)
	}
	return m
}

func (m *Metrics) counters() {
	m.forks = m.counterVec("tine_forks_total", "Forks made, by the workspace's backend and the live mode of their processes.", "backend", "live")
	m.runsFinished = m.counterVec("tine_runs_finished_total", "Runs that reached a terminal state: merged, promoted, discarded or retired.", "state")
	m.merges = m.counterVec("tine_merges_total", "Merges planned, by outcome: merged, conflict, failed or dry_run.", "outcome")
	m.promotions = m.counter("tine_promotions_total", "Forks promoted to be their workspace's source.")
	m.discards = m.counter("tine_discards_total", "Discard operations (one may end a whole group's runs).")
	m.rollbacks = m.counter("tine_rollbacks_total", "Rollbacks of a run's files to a version.")
	m.approvals = m.counterVec("tine_approvals_total", "Approved resolutions carried out, by action.", "action")
	m.verdicts = m.counterVec("tine_judge_verdicts_total", "Verdicts of the judge of a fork-run's forks, by judge and verdict: winner, no_winner or error.", "judge", "verdict")
	m.forkRuns = m.counterVec("tine_forkruns_total", "Fork-runs that ended, by agent and outcome.", "agent", "outcome")
	for _, o := range []string{engine.OutcomeMerged, engine.OutcomeConflict, engine.OutcomeFailed, engine.OutcomeDryRun} {
		m.merges.WithLabelValues(o)
	}
	for _, s := range []string{StateMerged, StatePromoted, StateDiscarded, StateRetired} {
		m.runsFinished.WithLabelValues(s)
	}
}

func (m *Metrics) histograms() {
	m.forkSeconds = m.histogramVec("tine_fork_duration_seconds", "Time one fork took, processes started included.", OperationBuckets, "backend", "live")
	m.mergePlan = m.histogram("tine_merge_plan_duration_seconds", "Time planning a merge took.", OperationBuckets)
	m.mergeApply = m.histogram("tine_merge_apply_duration_seconds", "Time applying a merge's plan took.", OperationBuckets)
	m.hookSeconds = m.histogramVec("tine_hook_decision_duration_seconds", "Time an agent hook took to answer, by agent and decision.", HookBuckets, "agent", "decision")
	m.agentSeconds = m.histogramVec("tine_agent_wall_seconds", "Wall time of an agent's work in one fork, by agent.", AgentWallBuckets, "agent")
	m.agentSpend = m.histogramVec("tine_agent_spend_usd", "What an agent spent in one fork, in US dollars, by agent.", AgentSpendBuckets, "agent")
}

func (m *Metrics) counter(name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) counterVec(name, help string, labels ...string) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
	m.reg.MustRegister(c)
	return c
}

func (m *Metrics) histogram(name, help string, buckets []float64) prometheus.Histogram {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets})
	m.reg.MustRegister(h)
	return h
}

func (m *Metrics) histogramVec(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	m.reg.MustRegister(h)
	return h
}

// Registry returns the registry the metrics are in, to add collectors to
// or to gather from.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the metrics in the exposition format the scraper asks
// for. A Source that fails leaves its gauges out of that scrape (logged
// with WithErrorLog); the other metrics are served.
//
// With WithForkRuns, each scrape first reads the fork-runs that ended since
// the last one; when the event log cannot be read, the scrape says so and
// serves the rest.
func (m *Metrics) Handler() http.Handler {
	var g prometheus.Gatherer = m.reg
	if m.feed != nil {
		g = prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
			ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
			defer cancel()
			ferr := m.feed.catchUp(ctx, m)
			mfs, err := m.reg.Gather()
			if ferr != nil {
				err = errors.Join(fmt.Errorf("fork-runs: %w", ferr), err)
			}
			return mfs, err
		})
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      m.errLog,
		ErrorHandling: promhttp.ContinueOnError,
		Registry:      m.reg,
	})
}

// Forked counts copies forks and times the fork.
func (m *Metrics) Forked(backend, live string, copies int, d time.Duration) {
	m.forks.WithLabelValues(backend, live).Add(float64(copies))
	m.forkSeconds.WithLabelValues(backend, live).Observe(d.Seconds())
}

// Merged counts a merge by outcome, a merged run as finished, and times
// the plan and, when there was one, the apply.
func (m *Metrics) Merged(outcome string, plan, apply time.Duration) {
	m.merges.WithLabelValues(outcome).Inc()
	if outcome == engine.OutcomeMerged {
		m.runsFinished.WithLabelValues(StateMerged).Inc()
	}
	m.mergePlan.Observe(plan.Seconds())
	if apply > 0 {
		m.mergeApply.Observe(apply.Seconds())
	}
}

// Promoted counts a promotion: the fork finished as promoted, the old
// source as retired.
func (m *Metrics) Promoted() {
	m.promotions.Inc()
	m.runsFinished.WithLabelValues(StatePromoted).Inc()
	m.runsFinished.WithLabelValues(StateRetired).Inc()
}

// Discarded counts a discard and the n runs it ended.
func (m *Metrics) Discarded(n int) {
	m.discards.Inc()
	m.runsFinished.WithLabelValues(StateDiscarded).Add(float64(n))
}

// RolledBack counts a rollback.
func (m *Metrics) RolledBack() { m.rollbacks.Inc() }

// Approved counts an approved resolution by its action.
func (m *Metrics) Approved(action string) { m.approvals.WithLabelValues(action).Inc() }

// ObserveHook times one decision of an agent hook. agent (claude, codex)
// and decision (such as allow, fork_first, deny, pass) must come from small
// fixed sets.
func (m *Metrics) ObserveHook(agent, decision string, d time.Duration) {
	m.hookSeconds.WithLabelValues(agent, decision).Observe(d.Seconds())
}

// ObserveVerdict counts one verdict of a judge. judge (heuristic, llm,
// vote) and verdict (VerdictWinner, VerdictNoWinner, VerdictError) must
// come from small fixed sets.
func (m *Metrics) ObserveVerdict(judge, verdict string) {
	m.verdicts.WithLabelValues(judge, verdict).Inc()
}

// ObserveAgent records an agent's work in one fork: its wall time and what
// it spent in US dollars (negative when unknown, which is not recorded).
func (m *Metrics) ObserveAgent(agent string, wall time.Duration, spendUSD float64) {
	m.agentSeconds.WithLabelValues(agent).Observe(wall.Seconds())
	if spendUSD >= 0 {
		m.agentSpend.WithLabelValues(agent).Observe(spendUSD)
	}
}

// Holding is what one workspace holds at the moment of a scrape.
type Holding struct {
	Workspace  string // the workspace's name, unique in the state directory
	LiveRuns   int    // runs not discarded, the source included
	Running    int    // live runs whose supervisor is alive
	Frozen     int    // running runs whose processes are frozen
	Layers     int    // layers stored
	LayerBytes int64  // disk space of those layers
}

// Source reports what tine holds, one Holding per workspace. Holdings is
// called once per scrape, with a context that ends after ScrapeTimeout.
type Source interface {
	Holdings(ctx context.Context) ([]Holding, error)
}

// SourceFunc is a function that is a Source.
type SourceFunc func(ctx context.Context) ([]Holding, error)

// Holdings calls f.
func (f SourceFunc) Holdings(ctx context.Context) ([]Holding, error) { return f(ctx) }

// EngineSource reads what e holds: its live runs and layers from the store
// (a layer's size is the one recorded when it was sealed), and whether each
// live run's supervisor runs and is frozen from its pid file and cgroup.
func EngineSource(e *engine.Engine) Source {
	return SourceFunc(func(ctx context.Context) ([]Holding, error) { return engineHoldings(ctx, e) })
}

func engineHoldings(ctx context.Context, e *engine.Engine) ([]Holding, error) {
	var out []Holding
	var live [][]engine.Ref
	err := e.Store().View(ctx, func(tx tine.Tx) error {
		ws, err := tx.Workspaces()
		if err != nil {
			return err
		}
		out, live = make([]Holding, len(ws)), make([][]engine.Ref, len(ws))
		for i, w := range ws {
			if out[i], live[i], err = workspaceHolding(tx, w); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i, refs := range live {
		for _, r := range refs {
			if st, _ := runtime.Of(e).ProcState(r); st == runtime.ProcRunning {
				out[i].Running++
				if frozen(r.Run.ID) {
					out[i].Frozen++
				}
			}
		}
	}
	return out, nil
}

// workspaceHolding reads w's live runs and layers.
func workspaceHolding(tx tine.Tx, w *tine.Workspace) (Holding, []engine.Ref, error) {
	runs, err := tx.Runs(tine.RunFilter{Workspace: w.ID, State: tine.StateActive})
	if err != nil {
		return Holding{}, nil, err
	}
	layers, err := tx.Layers(w.ID)
	if err != nil {
		return Holding{}, nil, err
	}
	h := Holding{Workspace: w.Name, LiveRuns: len(runs), Layers: len(layers)}
	for _, l := range layers {
		h.LayerBytes += l.Bytes
	}
	refs := make([]engine.Ref, len(runs))
	for i, r := range runs {
		refs[i] = engine.Ref{Workspace: w, Run: r}
	}
	return h, refs, nil
}

// frozen reports whether run id's cgroup is frozen.
func frozen(id string) bool {
	cg, err := cgroup.Load(id)
	if err != nil {
		return false
	}
	ok, _ := cg.Frozen()
	return ok
}

// holdingsCollector turns a Source's holdings into gauges at each scrape.
type holdingsCollector struct {
	src                                  Source
	live, running, frozen, layers, bytes *prometheus.Desc
}

func newHoldingsCollector(src Source) *holdingsCollector {
	ws := []string{"workspace"}
	return &holdingsCollector{src: src,
		live:    prometheus.NewDesc("tine_runs_live", "Runs not discarded, the sources included, by workspace.", ws, nil),
		running: prometheus.NewDesc("tine_runs_running", "Live runs whose supervisor is alive.", nil, nil),
		frozen:  prometheus.NewDesc("tine_runs_frozen", "Running runs whose processes are frozen (while a fork or merge copies or writes their files).", nil, nil),
		layers:  prometheus.NewDesc("tine_layers", "Layers stored, by workspace.", ws, nil),
		bytes:   prometheus.NewDesc("tine_layer_bytes", "Disk space of the layers stored, by workspace.", ws, nil),
	}
}

// Describe sends the gauges' descriptions.
func (c *holdingsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.live, c.running, c.frozen, c.layers, c.bytes} {
		ch <- d
	}
}

// Collect reads the source and sends the gauges; when the source fails it
// sends the error instead.
func (c *holdingsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), ScrapeTimeout)
	defer cancel()
	hs, err := c.src.Holdings(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.live, fmt.Errorf("reading what tine holds: %w", err))
		return
	}
	var running, frozen int
	for _, h := range merged(hs) {
		ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, float64(h.LiveRuns), h.Workspace)
		ch <- prometheus.MustNewConstMetric(c.layers, prometheus.GaugeValue, float64(h.Layers), h.Workspace)
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(h.LayerBytes), h.Workspace)
		running, frozen = running+h.Running, frozen+h.Frozen
	}
	ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(running))
	ch <- prometheus.MustNewConstMetric(c.frozen, prometheus.GaugeValue, float64(frozen))
}

// merged adds up holdings of the same workspace name, which would
// otherwise be a duplicate series and fail the scrape.
func merged(hs []Holding) []Holding {
	at := map[string]int{}
	var out []Holding
	for _, h := range hs {
		i, ok := at[h.Workspace]
		if !ok {
			at[h.Workspace] = len(out)
			out = append(out, h)
			continue
		}
		o := &out[i]
		o.LiveRuns, o.Running, o.Frozen = o.LiveRuns+h.LiveRuns, o.Running+h.Running, o.Frozen+h.Frozen
		o.Layers, o.LayerBytes = o.Layers+h.Layers, o.LayerBytes+h.LayerBytes
	}
	return out
}
