package store

import (
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/postgres"
	"github.com/tinehq/tine/sqlite"
)

// EnvURL is the environment variable naming the store's URL; it wins over
// the state directory's config.toml.
const EnvURL = "TINE_STORE_URL"

// URL returns the URL of state directory home's store: $TINE_STORE_URL,
// else the url of the [store] table of home's config.toml, else "" for
// the SQLite store in the state directory. A config.toml that cannot be
// read or parsed, or whose [store] table has a key tine does not know,
// fails wrapping tine.ErrInvalid.
func URL(home string) (string, error) {
	if u := os.Getenv(EnvURL); u != "" {
		return u, nil
	}
	path := layout.New(home).Config()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	var c struct {
		Store struct {
			URL string `toml:"url"`
		} `toml:"store"`
	}
	md, err := toml.Decode(string(b), &c)
	if err != nil {
		return "", fmt.Errorf("%s: %w: %w", path, tine.ErrInvalid, err)
	}
	for _, k := range md.Undecoded() {
		if len(k) > 0 && k[0] == "store" {
			return "", fmt.Errorf("%s: unknown key %s (the [store] table has url): %w", path, k, tine.ErrInvalid)
		}
	}
	return c.Store.URL, nil
}

// Kind returns what url names: "sqlite" for "" (the state directory's
// database), "postgres" for a postgres:// or postgresql:// URL. Anything
// else fails wrapping tine.ErrInvalid.
func Kind(u string) (string, error) {
	if u == "" {
		return "sqlite", nil
	}
	p, err := url.Parse(u)
	if err == nil {
		switch strings.ToLower(p.Scheme) {
		case "postgres", "postgresql":
			return "postgres", nil
		}
	}
	return "", fmt.Errorf("store url %q: tine's stores are SQLite (no url) and PostgreSQL (postgres://…): %w", postgres.Redact(u), tine.ErrInvalid)
}

// Option returns the engine option that opens the store url names: the
// SQLite database in the state directory for "", a PostgreSQL database for
// a postgres:// URL.
func Option(u string) (engine.Option, error) {
	kind, err := Kind(u)
	if err != nil {
		return nil, err
	}
	if kind == "sqlite" {
		return engine.WithStore(sqlite.Open), nil
	}
	return engine.WithStoreServer(postgres.Redact(u), func() (*postgres.Store, error) { return postgres.Open(u) }), nil
}

// Open opens state directory home's store as URL and Option choose it,
// without an engine, for a caller that reads it (tine hook): it returns
// (nil, nil) when the store is SQLite's and its file does not exist, and
// never creates one.
func Open(home string) (engine.StoreFile, error) {
	u, err := URL(home)
	if err != nil {
		return nil, err
	}
	kind, err := Kind(u)
	if err != nil {
		return nil, err
	}
	if kind == "postgres" {
		return opened(postgres.Open(u))
	}
	db := layout.New(home).Store()
	if _, err := os.Stat(db); err != nil {
		return nil, nil
	}
	return opened(sqlite.Open(db))
}

// opened returns st as an engine.StoreFile, or a nil one when err is set.
func opened[S engine.StoreFile](st S, err error) (engine.StoreFile, error) {
	if err != nil {
		return nil, err
	}
	return st, nil
}
