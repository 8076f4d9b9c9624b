package capability

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tinehq/tine"
)

// Keyring gives a Verifier the capabilities and nonces kept in a
// tine.Store.
type Keyring struct {
	Store tine.Store
}

var (
	_ Keys   = Keyring{}
	_ Nonces = Keyring{}
)

// Capability returns the stored capability of run.
func (k Keyring) Capability(ctx context.Context, run string) (*tine.Capability, error) {
	var c *tine.Capability
	err := k.Store.View(ctx, func(tx tine.Tx) error {
		var err error
		c, err = tx.Capability(run)
		return err
	})
	return c, err
}

// Seen records run's nonce in the store and reports whether run had already
// used it, forgetting nonces whose time has passed.
func (k Keyring) Seen(ctx context.Context, run, nonce string, now, until time.Time) (bool, error) {
	var seen bool
	err := k.Store.Update(ctx, func(tx tine.Tx) error {
		var err error
		seen, err = tx.SeeNonce(run, nonce, now, until)
		return err
	})
	return seen, err
}

// Issue gives run a fresh capability in tx, replacing its last one, and
// returns it for the run's token file.
func Issue(tx tine.Tx, run string) (Capability, error) {
	c, err := New(run)
	if err != nil {
		return Capability{}, err
	}
	rec := &tine.Capability{Run: run, Secret: c.Secret}
	if err := tx.SetCapability(rec); err != nil {
		return Capability{}, fmt.Errorf("issue capability: %w", err)
	}
	c.Generation, c.IssuedAt = rec.Generation, rec.IssuedAt
	return c, nil
}

// Revoke revokes run's capability in tx. A run without one is left as it
// is.
func Revoke(tx tine.Tx, run string) error {
	if err := tx.RevokeCapability(run); err != nil && !errors.Is(err, tine.ErrNotFound) {
		return fmt.Errorf("revoke capability: %w", err)
	}
	return nil
}

// Rotate carries a fork's capabilities across it. It revokes parent's
// capability and commits that before it calls clone, so no copy of the
// parent's token file that the clone makes is live; clone forks the parent
// and returns the ids of the forks whose rows it committed. Rotate then
// issues, in one transaction, a fresh capability to the parent and to each
// fork, and returns them by run id for the daemon to write into each run.
// The parent gets its fresh capability even when clone fails; clone's error
// is then returned with it.
func Rotate(ctx context.Context, st tine.Store, parent string, clone func(context.Context) ([]string, error)) (map[string]Capability, error) {
	if err := st.Update(ctx, func(tx tine.Tx) error { return Revoke(tx, parent) }); err != nil {
		return nil, fmt.Errorf("fork run %q: %w", parent, err)
	}
	forks, cloneErr := clone(ctx)
	out := make(map[string]Capability, len(forks)+1)
	err := st.Update(ctx, func(tx tine.Tx) error {
		for _, run := range append([]string{parent}, forks...) {
			c, err := Issue(tx, run)
			if err != nil {
				return fmt.Errorf("run %q: %w", run, err)
			}
			out[run] = c
		}
		return nil
	})
	if err != nil {
		return nil, errors.Join(cloneErr, fmt.Errorf("fork run %q: %w", parent, err))
	}
	return out, cloneErr
}
