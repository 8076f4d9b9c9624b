// Package pgtest gives tests a PostgreSQL store of their own: a fresh
// schema in the database $TINE_TEST_PG_URL names (scripts/testpg.sh starts
// a throwaway server and sets it; .ci/run does), dropped when the test
// ends. Tests skip, saying why, when the variable is unset or the server
// does not answer.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the database tests make their schemas in.
const EnvURL = "TINE_TEST_PG_URL"

// URL returns the URL of a fresh, empty schema for tb's store (the base
// URL with search_path set to it), dropped with everything in it when tb
// ends. It skips tb when there is no PostgreSQL to test against.
func URL(tb testing.TB) string {
	tb.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		tb.Skipf("no PostgreSQL to test against: %s is not set (scripts/testpg.sh start sets it)", EnvURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		tb.Skipf("no PostgreSQL to test against: %s does not answer: %v", EnvURL, err)
	}
	defer conn.Close(context.Background())
	b := make([]byte, 6)
	rand.Read(b)
	schema := "tinetest_" + hex.EncodeToString(b)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			tb.Errorf("pgtest: dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("pgtest: dropping schema %s: %v", schema, err)
		}
	})
	return WithParam(tb, base, "search_path", schema)
}

// WithParam returns url u with the query parameter key set to value.
func WithParam(tb testing.TB, u, key, value string) string {
	tb.Helper()
	p, err := url.Parse(u)
	if err != nil {
		tb.Fatalf("pgtest: %s is not a URL: %v", EnvURL, err)
	}
	q := p.Query()
	q.Set(key, value)
	p.RawQuery = q.Encode()
	return p.String()
}
