package engine

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/sqlite"
)

// listingStore is a store that counts the listings of a workspace's runs,
// what a whole sweep reads and a command's own work does not need.
type listingStore struct {
	StoreFile
	lists *atomic.Int64
}

type listingTx struct {
	tine.Tx
	lists *atomic.Int64
}

func (s listingStore) View(ctx context.Context, fn func(tine.Tx) error) error {
	return s.StoreFile.View(ctx, func(tx tine.Tx) error { return fn(listingTx{tx, s.lists}) })
}

func (s listingStore) Update(ctx context.Context, fn func(tine.Tx) error) error {
	return s.StoreFile.Update(ctx, func(tx tine.Tx) error { return fn(listingTx{tx, s.lists}) })
}

func (tx listingTx) Runs(f tine.RunFilter) ([]*tine.Run, error) {
	if f.Workspace != "" && f.Parent == "" && f.Group == "" && f.State == "" {
		tx.lists.Add(1)
	}
	return tx.Tx.Runs(f)
}

// openCounting opens f's engine with a store that counts the listings of
// a workspace's runs, and returns how many Open made.
func (f *fixture) openCounting() int64 {
	f.t.Helper()
	var lists atomic.Int64
	f.open(WithStore(func(path string) (StoreFile, error) {
		st, err := sqlite.Open(path)
		if err != nil {
			return nil, err
		}
		return listingStore{st, &lists}, nil
	}))
	return lists.Load()
}

// TestOpen_SweepsOnlyWhatIsLeft is issue 24's "every command opens and
// sweeps the whole store": with 1,000 runs recorded, nearly all discarded,
// tine ls was 2.1-3.4x slower than on a fresh store. A command's Open
// sweeps a workspace whole (reading every run it ever had) only when a
// command died or warned there, after a reboot, or when a directory is
// one the store does not have as live.
func TestOpen_SweepsOnlyWhatIsLeft(t *testing.T) {
	f := newFixture(t, "copy")
	res := f.fork(3)
	if _, err := f.e.Discard(f.ctx, res.Group.ID, true); err != nil {
		t.Fatal(err)
	}
	f.reopen()
	f.e.Close()
	if n := f.openCounting(); n != 0 {
		t.Errorf("Open with nothing left to put right listed the workspace's runs %d time(s)", n)
	}
	// A command killed while holding the workspace's lock leaves its mark.
	unlock, err := f.e.LockWorkspace(f.ref.Workspace.ID)
	if err != nil {
		t.Fatal(err)
	}
	mark := f.e.lay.Workspace(f.ref.Workspace.ID).Unfinished()
	if _, err := os.Stat(mark); err != nil {
		t.Fatalf("no unfinished mark while the lock is held: %v", err)
	}
	unlock()
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Fatalf("the mark stayed after a command that did not warn: %v", err)
	}
	f.e.Close()
	if err := os.WriteFile(mark, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if n := f.openCounting(); n == 0 {
		t.Error("Open after a command that died did not sweep")
	}
	if _, err := os.Stat(mark); !os.IsNotExist(err) {
		t.Errorf("the sweep left the mark: %v", err)
	}
	f.e.Close()
	// A reboot: another boot id.
	old := bootIDFile
	bootIDFile = filepath.Join(t.TempDir(), "boot_id")
	t.Cleanup(func() { bootIDFile = old })
	if err := os.WriteFile(bootIDFile, []byte("another-boot\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if n := f.openCounting(); n == 0 {
		t.Error("Open after a reboot did not sweep")
	}
	f.e.Close()
	if n := f.openCounting(); n != 0 {
		t.Errorf("Open after the sweep of this boot listed the runs %d time(s)", n)
	}
	// A discarded run's directory that is still there (a discard cut short).
	stray := f.e.lay.Run(f.ref.Workspace.ID, res.Forks[0].ID).Dir()
	if err := os.MkdirAll(stray, 0o700); err != nil {
		t.Fatal(err)
	}
	f.e.Close()
	if n := f.openCounting(); n == 0 {
		t.Error("Open with a discarded run's directory left did not sweep")
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("the discarded run's directory stayed: %v", err)
	}
}

// TestOpen_DamageFoundByAQuery: a command that does not check the store
// whole (nothing is left to put right) still refuses a damaged store, with
// tine.ErrStore, once a query reaches the damage.
func TestOpen_DamageFoundByAQuery(t *testing.T) {
	f := newFixture(t, "copy")
	f.fork(1)
	f.reopen() // swept whole: the next Open skips the check
	f.e.Close()
	if storeCheckDue(f.home) {
		t.Fatal("the store check is due with nothing left to put right")
	}
	db := filepath.Join(f.home, "tine.db")
	b, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	const page = 4096 // every page but the first (the schema) zeroed
	if len(b) <= page {
		t.Fatalf("tine.db is %d bytes", len(b))
	}
	clear(b[page:])
	if err := os.WriteFile(db, b, 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Open(f.ctx, f.home, testOptions(WithWarnings(io.Discard))...)
	if err == nil {
		_, err = e.FindRun(f.ctx, f.ref.Run.Name)
		e.Close()
	}
	if !errors.Is(err, tine.ErrStore) {
		t.Errorf("a damaged store: %v, want tine.ErrStore", err)
	}
	f.e = nil
}

// TestLiveRecords: tine ls reads the live runs (and a discarded parent of
// one, for its name), not every run the workspace ever had.
func TestLiveRecords(t *testing.T) {
	f := newFixture(t, "copy")
	res := f.fork(2)
	child, err := f.e.Fork(f.ctx, res.Forks[0].Name, ForkOptions{Copies: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.e.Discard(f.ctx, res.Forks[0].Name, true); err != nil {
		t.Fatal(err)
	}
	var lists atomic.Int64
	f.e.Close()
	f.open(WithStore(func(path string) (StoreFile, error) {
		st, err := sqlite.Open(path)
		return listingStore{st, &lists}, err
	}))
	lists.Store(0) // what Open swept
	recs, err := f.e.LiveRecords(f.ctx, "")
	if err != nil || len(recs) != 1 {
		t.Fatalf("LiveRecords = %v, %v", recs, err)
	}
	var live, names []string
	for _, r := range recs[0].Runs {
		names = append(names, r.Name)
		if r.Active() {
			live = append(live, r.Name)
		}
	}
	want := []string{f.ref.Run.Name, res.Forks[1].Name, child.Forks[0].Name}
	if len(live) != 3 || live[0] != want[0] || live[1] != want[1] || live[2] != want[2] ||
		len(names) != 4 || names[3] != res.Forks[0].Name {
		t.Errorf("LiveRecords: runs %v (live %v), want live %v and the discarded parent %s", names, live, want, res.Forks[0].Name)
	}
	if n := lists.Load(); n != 0 {
		t.Errorf("LiveRecords listed every run of the workspace %d time(s)", n)
	}
}

// TestOpen_WithoutSweepLeavesItToTheDaemon: root's tine, sending a
// command's work to the daemon that serves its state directory, opened
// and swept the state directory first (every workspace's live runs
// checked, on every command). WithoutSweep opens it untouched: a
// command-died mark and a stray run directory stay for the daemon's
// sweep, which a plain Open still does.
func TestOpen_WithoutSweepLeavesItToTheDaemon(t *testing.T) {
	f := newFixture(t, "copy")
	res := f.fork(1)
	if _, err := f.e.Discard(f.ctx, res.Group.ID, true); err != nil {
		t.Fatal(err)
	}
	f.e.Close()
	mark := f.e.lay.Workspace(f.ref.Workspace.ID).Unfinished()
	stray := f.e.lay.Run(f.ref.Workspace.ID, res.Forks[0].ID).Dir()
	for _, err := range []error{os.WriteFile(mark, nil, 0o600), os.MkdirAll(stray, 0o700)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	var lists atomic.Int64
	f.open(WithoutSweep(), WithStore(func(path string) (StoreFile, error) {
		st, err := sqlite.Open(path)
		if err != nil {
			return nil, err
		}
		return listingStore{st, &lists}, nil
	}))
	if n := lists.Load(); n != 0 {
		t.Errorf("Open WithoutSweep listed the workspace's runs %d time(s)", n)
	}
	for _, p := range []string{mark, stray} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("Open WithoutSweep put right %s, the daemon's to sweep: %v", p, err)
		}
	}
	if _, err := f.e.FindRun(f.ctx, f.ref.Run.ID); err != nil {
		t.Errorf("an engine opened WithoutSweep cannot find the source: %v", err)
	}
	// A command it does (the daemon's) leaves the dead command's mark
	// for the sweep: the mark is all that says one is due.
	unlock, err := f.e.LockWorkspace(f.ref.Workspace.ID)
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if _, err := os.Stat(mark); err != nil {
		t.Errorf("a command that found a dead command's mark removed it unswept: %v", err)
	}
	f.e.Close()
	if n := f.openCounting(); n == 0 {
		t.Error("a plain Open after it did not sweep")
	}
	for _, p := range []string{mark, stray} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("the sweep left %s: %v", p, err)
		}
	}
}
