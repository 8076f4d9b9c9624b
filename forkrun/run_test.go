package forkrun_test

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
	"github.com/tinehq/tine/forkrun"
)

// These tests run fork-run in process, so that -race sees the runner, its
// saver, the budget callbacks and the progress calls together (the
// end-to-end tests in cmd/tine run a tine binary built without -race).

// testWorkspace inits an overlay workspace holding app.txt ("status BUG")
// in a fresh state directory; it skips unless root and overlay work.
func testWorkspace(t *testing.T) (*engine.Engine, string) {
	t.Helper()
	w := enginetest.New(t, enginetest.Options{Backend: "overlay", Name: "ws", Files: map[string]string{"app.txt": "status BUG\n"}})
	return w.Engine, w.Path
}

// progressLog records Progress calls; it has no lock of its own, so -race
// reports calls that are not serialised.
type progressLog struct {
	calls int
	last  *forkrun.Report
}

func (p *progressLog) update(r *forkrun.Report) { p.calls++; p.last = r }

func TestRun_ChargesAgainstTheAggregateCap(t *testing.T) {
	e, _ := testWorkspace(t)
	var pl progressLog
	// Four agents charge $0.001 fifty times each, as fast as they can;
	// the aggregate cap of $0.1 stops them part way.
	cmd := `for i in $(seq 50); do echo '{"tine_cost_usd": 0.001}'; echo "step $i"; done; echo "$TINE_APPROACH" > out.txt`
	o := forkrun.Options{
		Source: "ws/source", Prompt: "charge", N: 4, Approaches: []string{"a", "b", "c", "d"},
		Agent:  agent.Config{Kind: agent.CommandKind, Args: []string{"sh", "-c", cmd}},
		Budget: 1, Aggregate: 0.1, Mode: forkrun.Manual, Progress: pl.update,
	}
	rep, err := forkrun.Run(context.Background(), forkrun.NewHost(e), o)
	if err != nil && rep == nil {
		t.Fatal(err)
	}
	if pl.calls == 0 || pl.last.Outcome == forkrun.OutcomeRunning {
		t.Errorf("progress: %d calls, last outcome %v", pl.calls, pl.last.Outcome)
	}
	total, killed := 0.0, 0
	for _, f := range rep.Forks {
		total += f.CostUSD
		switch f.State {
		case forkrun.BudgetKilled:
			killed++
			if !strings.Contains(f.Reason, "aggregate cap") {
				t.Errorf("%s: reason %q", f.Name, f.Reason)
			}
			if rep.Verdict == nil {
				continue // nothing was judged: every fork was stopped
			}
			if _, judged := rep.Verdict.Scores[f.Run]; judged {
				t.Errorf("%s was killed but judged", f.Name)
			}
		case forkrun.Finished:
		default:
			t.Errorf("%s: %s (%s)", f.Name, f.State, f.Reason)
		}
	}
	if killed == 0 {
		t.Error("200 charges of $0.001 against a $0.1 aggregate cap killed no fork")
	}
	if total > 0.1+1e-12 || math.Abs(total-rep.TotalUSD()) > 1e-12 {
		t.Errorf("forks spent $%v in all (report: $%v), over the $0.1 cap", total, rep.TotalUSD())
	}
	// The report on disk is the one returned.
	b, err := os.ReadFile(e.Layout().Group(rep.Workspace, rep.Group).Report())
	if err != nil {
		t.Fatal(err)
	}
	var disk forkrun.Report
	if err := json.Unmarshal(b, &disk); err != nil || disk.Outcome != rep.Outcome || len(disk.Forks) != 4 || disk.FinishedAt.IsZero() {
		t.Errorf("report on disk: outcome %q forks %d finished %v (%v)", disk.Outcome, len(disk.Forks), disk.FinishedAt, err)
	}
}

func TestRun_InterruptKillsAgentsAndKeepsForks(t *testing.T) {
	e, path := testWorkspace(t)
	ctx, cancel := context.WithCancel(context.Background())
	var once sync.Once
	o := forkrun.Options{
		Source: "ws/source", Prompt: "wait", N: 2,
		Agent: agent.Config{Kind: agent.CommandKind, Args: []string{"sh", "-c", "echo started; sleep 3207; touch late.txt"}},
		Mode:  forkrun.Auto,
		Progress: func(r *forkrun.Report) {
			running := 0
			for _, f := range r.Forks {
				if f.State == forkrun.Running && f.Agent.OutputTotalBytes > 0 {
					running++
				}
			}
			if running == 2 {
				once.Do(cancel)
			}
		},
	}
	// Never hang if the agents are not seen running: fail instead.
	guard := time.AfterFunc(20*time.Second, func() { t.Error("the agents were never seen running"); cancel() })
	defer guard.Stop()
	t0 := time.Now()
	rep, err := forkrun.Run(ctx, forkrun.NewHost(e), o)
	if err == nil || rep == nil {
		t.Fatalf("interrupted fork-run: report %v, error %v", rep != nil, err)
	}
	if rep.Outcome != forkrun.OutcomeCanceled || rep.Verdict != nil {
		t.Errorf("outcome %s (%s), verdict %+v: want canceled, unjudged", rep.Outcome, rep.OutcomeDetail, rep.Verdict)
	}
	if d := time.Since(t0); d > 30*time.Second {
		t.Errorf("took %v after the interrupt", d)
	}
	for _, f := range rep.Forks {
		if f.State != forkrun.Canceled {
			t.Errorf("%s: %s, want canceled", f.Name, f.State)
		}
		ref, err := e.FindRun(context.Background(), f.Run)
		if err != nil || !ref.Run.Active() {
			t.Errorf("%s is gone after an interrupt: %v", f.Name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(path, "app.txt")); string(b) != "status BUG\n" {
		t.Errorf("the source changed: %q", b)
	}
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && strings.Contains(string(b), "3207") {
			t.Errorf("an agent outlived the interrupt: pid %s %q", d.Name(), b)
		}
	}
}

// TestRun_ClaudeSessionFromTheHookFirst: without --session, the session
// the run's hook last reported is continued when Claude's store has it,
// though another session of the workspace is newer; without a hook
// session, the newest.
func TestRun_ClaudeSessionFromTheHookFirst(t *testing.T) {
	e, path := testWorkspace(t)
	ctx := context.Background()
	home := t.TempDir()
	store := filepath.Join(home, ".claude", "projects", agent.ClaudeProjectName(path))
	if err := os.MkdirAll(store, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, id := range []string{"hooked", "newer"} {
		p := filepath.Join(store, id+".jsonl")
		line := `{"type":"user","cwd":"` + path + `","sessionId":"` + id + `"}` + "\n"
		if err := os.WriteFile(p, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
		mod := time.Now().Add(time.Duration(i-2) * time.Minute)
		os.Chtimes(p, mod, mod)
	}
	// A stand-in for claude: it records its argv in the fork's files (its
	// /tmp is its own), and prints a result line.
	bin := filepath.Join(t.TempDir(), "claude")
	script := "#!/bin/sh\necho \"$@\" > argv.txt\n" +
		`echo '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"fork-s"}'` + "\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func() *forkrun.Report {
		t.Helper()
		rep, err := forkrun.Run(ctx, forkrun.NewHost(e), forkrun.Options{Source: "ws/source", Prompt: "p", N: 1, Mode: forkrun.Manual,
			Agent: agent.Config{Kind: agent.Claude, Binary: bin}, AgentEnv: []string{"HOME=" + home}})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return rep
	}
	if c := run().Conversation; c == nil || c.Session != "newer" || c.From != forkrun.FromNewest {
		t.Errorf("without a hook session: %+v, want the newest", c)
	}
	src, err := e.FindRun(ctx, "ws/source")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := control.Of(e).RecordEvidence(ctx, src, engine.EvidenceTurnStarted, json.RawMessage(`{"agent":"claude","session_id":"hooked"}`)); err != nil {
		t.Fatal(err)
	}
	rep := run()
	if c := rep.Conversation; c == nil || c.Session != "hooked" || c.From != forkrun.FromHook {
		t.Errorf("with a hook session: %+v, want hooked", c)
	}
	f, err := e.FindRun(ctx, rep.Forks[0].Run)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(e.Path(f.Workspace, f.Run), "argv.txt"))
	if !strings.Contains(string(b), "--resume hooked --fork-session") {
		t.Errorf("claude's argv %q", b)
	}
}
