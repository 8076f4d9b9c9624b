package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/forkrun"
)

// PrefixBatch is the prefix of a batch's id.
const PrefixBatch = "b"

// meterEvery is how often a node charges a running task's spend to its
// batch and looks whether the batch crossed its cap (another node's task
// may have taken it over).
const meterEvery = 250 * time.Millisecond

// Batch is the tasks submitted together and what they spent, against
// the aggregate budget they share. Nodes charge each task's spend to its
// batch as the task goes, in one transaction with the task's own cost: a
// task that would start once the batch's budget is spent is skipped, and
// one running when the batch crosses its cap is stopped.
type Batch struct {
	ID       string  `json:"id"`
	Key      string  `json:"key"`
	CapUSD   float64 `json:"cap_usd"` // 0: no cap
	SpentUSD float64 `json:"spent_usd"`
}

// Spent reports whether b has a cap and its tasks spent all of it:
// nothing more may start.
func (b *Batch) Spent() bool { return b.CapUSD > 0 && b.SpentUSD >= b.CapUSD }

// Over reports whether b's tasks spent more than its cap: those running
// are stopped.
func (b *Batch) Over() bool { return b.CapUSD > 0 && b.SpentUSD > b.CapUSD }

// NewBatch makes the batch of key with an aggregate budget of capUSD (0
// for none) and returns it; a key made before returns that batch as it
// was made, its cap unchanged. "" gives a fresh key. It fails wrapping
// tine.ErrInvalid for a cap that is negative or not a number.
func (f *Fleet) NewBatch(ctx context.Context, key string, capUSD float64) (*Batch, error) {
	if math.IsNaN(capUSD) || math.IsInf(capUSD, 0) || capUSD < 0 {
		return nil, fmt.Errorf("aggregate budget %v: 0 (none) or a positive amount of US dollars: %w", capUSD, tine.ErrInvalid)
	}
	b := &Batch{ID: tine.NewID(PrefixBatch), Key: key}
	if b.Key == "" {
		b.Key = b.ID
	}
	err := f.pool.QueryRow(ctx, `INSERT INTO fleet_batches (id, key, cap_usd) VALUES ($1, $2, $3)
		ON CONFLICT (key) DO UPDATE SET key = excluded.key RETURNING id, cap_usd, spent_usd`,
		b.ID, b.Key, capUSD).Scan(&b.ID, &b.CapUSD, &b.SpentUSD)
	if err != nil {
		return nil, fmt.Errorf("fleet: batch %s: %w", b.Key, err)
	}
	return b, nil
}

// Batch returns batch id; tine.ErrNotFound when there is none.
func (f *Fleet) Batch(ctx context.Context, id string) (*Batch, error) {
	b := &Batch{ID: id}
	err := f.pool.QueryRow(ctx, "SELECT key, cap_usd, spent_usd FROM fleet_batches WHERE id = $1", id).Scan(&b.Key, &b.CapUSD, &b.SpentUSD)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("batch %s: %w", id, tine.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("fleet: batch %s: %w", id, err)
	}
	return b, nil
}

// charge records that task id has spent totalUSD so far: what it spent
// since its last charge is added to the task's cost and to its batch's
// spend in one transaction (the task's row locked, so two charges of one
// task never count the same money twice; a total lower than the one
// recorded adds nothing). It returns the batch as it stands after (nil
// when the task has none) and the task's request to stop ("" for none,
// see Withdraw).
func (f *Fleet) charge(ctx context.Context, id string, totalUSD float64) (b *Batch, cancel string, err error) {
	err = pgx.BeginFunc(ctx, f.pool, func(tx pgx.Tx) error {
		var batch string
		var was float64
		err := tx.QueryRow(ctx, "SELECT batch, cost_usd, cancel FROM fleet_tasks WHERE id = $1 FOR UPDATE", id).Scan(&batch, &was, &cancel)
		if err != nil {
			return err
		}
		delta := max(totalUSD-was, 0)
		if delta > 0 {
			if _, err := tx.Exec(ctx, "UPDATE fleet_tasks SET cost_usd = $2 WHERE id = $1", id, totalUSD); err != nil {
				return err
			}
		}
		if batch == "" {
			return nil
		}
		b = &Batch{ID: batch}
		return tx.QueryRow(ctx, `UPDATE fleet_batches SET spent_usd = spent_usd + $2 WHERE id = $1
			RETURNING key, cap_usd, spent_usd`, batch, delta).Scan(&b.Key, &b.CapUSD, &b.SpentUSD)
	})
	if err != nil {
		return nil, "", fmt.Errorf("fleet: charge task %s: %w", id, err)
	}
	return b, cancel, nil
}

// meter charges task id's spend (what h's report counts) to its batch
// every meterEvery until h's fork-run ends, stops h's forks once the
// batch is over its cap, and calls withdraw once the task is withdrawn
// (Withdraw), with who asked. It returns the fork-run's report and error,
// and why it was stopped for its budget ("" when it was not).
func (f *Fleet) meter(ctx context.Context, id string, h *forkrun.Handle, withdraw func(why string)) (rep *forkrun.Report, why string, err error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		rep, err = h.Wait()
	}()
	tick := time.NewTicker(meterEvery)
	defer tick.Stop()
	bg := context.WithoutCancel(ctx) // money spent is charged, also as the node stops
	withdrawn := false
	for {
		select {
		case <-done:
			if rep != nil {
				if _, _, cerr := f.charge(bg, id, rep.TotalUSD()); cerr != nil && err == nil {
					err = cerr
				}
			}
			return rep, why, err
		case <-tick.C:
		}
		b, cancel, cerr := f.charge(bg, id, h.Report().TotalUSD())
		if cancel != "" && !withdrawn {
			withdrawn = true
			withdraw(cancel)
		}
		if cerr != nil || b == nil || !b.Over() || why != "" {
			continue
		}
		why = fmt.Sprintf("budget: batch %s spent %s, over its cap of %s: the task was stopped", b.ID, usd(b.SpentUSD), usd(b.CapUSD))
		h.StopForBudget(why)
	}
}

// usd formats an amount of US dollars to a hundredth of a cent.
func usd(v float64) string { return "$" + strconv.FormatFloat(v, 'f', 4, 64) }
