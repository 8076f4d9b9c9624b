package sqlite

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tinehq/tine"
)

// seedRuns puts workspaces w1 and w2 and runs r1 and r2 of w1 into s.
func seedRuns(t testing.TB, s *Store) {
	t.Helper()
	seed(t, s)
	update(t, s, func(tx tine.Tx) error {
		return errors.Join(tx.PutRun(testRun("r1", "w1", "a")), tx.PutRun(testRun("r2", "w1", "b")))
	})
}

// capabilityOf reads run's capability from s.
func capabilityOf(t *testing.T, s *Store, run string) *tine.Capability {
	t.Helper()
	var c *tine.Capability
	view(t, s, func(tx tine.Tx) error {
		var err error
		c, err = tx.Capability(run)
		return err
	})
	return c
}

func TestTx_SetCapability(t *testing.T) {
	s := openTest(t)
	seedRuns(t, s)
	steps := []struct {
		name    string
		fn      func(tine.Tx) error
		gen     int
		secret  []byte
		revoked bool
	}{
		{"First", setCap("r1", "s1", at(1)), 1, []byte("s1"), false},
		{"Replace", setCap("r1", "s2", at(2)), 2, []byte("s2"), false},
		{"Revoke", func(tx tine.Tx) error { return tx.RevokeCapability("r1") }, 2, nil, true},
		{"ReissueAfterRevoke", setCap("r1", "s3", at(3)), 3, []byte("s3"), false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			update(t, s, st.fn)
			c := capabilityOf(t, s, "r1")
			if c.Generation != st.gen || c.Revoked != st.revoked || !bytes.Equal(c.Secret, st.secret) {
				t.Errorf("got gen %d revoked %v secret %q, want %d %v %q",
					c.Generation, c.Revoked, c.Secret, st.gen, st.revoked, st.secret)
			}
			if c.IssuedAt.Location() != time.UTC {
				t.Errorf("IssuedAt %v not in UTC", c.IssuedAt)
			}
		})
	}
}

// setCap returns an update that sets run's capability to secret.
func setCap(run, secret string, issued time.Time) func(tine.Tx) error {
	return func(tx tine.Tx) error {
		return tx.SetCapability(&tine.Capability{Run: run, Secret: []byte(secret), IssuedAt: issued})
	}
}

func TestTx_SetCapabilitySetsFields(t *testing.T) {
	s := openTest(t)
	seedRuns(t, s)
	c := &tine.Capability{Run: "r1", Secret: []byte("x"), Generation: 9, Revoked: true}
	before := time.Now()
	update(t, s, func(tx tine.Tx) error { return tx.SetCapability(c) })
	if c.Generation != 1 || c.Revoked || c.IssuedAt.Before(before) || c.IssuedAt.After(time.Now()) {
		t.Errorf("after SetCapability: %+v, want generation 1, not revoked, issued now", c)
	}
}

func TestTx_CapabilityErrors(t *testing.T) {
	s := openTest(t)
	seedRuns(t, s)
	tests := []struct {
		name string
		fn   func(tine.Tx) error
		want error
		msg  string
	}{
		{"Missing", func(tx tine.Tx) error { _, err := tx.Capability("r1"); return err },
			tine.ErrNotFound, `capability of run "r1": not found`},
		{"RevokeMissing", func(tx tine.Tx) error { return tx.RevokeCapability("r1") },
			tine.ErrNotFound, `capability of run "r1": not found`},
		{"SetNoRun", setCap("rx", "s", at(1)), tine.ErrNotFound, `run "rx": not found`},
		{"SetEmptySecret", setCap("r1", "", at(1)), tine.ErrInvalid,
			`set capability of run "r1": empty secret: invalid argument`},
		{"NonceNoRun", func(tx tine.Tx) error { _, err := tx.SeeNonce("rx", "n", at(1), at(2)); return err },
			tine.ErrNotFound, `run "rx": not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Update(context.Background(), tt.fn)
			if !errors.Is(err, tt.want) || err.Error() != tt.msg {
				t.Errorf("err = %v, want %q wrapping %v", err, tt.msg, tt.want)
			}
		})
	}
}

func TestTx_SeeNonce(t *testing.T) {
	s := openTest(t)
	seedRuns(t, s)
	steps := []struct {
		name       string
		run, nonce string
		now, until time.Time
		seen       bool
	}{
		{"First", "r1", "n1", at(0), at(10), false},
		{"Replay", "r1", "n1", at(5), at(15), true},
		{"OtherRun", "r2", "n1", at(5), at(15), false},
		{"OtherNonce", "r1", "n2", at(5), at(15), false},
		{"ReplayAtExpiry", "r1", "n1", at(10), at(20), true},
		{"AfterExpiryForgotten", "r1", "n1", at(11), at(21), false},
		{"ReplayAfterReRecord", "r1", "n1", at(12), at(22), true},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			update(t, s, func(tx tine.Tx) error {
				seen, err := tx.SeeNonce(st.run, st.nonce, st.now, st.until)
				if seen != st.seen {
					t.Errorf("SeeNonce(%s, %s) = %v, want %v", st.run, st.nonce, seen, st.seen)
				}
				return err
			})
		})
	}
}

func TestTx_SeeNoncePrunes(t *testing.T) {
	s := openTest(t)
	seedRuns(t, s)
	update(t, s, func(tx tine.Tx) error {
		_, err1 := tx.SeeNonce("r1", "old", at(0), at(1))
		_, err2 := tx.SeeNonce("r2", "new", at(0), at(9))
		_, err3 := tx.SeeNonce("r1", "now", at(5), at(9))
		return errors.Join(err1, err2, err3)
	})
	var n int
	if err := s.read.QueryRow("SELECT count(*) FROM nonces WHERE nonce = 'old'").Scan(&n); err != nil || n != 0 {
		t.Errorf("expired nonces left: %d, %v", n, err)
	}
	if err := s.read.QueryRow("SELECT count(*) FROM nonces").Scan(&n); err != nil || n != 2 {
		t.Errorf("nonces = %d, %v; want 2", n, err)
	}
}

func TestTx_CapabilityCascades(t *testing.T) {
	s := openTest(t)
	seedRuns(t, s)
	update(t, s, func(tx tine.Tx) error {
		_, err := tx.SeeNonce("r1", "n", at(0), at(9))
		return errors.Join(setCap("r1", "s", at(0))(tx), setCap("r2", "s", at(0))(tx), err)
	})
	update(t, s, func(tx tine.Tx) error { return tx.DeleteRun("r2") })
	if c := capabilityOf(t, s, "r1"); c == nil {
		t.Fatal("r1 lost its capability when r2 was deleted")
	}
	update(t, s, func(tx tine.Tx) error { return tx.DeleteWorkspace("w1") })
	for _, table := range []string{"capabilities", "nonces"} {
		var n int
		if err := s.read.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil || n != 0 {
			t.Errorf("%s: %d rows left, %v", table, n, err)
		}
	}
}
