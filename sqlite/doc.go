// Package sqlite implements tine.Store on an embedded SQLite database in WAL
// mode, the default store for a single host.
package sqlite
