package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/postgres/pgtest"
)

// open opens a fleet in a fresh schema of the test PostgreSQL.
func open(t *testing.T) *Fleet {
	t.Helper()
	f, err := Open(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

var spec = Spec{Repo: "/srv/app", Commit: strings.Repeat("a", 40), Request: forkrun.Request{Prompt: "fix it"}}

// TestOpen_Concurrent: nodes opening a new database at once migrate it
// once (River's tables and the fleet's).
func TestOpen_Concurrent(t *testing.T) {
	url := pgtest.URL(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			f, err := Open(context.Background(), url)
			if err == nil {
				f.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestSubmit_Key: submitters of one key, at once, queue one task and one
// job; without a key each submit is a task of its own.
func TestSubmit_Key(t *testing.T) {
	f := open(t)
	ctx := context.Background()
	s := spec
	s.Key = "k"
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, _, err := f.Submit(ctx, s)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("one key gave tasks %v", ids)
		}
	}
	if _, _, err := f.Submit(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var tasks, jobs int
	if err := f.pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM fleet_tasks), (SELECT count(*) FROM river_job)").Scan(&tasks, &jobs); err != nil {
		t.Fatal(err)
	}
	if tasks != 2 || jobs != 2 {
		t.Errorf("%d tasks, %d jobs; want 2 of each", tasks, jobs)
	}
	if _, _, err := f.Submit(ctx, Spec{Repo: "x"}); !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("a task without a commit: %v, want ErrInvalid", err)
	}
}

// TestClaim_Once: of several deliveries of one task's job, on several
// nodes at once, one claims it; a result recorded after the task was
// declared lost is refused.
func TestClaim_Once(t *testing.T) {
	f := open(t)
	ctx := context.Background()
	id, _, err := f.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var won []string
	var wg sync.WaitGroup
	for _, node := range []string{"a", "b", "c", "d"} {
		wg.Go(func() {
			tk, _, err := f.claim(ctx, id, node)
			if err != nil {
				t.Error(err)
			}
			if tk != nil {
				mu.Lock()
				won = append(won, node)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(won) != 1 {
		t.Fatalf("claimed by %v; want one node", won)
	}
	if err := f.markLost(ctx, id, won[0], "gone"); err != nil {
		t.Fatal(err)
	}
	ok, err := f.record(ctx, id, won[0], Result{Report: &forkrun.Report{Outcome: forkrun.OutcomeReported}})
	if err != nil || ok {
		t.Errorf("a result after the task was lost: recorded %v, %v; want refused", ok, err)
	}
	if tk, _, _ := f.claim(ctx, id, "e"); tk != nil {
		t.Error("a lost task was claimed again")
	}
}

// TestWithdraw: a queued task withdrawn is canceled at once and never
// claimed; a running one records the request (kept from the first asker)
// for its node, which sees it at its next charge, and it stays running
// until its node records it canceled; a task that ended says so, and an
// unknown one is not found.
func TestWithdraw(t *testing.T) {
	f := open(t)
	ctx := context.Background()
	queued, _, err := f.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if w, err := f.Withdraw(ctx, queued, "canceled by ann"); err != nil || w.State != TaskCanceled || w.Was != TaskQueued {
		t.Fatalf("withdraw of a queued task: %+v, %v; want canceled", w, err)
	}
	if tk, _, _ := f.claim(ctx, queued, "n"); tk != nil {
		t.Fatal("a withdrawn task was claimed")
	}
	s := spec
	s.Key = "running"
	running, _, err := f.Submit(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if tk, _, err := f.claim(ctx, running, "n"); tk == nil || err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, cancel, err := f.charge(ctx, running, 0); cancel != "" || err != nil {
		t.Fatalf("charge before any withdrawal: cancel %q, %v", cancel, err)
	}
	for _, who := range []string{"canceled by ann", "canceled by bob"} {
		if w, err := f.Withdraw(ctx, running, who); err != nil || w.State != TaskRunning || w.Node != "n" {
			t.Fatalf("withdraw of a running task by %s: %+v, %v; want running (being stopped) on n", who, w, err)
		}
	}
	if _, cancel, err := f.charge(ctx, running, 0.01); cancel != "canceled by ann" || err != nil {
		t.Fatalf("the node's charge after the withdrawal: cancel %q, %v; want the first asker's", cancel, err)
	}
	if ok, err := f.record(ctx, running, "n", Result{Note: "canceled by ann", Err: fmt.Errorf("x: %w", ErrCanceled)}); !ok || err != nil {
		t.Fatalf("record: %v %v", ok, err)
	}
	if tk, err := f.Task(ctx, running); err != nil || tk.State != TaskCanceled || tk.Reason != "canceled by ann" || !tk.Final() {
		t.Fatalf("the stopped task: %+v, %v; want canceled, saying by whom", tk, err)
	}
	if w, err := f.Withdraw(ctx, running, "again"); err != nil || w.State != TaskCanceled {
		t.Errorf("withdraw of an ended task: %+v, %v; want its final state", w, err)
	}
	if _, err := f.Withdraw(ctx, "tnone", "x"); !errors.Is(err, tine.ErrNotFound) {
		t.Errorf("withdraw of no task: %v", err)
	}
	if got, err := f.TaskByKey(ctx, "running"); got != running || err != nil {
		t.Errorf("task of key running: %q, %v; want %s", got, err, running)
	}
	if _, err := f.TaskByKey(ctx, "none"); !errors.Is(err, tine.ErrNotFound) {
		t.Errorf("task of no key: %v", err)
	}
}

// TestToClean: a node's ended task with a workspace is to be cleaned
// once it ended longer ago than the retention, and no more once cleaned;
// a running task, another node's, or one that made no workspace never is.
func TestToClean(t *testing.T) {
	f := open(t)
	ctx := context.Background()
	ids := map[string]string{}
	for _, k := range []string{"ended", "running", "other", "noworkspace"} {
		s := spec
		s.Key = k
		id, _, err := f.Submit(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		ids[k] = id
		node := "n"
		if k == "other" {
			node = "m"
		}
		if tk, _, err := f.claim(ctx, id, node); tk == nil || err != nil {
			t.Fatalf("claim %s: %v", k, err)
		}
		if k == "running" {
			continue
		}
		ws := "w" + k
		if k == "noworkspace" {
			ws = ""
		}
		if ok, err := f.record(ctx, id, node, Result{Workspace: ws}); !ok || err != nil {
			t.Fatalf("record %s: %v %v", k, ok, err)
		}
	}
	list := func(retain time.Duration) []string {
		ts, err := f.toClean(ctx, "n", retain)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range ts {
			out = append(out, tk.ID)
		}
		return out
	}
	if got := list(time.Hour); len(got) != 0 {
		t.Errorf("to clean with an hour's retention: %v; want none yet", got)
	}
	time.Sleep(10 * time.Millisecond)
	if got := list(time.Millisecond); len(got) != 1 || got[0] != ids["ended"] {
		t.Fatalf("to clean past the retention: %v; want the ended task %s alone", got, ids["ended"])
	}
	tk, _ := f.Task(ctx, ids["ended"])
	if err := f.cleaned(ctx, tk); err != nil {
		t.Fatal(err)
	}
	if got := list(time.Millisecond); len(got) != 0 {
		t.Errorf("to clean after it was cleaned: %v", got)
	}
	if tk, _ = f.Task(ctx, ids["ended"]); tk.CleanedAt == nil {
		t.Error("the cleaned task has no cleaned_at")
	}
}

// TestReap_ForgetsAPINodes: a node of capacity 0 (a tine-api pod) gone
// for more than ForgetAPIAfter leaves the list of nodes at the next reap;
// one that is up, gone more recently, that ran tasks or that holds a
// workspace stays. Before, every tine-api pod a Deployment ran stayed
// listed for good.
func TestReap_ForgetsAPINodes(t *testing.T) {
	f := open(t)
	ctx := context.Background()
	for _, n := range []NodeInfo{{Name: "api-old", Capacity: 0}, {Name: "api-recent", Capacity: 0}, {Name: "api-up", Capacity: 0},
		{Name: "api-home", Capacity: 0}, {Name: "worker-old", Capacity: 1}} {
		n.Beat = time.Second
		if _, err := f.Register(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	old := "now() - interval '2 hours'"
	for _, q := range []string{
		"UPDATE fleet_nodes SET state = 'stopped', beat_at = " + old + " WHERE name IN ('api-old', 'api-home', 'worker-old')",
		"UPDATE fleet_nodes SET state = 'lost', beat_at = now() - interval '5 minutes' WHERE name = 'api-recent'",
	} {
		if _, err := f.pool.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SetHome(ctx, "w1", "api-home"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Reap(ctx); err != nil {
		t.Fatal(err)
	}
	nodes, err := f.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, n := range nodes {
		names = append(names, n.Name)
	}
	if strings.Join(names, " ") != "api-home api-recent api-up worker-old" {
		t.Errorf("nodes after the reap: %v; want all but api-old", names)
	}
}

// TestReap: a node silent for LostAfter beats is declared lost, once,
// with its running tasks, by any node; a node that beats again is up,
// its tasks staying lost; a node registering again loses what its last
// incarnation was running.
func TestReap(t *testing.T) {
	f := open(t)
	ctx := context.Background()
	for _, n := range []string{"quiet", "alive"} {
		if _, err := f.Register(ctx, NodeInfo{Name: n, Capacity: 1, Beat: 20 * time.Millisecond}); err != nil {
			t.Fatal(err)
		}
	}
	id, _, _ := f.Submit(ctx, spec)
	if tk, _, err := f.claim(ctx, id, "quiet"); tk == nil || err != nil {
		t.Fatalf("claim: %v %v", tk, err)
	}
	time.Sleep(LostAfter*20*time.Millisecond + 50*time.Millisecond)
	if err := f.Beat(ctx, "alive"); err != nil {
		t.Fatal(err)
	}
	var lost []Lost
	var wg sync.WaitGroup
	var mu sync.Mutex
	for range 3 {
		wg.Go(func() {
			l, err := f.Reap(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			lost = append(lost, l...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(lost) != 1 || lost[0].Task != id || !strings.Contains(lost[0].Reason, "stopped heartbeating") {
		t.Fatalf("reaped %+v; want task %s once, saying its node stopped heartbeating", lost, id)
	}
	n, err := f.Node(ctx, "quiet")
	if err != nil || n.State != NodeLost {
		t.Errorf("node quiet: %+v, %v; want lost", n, err)
	}
	if a, _ := f.Node(ctx, "alive"); a == nil || a.State != NodeUp {
		t.Errorf("node alive: %+v; want up", a)
	}
	if err := f.Beat(ctx, "quiet"); err != nil {
		t.Fatal(err)
	}
	tk, err := f.Task(ctx, id)
	if err != nil || tk.State != TaskLost {
		t.Errorf("task after its node came back: %+v, %v; want lost", tk, err)
	}

	id2, _, _ := f.Submit(ctx, spec)
	f.claim(ctx, id2, "alive")
	again, err := f.Register(ctx, NodeInfo{Name: "alive", Capacity: 1, Beat: time.Second})
	if err != nil || len(again) != 1 || again[0] != id2 {
		t.Errorf("registering again: lost %v, %v; want [%s]", again, err, id2)
	}
	if _, err := f.Register(ctx, NodeInfo{Name: "bad name", Capacity: 1}); !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("node name with a space: %v, want ErrInvalid", err)
	}
}

// TestBatch_Budget: nodes charging the tasks of one batch at once add up
// to what the tasks spent (each task's money counted once, however often
// its total is charged); once the batch's spend crosses its cap a task
// not started yet is skipped, saying how much was spent, and never run.
func TestBatch_Budget(t *testing.T) {
	f := open(t)
	ctx := context.Background()
	b, err := f.NewBatch(ctx, "nightly", 0.05)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := f.NewBatch(ctx, "nightly", 9); err != nil || again.ID != b.ID || again.CapUSD != 0.05 {
		t.Fatalf("the batch's key again: %+v, %v; want batch %s with its cap of 0.05", again, err, b.ID)
	}
	s := spec
	s.Batch = b.ID
	var ids []string
	for range 5 {
		id, _, err := f.Submit(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	var wg sync.WaitGroup
	for _, id := range ids[:4] {
		if tk, _, err := f.claim(ctx, id, "n"); tk == nil || err != nil {
			t.Fatalf("claim %s: %v %v", id, tk, err)
		}
		for i := 1; i <= 4; i++ { // running totals, charged at once, some twice
			wg.Go(func() {
				if _, _, err := f.charge(ctx, id, float64(i)*0.003); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Wait()
	got, err := f.Batch(ctx, b.ID)
	if err != nil || !near(got.SpentUSD, 4*0.012) || got.Spent() {
		t.Fatalf("batch after 4 tasks spent $0.012 each: %+v, %v; want $0.048 spent, under its cap", got, err)
	}
	if got, _, _ = f.charge(ctx, ids[0], 0.015); !got.Over() {
		t.Fatalf("batch after a task went on to $0.015: %+v; want over its cap", got)
	}
	tk, skipped, err := f.claim(ctx, ids[4], "n")
	if err != nil || tk != nil || !skipped {
		t.Fatalf("claim after the batch's budget was spent: %v, %v, %v; want skipped", tk, skipped, err)
	}
	tk, _ = f.Task(ctx, ids[4])
	if tk.State != TaskSkipped || !strings.Contains(tk.Reason, "budget: batch "+b.ID+" had spent $0.0510 of its $0.0500 cap") || !tk.Final() {
		t.Errorf("the task after the batch: %s (%s); want skipped, with the amounts", tk.State, tk.Reason)
	}
	if tk, _ = f.Task(ctx, ids[0]); !near(tk.CostUSD, 0.015) || tk.Batch != b.ID {
		t.Errorf("task %s: cost %v, batch %s; want 0.015 in %s", ids[0], tk.CostUSD, tk.Batch, b.ID)
	}
	if _, err := f.NewBatch(ctx, "", -1); !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("a negative aggregate budget: %v, want ErrInvalid", err)
	}
}

// near reports whether a and b are equal to a millionth of a dollar.
func near(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 }
