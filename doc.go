// Package tine is the domain of tine: workspaces, runs, versions, layers,
// groups and events, their states, the sentinel errors every layer of the
// program shares, and the Store interface that persists them.
//
// A workspace is a directory at a fixed absolute path under tine's
// management. A run is one live trajectory of that workspace: the first is
// the source, every other one is a fork of a parent run. A version is an
// immutable, ordered stack of layers, a complete frozen file tree; every fork
// point and checkpoint records one, and versions form the version tree.
package tine
