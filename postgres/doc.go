// Package postgres implements tine.Store on a PostgreSQL database, for a
// state directory whose store lives on a server ([store] url or
// TINE_STORE_URL); SQLite (package sqlite) stays the default.
package postgres
