package engine_test

import (
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layer/builtin"
	"github.com/tinehq/tine/sqlite"
)

// testOptions are what this package's external tests open engines with:
// tine's SQLite store and backends.
func testOptions() []engine.Option {
	return []engine.Option{engine.WithStore(sqlite.Open), engine.WithBackends(builtin.Backends()...)}
}
