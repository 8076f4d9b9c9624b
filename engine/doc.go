// Package engine carries out tine's operations on workspaces and runs (init,
// fork, checkpoint, rollback, discard, release) as transactions over the
// store and a file backend: files are made first and recorded after, records
// are removed first and files after, and a sweeper run at every start puts
// right what a crash left half done.
package engine
