package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/merge"
	"github.com/tinehq/tine/metrics"
	"github.com/tinehq/tine/runtime"
)

// fixture is an engine on a fresh state directory with one workspace on
// the copy backend (which needs no root), observed by m.
type fixture struct {
	t   *testing.T
	ctx context.Context
	e   *engine.Engine
	m   *metrics.Metrics
	src engine.Ref
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	w := enginetest.New(t, enginetest.Options{Name: "demo", Files: map[string]string{"a.txt": "alpha\n", "dir/b.txt": "beta\n"}})
	e, src := w.Engine, w.Source
	m := metrics.New(metrics.WithSource(metrics.EngineSource(e)))
	e.SetObserver(m)
	return &fixture{t: t, ctx: ctx, e: e, m: m, src: src}
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// write changes a file in run r's view.
func (f *fixture) write(r *tine.Run, name, content string) {
	f.t.Helper()
	writeFile(f.t, filepath.Join(f.e.Path(f.src.Workspace, r), name), content)
}

// exercise runs one of each operation the metrics count, for real: a fork
// of three, a merge, a conflicting merge, a dry run, a merge that fails, a
// forced discard, a discard by approval, a rollback and a promotion.
func (f *fixture) exercise() {
	f.t.Helper()
	t, ctx, e := f.t, f.ctx, f.e
	fr, err := e.Fork(ctx, f.src.Run.ID, engine.ForkOptions{Copies: 3})
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	a, b, c := fr.Forks[0], fr.Forks[1], fr.Forks[2]
	f.write(a, "a.txt", "from a\n")
	if _, err := e.Merge(ctx, a.ID, engine.MergeOptions{}); err != nil {
		t.Fatalf("Merge(a): %v", err)
	}
	f.write(b, "a.txt", "from b\n")
	if _, err := e.Merge(ctx, b.ID, engine.MergeOptions{}); !errors.Is(err, merge.ErrConflict) {
		t.Fatalf("Merge(b) = %v, want a conflict", err)
	}
	f.write(c, "new.txt", "from c\n")
	if _, err := e.Merge(ctx, c.ID, engine.MergeOptions{DryRun: true}); err != nil {
		t.Fatalf("Merge(c, dry run): %v", err)
	}
	// A command running in the target makes the merge fail.
	if err := runtime.Of(e).AddSession(f.src, os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Merge(ctx, c.ID, engine.MergeOptions{}); !errors.Is(err, tine.ErrBusy) {
		t.Fatalf("Merge(c, target busy) = %v, want ErrBusy", err)
	}
	runtime.Of(e).RemoveSession(f.src, os.Getpid())
	if _, err := e.Discard(ctx, b.ID, true); err != nil {
		t.Fatalf("Discard(b): %v", err)
	}
	appr, err := control.Of(e).RequestResolution(ctx, engine.Ref{Workspace: f.src.Workspace, Run: c},
		control.Resolution{Action: tine.ActionDiscard, Run: a.ID})
	if err != nil {
		t.Fatalf("RequestResolution: %v", err)
	}
	if _, err := control.Of(e).Approve(ctx, appr.ID, "tester"); err != nil {
		t.Fatalf("Approve: %v", err)
	}
	if _, err := e.Rollback(ctx, f.src.Run.ID, fr.Version.ID); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if _, err := e.Promote(ctx, c.ID, true); err != nil {
		t.Fatalf("Promote: %v", err)
	}
}

func TestMetrics_Engine(t *testing.T) {
	f := newFixture(t)
	f.exercise()
	reg := f.m.Registry()

	t.Run("Counters", func(t *testing.T) {
		const want = `
# HELP tine_approvals_total Approved resolutions carried out, by action.
# TYPE tine_approvals_total counter
tine_approvals_total{action="discard"} 1
# HELP tine_discards_total Discard operations (one may end a whole group's runs).
# TYPE tine_discards_total counter
tine_discards_total 2
# HELP tine_forks_total Forks made, by the workspace's backend and the live mode of their processes.
# TYPE tine_forks_total counter
tine_forks_total{backend="copy",live="none"} 3
# HELP tine_merges_total Merges planned, by outcome: merged, conflict, failed or dry_run.
# TYPE tine_merges_total counter
tine_merges_total{outcome="conflict"} 1
tine_merges_total{outcome="dry_run"} 1
tine_merges_total{outcome="failed"} 1
tine_merges_total{outcome="merged"} 1
# HELP tine_promotions_total Forks promoted to be their workspace's source.
# TYPE tine_promotions_total counter
tine_promotions_total 1
# HELP tine_rollbacks_total Rollbacks of a run's files to a version.
# TYPE tine_rollbacks_total counter
tine_rollbacks_total 1
# HELP tine_runs_finished_total Runs that reached a terminal state: merged, promoted, discarded or retired.
# TYPE tine_runs_finished_total counter
tine_runs_finished_total{state="discarded"} 2
tine_runs_finished_total{state="merged"} 1
tine_runs_finished_total{state="promoted"} 1
tine_runs_finished_total{state="retired"} 1
`
		err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tine_approvals_total", "tine_discards_total",
			"tine_forks_total", "tine_merges_total", "tine_promotions_total", "tine_rollbacks_total", "tine_runs_finished_total")
		if err != nil {
			t.Error(err)
		}
	})

	t.Run("Histograms", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			labels map[string]string
			count  uint64
		}{
			{"tine_fork_duration_seconds", map[string]string{"backend": "copy", "live": "none"}, 1},
			{"tine_merge_plan_duration_seconds", nil, 4}, // merged, conflict, dry run, failed
			{"tine_merge_apply_duration_seconds", nil, 1},
		} {
			h := histogram(t, reg, c.name, c.labels)
			if h.GetSampleCount() != c.count || h.GetSampleSum() <= 0 {
				t.Errorf("%s%v: count %d, sum %v; want count %d and a positive sum", c.name, c.labels, h.GetSampleCount(), h.GetSampleSum(), c.count)
			}
		}
	})

	t.Run("Gauges", func(t *testing.T) {
		// The source (c, promoted) is the one live run left.
		const want = `
# HELP tine_runs_frozen Running runs whose processes are frozen (while a fork or merge copies or writes their files).
# TYPE tine_runs_frozen gauge
tine_runs_frozen 0
# HELP tine_runs_live Runs not discarded, the sources included, by workspace.
# TYPE tine_runs_live gauge
tine_runs_live{workspace="demo"} 1
# HELP tine_runs_running Live runs whose supervisor is alive.
# TYPE tine_runs_running gauge
tine_runs_running 0
`
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tine_runs_live", "tine_runs_running", "tine_runs_frozen"); err != nil {
			t.Error(err)
		}
		layers, bytes := storedLayers(t, f)
		if layers < 4 || bytes <= 0 {
			t.Fatalf("store holds %d layers of %d bytes; want at least init, fork, rollback and promote's", layers, bytes)
		}
		if got := gauge(t, reg, "tine_layers", "demo"); got != float64(layers) {
			t.Errorf("tine_layers = %v, want %d", got, layers)
		}
		if got := gauge(t, reg, "tine_layer_bytes", "demo"); got != float64(bytes) {
			t.Errorf("tine_layer_bytes = %v, want %d", got, bytes)
		}
	})

	t.Run("NoRunIDs", func(t *testing.T) {
		text := scrape(t, f.m)
		st, err := f.e.Records(f.ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, ws := range st {
			for _, r := range ws.Runs {
				if strings.Contains(text, r.ID) || strings.Contains(text, `"`+r.Name+`"`) {
					t.Errorf("the exposition names run %s (%s)", r.Name, r.ID)
				}
			}
		}
	})

	t.Run("Promtool", func(t *testing.T) {
		promtool(t, scrape(t, f.m))
	})
}

// storedLayers counts the layers the store holds of f's workspace, and
// their recorded sizes.
func storedLayers(t *testing.T, f *fixture) (n int, bytes int64) {
	t.Helper()
	err := f.e.Store().View(f.ctx, func(tx tine.Tx) error {
		ls, err := tx.Layers(f.src.Workspace.ID)
		for _, l := range ls {
			bytes += l.Bytes
		}
		n = len(ls)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n, bytes
}

// family gathers reg and returns the family called name.
func family(t *testing.T, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf
		}
	}
	t.Fatalf("no metric %s", name)
	return nil
}

// find returns the metric of mf with exactly the labels want.
func find(t *testing.T, mf *dto.MetricFamily, want map[string]string) *dto.Metric {
	t.Helper()
	for _, m := range mf.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if maps.Equal(got, want) {
			return m
		}
	}
	t.Fatalf("no %s%v", mf.GetName(), want)
	return nil
}

func histogram(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) *dto.Histogram {
	t.Helper()
	return find(t, family(t, reg, name), labels).GetHistogram()
}

func gauge(t *testing.T, reg prometheus.Gatherer, name, workspace string) float64 {
	t.Helper()
	return find(t, family(t, reg, name), map[string]string{"workspace": workspace}).GetGauge().GetValue()
}

// scrape gets m's exposition from its handler, in the text format.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	b, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// promtool checks an exposition with promtool check metrics.
func promtool(t *testing.T, text string) {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt install prometheus)")
	}
	file := filepath.Join(t.TempDir(), "metrics.txt")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}

func TestMetrics_Holdings(t *testing.T) {
	src := metrics.SourceFunc(func(ctx context.Context) ([]metrics.Holding, error) {
		return []metrics.Holding{
			{Workspace: "api", LiveRuns: 4, Running: 2, Frozen: 1, Layers: 7, LayerBytes: 4096},
			{Workspace: "web", LiveRuns: 1, Layers: 1, LayerBytes: 512},
			{Workspace: "api", LiveRuns: 1, Running: 1, Layers: 1, LayerBytes: 1}, // same name: added up
		}, nil
	})
	m := metrics.New(metrics.WithSource(src))
	const want = `
# HELP tine_layer_bytes Disk space of the layers stored, by workspace.
# TYPE tine_layer_bytes gauge
tine_layer_bytes{workspace="api"} 4097
tine_layer_bytes{workspace="web"} 512
# HELP tine_layers Layers stored, by workspace.
# TYPE tine_layers gauge
tine_layers{workspace="api"} 8
tine_layers{workspace="web"} 1
# HELP tine_runs_frozen Running runs whose processes are frozen (while a fork or merge copies or writes their files).
# TYPE tine_runs_frozen gauge
tine_runs_frozen 1
# HELP tine_runs_live Runs not discarded, the sources included, by workspace.
# TYPE tine_runs_live gauge
tine_runs_live{workspace="api"} 5
tine_runs_live{workspace="web"} 1
# HELP tine_runs_running Live runs whose supervisor is alive.
# TYPE tine_runs_running gauge
tine_runs_running 3
`
	err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"tine_layer_bytes", "tine_layers", "tine_runs_frozen", "tine_runs_live", "tine_runs_running")
	if err != nil {
		t.Error(err)
	}
}

func TestMetrics_SourceFails(t *testing.T) {
	src := metrics.SourceFunc(func(ctx context.Context) ([]metrics.Holding, error) {
		return nil, errors.New("database is locked")
	})
	var log strings.Builder
	m := metrics.New(metrics.WithSource(src), metrics.WithErrorLog(logger{&log}))
	m.RolledBack()
	text := scrape(t, m) // still 200: the counters are served
	if !strings.Contains(text, "tine_rollbacks_total 1") || strings.Contains(text, "tine_runs_live") {
		t.Errorf("exposition without the source's gauges, with the counters, expected; got\n%s", text)
	}
	if !strings.Contains(log.String(), "database is locked") {
		t.Errorf("error log %q does not say why", log.String())
	}
	if !strings.Contains(scrape(t, m), `promhttp_metric_handler_errors_total{cause="gathering"} 1`) {
		t.Error("the failed scrape is not counted")
	}
}

type logger struct{ b *strings.Builder }

func (l logger) Println(v ...any) {
	for _, x := range v {
		l.b.WriteString(fmt.Sprint(x))
	}
}

func TestMetrics_Observe(t *testing.T) {
	m := metrics.New()
	m.ObserveHook("claude", "allow", 2*time.Millisecond)
	m.ObserveHook("claude", "allow", 3*time.Millisecond)
	m.ObserveHook("codex", "deny", time.Millisecond)
	m.ObserveVerdict("heuristic", metrics.VerdictWinner)
	m.ObserveVerdict("heuristic", metrics.VerdictWinner)
	m.ObserveAgent("claude", 90*time.Second, 0.42)
	m.ObserveAgent("claude", 30*time.Second, -1) // spend unknown
	reg := m.Registry()
	for _, c := range []struct {
		name   string
		labels map[string]string
		count  uint64
		sum    float64
	}{
		{"tine_hook_decision_duration_seconds", map[string]string{"agent": "claude", "decision": "allow"}, 2, .005},
		{"tine_hook_decision_duration_seconds", map[string]string{"agent": "codex", "decision": "deny"}, 1, .001},
		{"tine_agent_wall_seconds", map[string]string{"agent": "claude"}, 2, 120},
		{"tine_agent_spend_usd", map[string]string{"agent": "claude"}, 1, .42},
	} {
		h := histogram(t, reg, c.name, c.labels)
		if h.GetSampleCount() != c.count || math.Abs(h.GetSampleSum()-c.sum) > 1e-9 {
			t.Errorf("%s%v: count %d sum %v, want %d and %v", c.name, c.labels, h.GetSampleCount(), h.GetSampleSum(), c.count, c.sum)
		}
	}
	const want = `
# HELP tine_judge_verdicts_total Verdicts of the judge of a fork-run's forks, by judge and verdict: winner, no_winner or error.
# TYPE tine_judge_verdicts_total counter
tine_judge_verdicts_total{judge="heuristic",verdict="winner"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tine_judge_verdicts_total"); err != nil {
		t.Error(err)
	}
}

// TestMetrics_Promtool lints an exposition in which every family of tine's
// has samples.
func TestMetrics_Promtool(t *testing.T) {
	src := metrics.SourceFunc(func(ctx context.Context) ([]metrics.Holding, error) {
		return []metrics.Holding{{Workspace: "api", LiveRuns: 2, Running: 1, Layers: 3, LayerBytes: 1 << 20}}, nil
	})
	m := metrics.New(metrics.WithSource(src))
	m.Forked("overlay", engine.LiveRerun, 2, 40*time.Millisecond)
	m.Merged(engine.OutcomeMerged, 10*time.Millisecond, 20*time.Millisecond)
	m.Promoted()
	m.Discarded(3)
	m.RolledBack()
	m.Approved(string(tine.ActionMerge))
	m.ObserveHook("claude", "fork_first", time.Millisecond)
	m.ObserveVerdict("llm", metrics.VerdictNoWinner)
	m.ObserveAgent("codex", time.Minute, 1.5)
	text := scrape(t, m)
	for _, name := range []string{"tine_forks_total", "tine_runs_finished_total", "tine_merges_total", "tine_promotions_total",
		"tine_discards_total", "tine_rollbacks_total", "tine_approvals_total", "tine_judge_verdicts_total",
		"tine_fork_duration_seconds", "tine_merge_plan_duration_seconds", "tine_merge_apply_duration_seconds",
		"tine_hook_decision_duration_seconds", "tine_agent_wall_seconds", "tine_agent_spend_usd",
		"tine_runs_live", "tine_runs_running", "tine_runs_frozen", "tine_layers", "tine_layer_bytes"} {
		if !strings.Contains(text, "\n"+name) {
			t.Errorf("the exposition has no %s", name)
		}
	}
	promtool(t, text)
}
