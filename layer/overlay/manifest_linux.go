package overlay

import (
	"bytes"
	"encoding/gob"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/layer"
)

// Kinds of manifest entry.
const (
	kindFile     uint8 = iota // anything that is not a directory or a whiteout
	kindDir                   // a directory that lets the layers below show through
	kindOpaque                // a directory that hides them
	kindWhiteout              // a deletion
)

// mentry is one entry of a manifest: which inode of the run's upper
// directory the sealed version shows at a path, and since when.
type mentry struct {
	Ino   uint64 // 0: unknown (copied through the view), never taken for unchanged
	Btime int64  // birth time in ns, 0 when the filesystem does not say
	Kind  uint8
	Stamp int64  // ctime stamp of the seal that copied it: a later ctime means changed
	FH    string // a directory's handle as the change tracker knows it; "" when none ran
	// Linked is set for a file that had more than one link when copied.
	Linked bool
}

// manifest says what the version made of Base plus the layers up to Top
// shows of a run's upper directory: every entry of the upper directory at
// the last seal, by path, with the inode it was copied from. The next
// incremental seal compares the upper directory with it.
type manifest struct {
	Base  []string
	Top   string
	Paths []string // slash-separated, relative to the root; "" is the root
	Ents  []mentry

	byPath map[string]int
	byDir  map[dirKey]string
	byFH   map[string]string
	byIno  map[uint64][]string // files' paths by inode
	linkd  bool                // some file had more than one link
	kids   map[string][]string
}

// dirKey identifies a directory across seals: inode and birth time, so a
// reused inode number is not taken for the directory that had it.
type dirKey struct {
	ino   uint64
	btime int64
}

func newManifest(base []string, top string) *manifest {
	return &manifest{Base: base, Top: top}
}

func (m *manifest) add(p string, e mentry) {
	m.Paths = append(m.Paths, p)
	m.Ents = append(m.Ents, e)
}

// index builds the lookups of a loaded manifest.
func (m *manifest) index() {
	m.byPath = make(map[string]int, len(m.Paths))
	m.byDir = map[dirKey]string{}
	m.kids = map[string][]string{}
	m.byFH = map[string]string{}
	m.byIno = map[uint64][]string{}
	for i, p := range m.Paths {
		m.byPath[p] = i
		e := m.Ents[i]
		if e.FH != "" {
			m.byFH[e.FH] = p
		}
		if e.Kind == kindFile && e.Ino != 0 {
			m.byIno[e.Ino] = append(m.byIno[e.Ino], p)
		}
		m.linkd = m.linkd || e.Linked
		if (e.Kind == kindDir || e.Kind == kindOpaque) && e.Ino != 0 && e.Btime != 0 {
			m.byDir[dirKey{e.Ino, e.Btime}] = p
		}
		if p != "" {
			dir, name := splitRel(p)
			m.kids[dir] = append(m.kids[dir], name)
		}
	}
}

// hot returns the paths of the directories whose handles are in dirty,
// of those holding a name of an inode in inos, and of all their parents:
// a seal walks those and leaves the rest to the previous version. A
// handle the manifest does not have is a directory made since, walked as
// new from its parent (whose change named it).
func (m *manifest) hot(dirty map[string]struct{}, inos map[uint64]struct{}) map[string]bool {
	hot := map[string]bool{}
	mark := func(p string) {
		for !hot[p] {
			hot[p] = true
			if p == "" {
				break
			}
			p, _ = splitRel(p)
		}
	}
	for h := range dirty {
		if p, ok := m.byFH[h]; ok {
			mark(p)
		}
	}
	for ino := range inos {
		for _, p := range m.byIno[ino] {
			dir, _ := splitRel(p)
			mark(dir)
		}
	}
	return hot
}

// linked reports whether the entry at p, or any below it, was a file with
// more than one link.
func (m *manifest) linked(p string) bool {
	e := m.at(p)
	if e == nil || e.Linked {
		return e != nil
	}
	if e.Kind == kindDir || e.Kind == kindOpaque {
		for _, name := range m.kids[p] {
			if m.linked(joinRel(p, name)) {
				return true
			}
		}
	}
	return false
}

// at returns the entry at p, or nil.
func (m *manifest) at(p string) *mentry {
	if i, ok := m.byPath[p]; ok {
		return &m.Ents[i]
	}
	return nil
}

// splitRel splits a relative slash path into its directory ("" at the
// root) and name.
func splitRel(p string) (string, string) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", p
	}
	return p[:i], p[i+1:]
}

// joinRel joins a name onto a relative slash path.
func joinRel(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

// manifestPath is where the manifest of layer l sealed from r is kept.
func manifestPath(r layer.Run, l string) string {
	return filepath.Join(r.Dir, "seal-"+filepath.Base(l)+".manifest")
}

// loadManifest returns the manifest of prev's top layer if it describes
// prev over base, nil otherwise (a seal that never got recorded, a chain
// started afresh, an unreadable file).
func loadManifest(r layer.Run, base, prev []string) *manifest {
	if len(prev) <= len(base) || !slices.Equal(prev[:len(base)], base) {
		return nil
	}
	top := prev[len(prev)-1]
	if t := current(); t != nil {
		if m := t.manifest(upper(r), top); m != nil && slices.Equal(m.Base, base) {
			if _, err := os.Stat(top); err == nil {
				return m // the daemon's copy of the last seal's manifest
			}
		}
	}
	b, err := os.ReadFile(manifestPath(r, top))
	if err != nil {
		return nil
	}
	m := &manifest{}
	if gob.NewDecoder(bytes.NewReader(b)).Decode(m) != nil || m.Top != top || !slices.Equal(m.Base, base) ||
		len(m.Paths) != len(m.Ents) {
		return nil
	}
	if _, err := os.Stat(top); err != nil {
		return nil
	}
	m.index()
	return m
}

// save writes m beside r's delta and removes the manifests of r other
// than m's and keep's (the previous one, still needed if m's seal is not
// recorded).
func (m *manifest) save(r layer.Run, keep string) error {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(m); err != nil {
		return err
	}
	if err := atomicfile.Write(manifestPath(r, m.Top), buf.Bytes(), 0o600); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(r.Dir, "seal-*.manifest"))
	for _, p := range old {
		if p != manifestPath(r, m.Top) && (keep == "" || p != manifestPath(r, keep)) {
			os.Remove(p)
		}
	}
	return nil
}

// removeManifests drops every manifest of r: its delta was moved into a
// layer or removed, so none describes it any more.
func removeManifests(r layer.Run) {
	if t := current(); t != nil {
		t.forget(upper(r)) // nor does the tracker's record
	}
	old, _ := filepath.Glob(filepath.Join(r.Dir, "seal-*.manifest"))
	for _, p := range old {
		os.Remove(p)
	}
}
