package merge

import (
	"path/filepath"

	"github.com/tinehq/tine/fstree"
)

// sources are the run views a plan's entries are read from (their
// SourceRoot), held open as fstree.Roots while an apply stages them: a
// run may be turning a directory of its view into a symlink to a host
// path and back while it is merged, and its files are read beneath the
// view by descriptor, never by name.
type sources map[string]*fstree.Root

// openSources opens the SourceRoot of every entry of entries.
func openSources(entries []Entry) (sources, error) {
	s := sources{}
	for _, e := range entries {
		if e.SourceRoot == "" || s[e.SourceRoot] != nil {
			continue
		}
		r, err := fstree.OpenRoot(e.SourceRoot)
		if err != nil {
			s.close()
			return nil, err
		}
		s[e.SourceRoot] = r
	}
	return s, nil
}

// close releases every root.
func (s sources) close() {
	for _, r := range s {
		r.Close()
	}
}

// pin returns a path that reads e's Source, until release: through its
// parent opened beneath e's SourceRoot (fstree.Root.Pin), so that only a
// call that does not follow its last component may be given it; Source
// itself when it is tine's own.
func (s sources) pin(e Entry) (p string, release func(), err error) {
	r := s[e.SourceRoot]
	if r == nil {
		return e.Source, func() {}, nil
	}
	rel, err := filepath.Rel(e.SourceRoot, e.Source)
	if err != nil {
		return "", nil, err
	}
	return r.Pin(filepath.ToSlash(rel))
}
