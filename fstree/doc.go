// Package fstree copies, moves and compares directory trees, keeping
// everything a file carries: type, permission bits, owner, times, extended
// attributes, symlinks, hard links and device nodes (overlay whiteouts).
package fstree
