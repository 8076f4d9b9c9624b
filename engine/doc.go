// Package engine carries out tine's operations on workspaces and runs (init,
// fork, checkpoint, rollback, discard, release) as transactions over the
// store and a file backend: files are made first and recorded after, records
// are removed first and files after, and a sweeper puts right what a crash
// left half done: at every start in a workspace a command died in (or
// after a reboot), and in all of them on the daemon's schedule and in gc.
package engine
