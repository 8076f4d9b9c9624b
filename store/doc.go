// Package store chooses and opens a state directory's store: SQLite in the
// state directory (the default), or a PostgreSQL database named by a URL
// in $TINE_STORE_URL or the state directory's config.toml.
package store
