package sqltx

import (
	"fmt"
	"time"

	"github.com/tinehq/tine"
)

const capabilityCols = "run, secret, generation, issued_at, revoked"

// scanCapability reads a row of capabilityCols. A revoked capability's
// erased secret is nil.
func scanCapability(s Row) (*tine.Capability, error) {
	var c tine.Capability
	var issued int64
	if err := s.Scan(&c.Run, &c.Secret, &c.Generation, &issued, &c.Revoked); err != nil {
		return nil, err
	}
	if len(c.Secret) == 0 {
		c.Secret = nil
	}
	c.IssuedAt = fromUnixNano(issued)
	return &c, nil
}

// SetCapability stores c as its run's only capability, replacing any
// earlier one, and sets c.Generation to one more than the one it replaced
// (1 for the first), c.IssuedAt to now if zero, and c.Revoked to false. It
// wraps tine.ErrNotFound if the run does not exist and tine.ErrInvalid if
// the secret is empty.
func (t *Tx) SetCapability(c *tine.Capability) error {
	if len(c.Secret) == 0 {
		return fmt.Errorf("set capability of run %q: empty secret: %w", c.Run, tine.ErrInvalid)
	}
	t.stamp(&c.IssuedAt)
	var gen int
	err := t.db.QueryRow(t.ctx, `INSERT INTO capabilities (`+capabilityCols+`)
		VALUES (?, ?, 1, ?, false)
		ON CONFLICT (run) DO UPDATE SET secret = excluded.secret,
			generation = capabilities.generation + 1, issued_at = excluded.issued_at, revoked = false
		RETURNING generation`, c.Run, c.Secret, unixNano(c.IssuedAt)).Scan(&gen)
	if t.d.ForeignKey(err) {
		return NotFound("run", c.Run)
	}
	if err != nil {
		return fmt.Errorf("set capability of run %q: %w", c.Run, err)
	}
	c.Generation, c.Revoked = gen, false
	return nil
}

// Capability returns run's capability, revoked or not.
func (t *Tx) Capability(run string) (*tine.Capability, error) {
	return get(t, scanCapability, "capability of run", run,
		"SELECT "+capabilityCols+" FROM capabilities WHERE run = ?", run)
}

// RevokeCapability marks run's capability revoked and erases its secret;
// the generation stays, so the next SetCapability raises it.
func (t *Tx) RevokeCapability(run string) error {
	n, err := t.db.Exec(t.ctx, "UPDATE capabilities SET revoked = true, secret = ? WHERE run = ?", []byte{}, run)
	if err != nil {
		return fmt.Errorf("revoke capability of run %q: %w", run, err)
	}
	return affected(n, "capability of run", run)
}

// SeeNonce forgets every nonce whose time has passed by now, then records
// that run used nonce, to be remembered until the time until, and reports
// whether run had already used it. It wraps tine.ErrNotFound if the run
// does not exist.
func (t *Tx) SeeNonce(run, nonce string, now, until time.Time) (bool, error) {
	if _, err := t.db.Exec(t.ctx, "DELETE FROM nonces WHERE expires_at < ?", unixNano(now)); err != nil {
		return false, fmt.Errorf("prune nonces: %w", err)
	}
	n, err := t.db.Exec(t.ctx, `INSERT INTO nonces (run, nonce, expires_at) VALUES (?, ?, ?)
		ON CONFLICT (run, nonce) DO NOTHING`, run, nonce, unixNano(until))
	if t.d.ForeignKey(err) {
		return false, NotFound("run", run)
	}
	if err != nil {
		return false, fmt.Errorf("record nonce of run %q: %w", run, err)
	}
	return n == 0, nil
}
