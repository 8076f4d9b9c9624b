package engine

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/internal/mnt"
)

// Scratch directories are what commands make beside a run's files for the
// length of one step, named KIND-ID in the run's directory: a merge's
// staging (merge-ID, holding its fork point mounted at base), and the
// read-only mounts of a fork point (base-ID, patch-ID, forkpoint-ID,
// compare-ID) that the overlay backend holds a lock file beside (ID.lock,
// see overlay's mountReadOnly) while it is up. A command that dies leaves
// them, mounted; sweepScratch removes them.

// sweepScratch removes the scratch directories of run directory dir that
// no live command uses, unmounting what is mounted below them first, and
// returns their paths. Its caller holds the workspace's lock, which every
// merge holds; a mount whose lock file is held is another command's, in
// use (tine diff, for one, reads without the workspace's lock).
func (e *Engine) sweepScratch(dir string) []string {
	var out []string
	for _, p := range deadScratch(dir) {
		err := mnt.UnmountAll(p)
		if err == nil {
			err = removeTree(p)
		}
		os.Remove(p + ".lock")
		if err != nil {
			e.warn("removing %s, left by a command that died: %v", p, err)
			continue
		}
		out = append(out, p)
	}
	return out
}

// deadScratch lists the scratch directories of run directory dir that no
// live command holds: those whose lock file (ID.lock beside a mount of the
// overlay backend's) nobody holds. It changes nothing.
func deadScratch(dir string) []string {
	ents, _ := os.ReadDir(dir)
	var out []string
	for _, ent := range ents {
		_, id, ok := strings.Cut(ent.Name(), "-")
		if !ok || !ent.IsDir() || !tine.LooksLikeID("", id) {
			continue
		}
		p := filepath.Join(dir, ent.Name())
		if unlock, free := flock.Try(p + ".lock"); free {
			unlock()
			out = append(out, p)
		}
	}
	return out
}
