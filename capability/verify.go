package capability

import (
	"context"
	"crypto/hmac"
	"errors"
	"fmt"
	"time"

	"github.com/tinehq/tine"
)

// Defaults of a Verifier.
const (
	// DefaultWindow is how long after it was issued a request is accepted.
	DefaultWindow = 60 * time.Second
	// DefaultSkew is how far ahead of the host's clock a request's issue
	// time may be.
	DefaultSkew = 5 * time.Second
)

// Keys looks up the host's record of a run's capability. It wraps
// tine.ErrNotFound if the run has none.
type Keys interface {
	Capability(ctx context.Context, run string) (*tine.Capability, error)
}

// Nonces remembers the nonces runs used. Seen records that run used nonce,
// to be remembered at least until the time until, and reports whether run
// had already used it, in one atomic step; it may forget nonces whose until
// is before now.
type Nonces interface {
	Seen(ctx context.Context, run, nonce string, now, until time.Time) (bool, error)
}

// Verifier checks signed requests against the host's capabilities. It is
// safe for concurrent use if its Keys and Nonces are.
type Verifier struct {
	keys   Keys
	nonces Nonces
	now    func() time.Time
	window time.Duration
	skew   time.Duration
}

// Option configures a Verifier.
type Option func(*Verifier)

// WithClock makes the verifier read the time from now.
func WithClock(now func() time.Time) Option { return func(v *Verifier) { v.now = now } }

// WithWindow sets how long after it was issued a request is accepted.
func WithWindow(d time.Duration) Option { return func(v *Verifier) { v.window = d } }

// WithSkew sets how far ahead of the clock a request's issue time may be.
func WithSkew(d time.Duration) Option { return func(v *Verifier) { v.skew = d } }

// NewVerifier returns a verifier that looks capabilities up in keys and
// records nonces in nonces, with DefaultWindow, DefaultSkew and the system
// clock unless opts say otherwise.
func NewVerifier(keys Keys, nonces Nonces, opts ...Option) *Verifier {
	v := &Verifier{keys: keys, nonces: nonces, now: time.Now, window: DefaultWindow, skew: DefaultSkew}
	for _, o := range opts {
		o(v)
	}
	return v
}

// Verify checks that req was signed, for purpose and method, by the current
// capability of the run it names, within the window and with a fresh nonce,
// and returns that run's id. It checks, in this order: the request's shape,
// purpose and method (ErrForged); its age (ErrExpired); the run's
// capability and generation (ErrRevoked); the MAC, in constant time
// (ErrForged); and the nonce (ErrReplayed). The nonce is recorded only for
// a request whose MAC is good, so forgeries cannot use up a run's nonces.
// Errors of the store are returned as they are.
func (v *Verifier) Verify(ctx context.Context, req Request, purpose, method string) (string, error) {
	if err := checkShape(req, purpose, method); err != nil {
		return "", err
	}
	now := v.now()
	if err := v.checkTime(req, now); err != nil {
		return "", err
	}
	if err := v.checkMAC(ctx, req); err != nil {
		return "", err
	}
	seen, err := v.nonces.Seen(ctx, req.Run, req.Nonce, now, req.IssuedAt.Add(v.window))
	if err != nil {
		return "", fmt.Errorf("verify request of run %q: %w", req.Run, err)
	}
	if seen {
		return "", fmt.Errorf("run %q: nonce already used: %w", req.Run, ErrReplayed)
	}
	return req.Run, nil
}

// checkShape refuses a request that is malformed or was signed for another
// purpose or method.
func checkShape(req Request, purpose, method string) error {
	switch {
	case req.Run == "" || req.Nonce == "" || len(req.Nonce) > maxNonce || req.MAC == "":
		return fmt.Errorf("malformed request: %w", ErrForged)
	case req.Purpose != purpose:
		return fmt.Errorf("run %q: signed for purpose %q, not %q: %w", req.Run, req.Purpose, purpose, ErrForged)
	case req.Method != method:
		return fmt.Errorf("run %q: signed for method %q, not %q: %w", req.Run, req.Method, method, ErrForged)
	}
	return nil
}

// checkTime refuses a request issued more than the window before now or
// more than the skew after it.
func (v *Verifier) checkTime(req Request, now time.Time) error {
	age := now.Sub(req.IssuedAt)
	if age > v.window {
		return fmt.Errorf("run %q: request issued %v ago, limit %v: %w", req.Run, age.Round(time.Millisecond), v.window, ErrExpired)
	}
	if -age > v.skew {
		return fmt.Errorf("run %q: request issued %v in the future: %w", req.Run, (-age).Round(time.Millisecond), ErrExpired)
	}
	return nil
}

// checkMAC refuses a request unless the run's live capability of the
// request's generation signed it.
func (v *Verifier) checkMAC(ctx context.Context, req Request) error {
	c, err := v.keys.Capability(ctx, req.Run)
	switch {
	case errors.Is(err, tine.ErrNotFound):
		return fmt.Errorf("run %q has no capability: %w", req.Run, ErrRevoked)
	case err != nil:
		return fmt.Errorf("verify request of run %q: %w", req.Run, err)
	case c.Revoked:
		return fmt.Errorf("run %q: capability generation %d revoked: %w", req.Run, c.Generation, ErrRevoked)
	case c.Generation != req.Generation:
		return fmt.Errorf("run %q: capability generation %d replaced by %d: %w", req.Run, req.Generation, c.Generation, ErrRevoked)
	}
	got, err := b64.DecodeString(req.MAC)
	if err != nil || !hmac.Equal(got, req.mac(c.Secret)) {
		return fmt.Errorf("run %q: MAC does not match: %w", req.Run, ErrForged)
	}
	return nil
}
