package merge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/layer"
)

// node is one path of a test tree: a file, a directory or a symlink.
type node struct {
	kind byte // 'f', 'd' or 'l'
	data string
	perm fs.FileMode
}

// file, dir and link build nodes.
func file(data string) node                    { return node{'f', data, 0o644} }
func fileMode(data string, m fs.FileMode) node { return node{'f', data, m} }
func dir() node                                { return node{'d', "", 0o755} }
func dirMode(m fs.FileMode) node               { return node{'d', "", m} }
func link(target string) node                  { return node{'l', target, 0o777} }

// tree maps slash paths to nodes; parents must be listed as dirs.
type tree map[string]node

// clone returns a copy of tr.
func (tr tree) clone() tree {
	out := tree{}
	for k, v := range tr {
		out[k] = v
	}
	return out
}

// removeAll deletes p and everything beneath it.
func (tr tree) removeAll(p string) {
	for k := range tr {
		if k == p || strings.HasPrefix(k, p+"/") {
			delete(tr, k)
		}
	}
}

// manifest renders tr as writeTree would leave it, in the form treeManifest
// reads from disk.
func (tr tree) manifest() map[string]string {
	out := map[string]string{}
	for p, n := range tr {
		out[p] = n.describe()
	}
	return out
}

// describe renders n for a manifest.
func (n node) describe() string {
	switch n.kind {
	case 'f':
		sum := sha256.Sum256([]byte(n.data))
		return "file " + n.perm.String() + " " + hex.EncodeToString(sum[:8])
	case 'd':
		return "dir " + n.perm.String()
	}
	return "link " + n.data
}

// writeTree creates tr under the existing directory root. File times are
// derived from their content, so equal content means equal times and a
// change is never hidden from fstree.Diff's stat shortcut.
func writeTree(t testing.TB, root string, tr tree) {
	t.Helper()
	paths := make([]string, 0, len(tr))
	for p := range tr {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		writeNode(t, filepath.Join(root, filepath.FromSlash(p)), tr[p])
	}
	slices.Reverse(paths)
	for _, p := range paths {
		if tr[p].kind == 'd' {
			if err := os.Chmod(filepath.Join(root, filepath.FromSlash(p)), tr[p].perm); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// writeNode creates n at name.
func writeNode(t testing.TB, name string, n node) {
	t.Helper()
	var err error
	switch n.kind {
	case 'f':
		if err = os.WriteFile(name, []byte(n.data), 0o600); err == nil {
			err = os.Chmod(name, n.perm)
		}
		if err == nil {
			sum := sha256.Sum256([]byte(n.data))
			mt := time.Unix(1e9+int64(sum[0])<<16+int64(sum[1])<<8+int64(sum[2]), int64(sum[3]))
			err = os.Chtimes(name, mt, mt)
		}
	case 'd':
		err = os.Mkdir(name, 0o700)
	case 'l':
		err = os.Symlink(n.data, name)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// treeManifest describes every path under root (root itself excluded),
// without following symlinks: the whole-tree hash of the tests, kept as a
// map so a difference reads well.
func treeManifest(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)], err = describePath(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// describePath renders the file at p as node.describe does.
func describePath(p string) (string, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		return "", err
	}
	switch {
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		return file(string(b)).withPerm(fi.Mode().Perm()).describe(), err
	case fi.IsDir():
		return dirMode(fi.Mode().Perm()).describe(), nil
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		return link(target).describe(), err
	}
	return "other " + fi.Mode().String(), nil
}

// withPerm returns n with permission bits m.
func (n node) withPerm(m fs.FileMode) node { n.perm = m; return n }

// sides are the three directories of a merge test.
type testSides struct{ base, theirs, ours string }

// makeSides writes base, theirs and ours trees into fresh directories.
func makeSides(t testing.TB, base, theirs, ours tree) testSides {
	t.Helper()
	root := t.TempDir()
	s := testSides{filepath.Join(root, "base"), filepath.Join(root, "theirs"), filepath.Join(root, "ours")}
	for _, d := range []struct {
		dir string
		tr  tree
	}{{s.base, base}, {s.theirs, theirs}, {s.ours, ours}} {
		if err := os.Mkdir(d.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		writeTree(t, d.dir, d.tr)
	}
	return s
}

// planSides diffs base and theirs and plans the merge into ours.
func planSides(t testing.TB, s testSides, o PlanOptions) *Plan {
	t.Helper()
	changes, err := fstree.Diff(context.Background(), s.base, s.theirs)
	if err != nil {
		t.Fatal(err)
	}
	p, err := PlanFiles(context.Background(), s.base, s.theirs, s.ours, changes, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// actions returns path → action of p, with reasons for conflicts.
func actions(p *Plan) map[string]string {
	out := map[string]string{}
	for _, e := range p.Entries {
		out[e.Path] = string(e.Action)
		if e.Reason != "" {
			out[e.Path] += ": " + e.Reason
		}
	}
	return out
}

// sideOp is one thing a side may do to path "x" (a file "base\n" in base).
type sideOp struct {
	name string
	base bool                      // whether base has x
	do   func(tr tree, val string) // val differs per side unless "same"
}

// threeWayOps are the operations of the three-way rules table.
var threeWayOps = []sideOp{
	{"unchanged", true, func(tree, string) {}},
	{"modified", true, func(tr tree, v string) { tr["x"] = file("mod " + v) }},
	{"deleted", true, func(tr tree, _ string) { delete(tr, "x") }},
	{"created", false, func(tr tree, v string) { tr["x"] = file("new " + v) }},
	{"type-changed", true, func(tr tree, v string) { tr["x"] = dir(); tr["x/"+v] = file(v) }},
	{"mode-changed", true, func(tr tree, v string) {
		tr["x"] = fileMode("base\n", map[string]fs.FileMode{"same": 0o755, "run": 0o600, "target": 0o640}[v])
	}},
}

func TestPlanFiles_ThreeWayRules(t *testing.T) {
	for _, th := range threeWayOps {
		for _, ou := range threeWayOps {
			if th.base != ou.base && th.name != "unchanged" && ou.name != "unchanged" {
				continue // one side created x, the other changed a base x: impossible
			}
			for _, same := range []bool{false, true} {
				if same && (th.name != ou.name || th.name == "unchanged" || th.name == "deleted") {
					continue
				}
				t.Run(th.name+"/"+ou.name+map[bool]string{true: "/same"}[same], func(t *testing.T) {
					checkThreeWay(t, th, ou, same)
				})
			}
		}
	}
}

// checkThreeWay plans the merge of theirs op th with ours op ou and checks
// the action for x.
func checkThreeWay(t *testing.T, th, ou sideOp, same bool) {
	base := tree{"keep": file("k")}
	if th.base && ou.base {
		base["x"] = file("base\n")
	}
	theirs, ours := base.clone(), base.clone()
	tv, ov := "run", "target"
	if same {
		tv, ov = "same", "same"
	}
	th.do(theirs, tv)
	ou.do(ours, ov)
	got := actions(planSides(t, makeSides(t, base, theirs, ours), PlanOptions{}))["x"]
	want := threeWayWant(th, ou, same)
	if !strings.HasPrefix(got, want) {
		t.Errorf("x: got %q, want %q", got, want)
	}
}

// threeWayWant is the rule: untouched by the run → no entry; untouched by
// the target → take; same result on both → converged; else a conflict.
func threeWayWant(th, ou sideOp, same bool) string {
	switch {
	case th.name == "unchanged":
		return ""
	case ou.name == "unchanged":
		return string(Take)
	case th.name == ou.name && (th.name == "deleted" || th.name == "type-changed"), same:
		return string(Converged) // two directories of the same mode have the same signature
	}
	return string(Conflict) + ": "
}

func TestPlanFiles_Reasons(t *testing.T) {
	base := tree{"m": file("m"), "d": file("d"), "md": file("md"), "tc": file("tc"), "tr": file("tr"), "both": file("0")}
	theirs := tree{"m": file("m2"), "md": file("md2"), "tc": file("tc2"), "tr": dir(), "tr/f": file("f"),
		"both": file("run"), "add": file("a1")}
	ours := tree{"m": file("m3"), "d": file("d3"), "tc": link("elsewhere"), "tr": file("tr3"),
		"both": file("target"), "add": file("a2")}
	got := actions(planSides(t, makeSides(t, base, theirs, ours), PlanOptions{}))
	want := map[string]string{
		"m":    "conflict: changed in both",
		"d":    "conflict: deleted in run, modified in target",
		"md":   "conflict: modified in run, deleted in target",
		"tc":   "conflict: type changed in target",
		"tr":   "conflict: type changed in run, modified in target",
		"tr/f": `conflict: parent "tr" is in conflict`,
		"both": "conflict: changed in both",
		"add":  "conflict: added in both with different contents",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
}

func TestPlanFiles_Directories(t *testing.T) {
	tests := []struct {
		name               string
		base, theirs, ours tree
		want               map[string]string
	}{{
		name:   "RunDeletedDirTargetAddedInIt",
		base:   tree{"d": dir(), "d/a": file("a")},
		theirs: tree{},
		ours:   tree{"d": dir(), "d/a": file("a"), "d/new": file("n")},
		want:   map[string]string{"d": `conflict: directory removed in run, but target added "new" in it`, "d/a": "take"},
	}, {
		name:   "RunReplacedFileWithDir",
		base:   tree{"f": file("f")},
		theirs: tree{"f": dir(), "f/c": file("c"), "f/sub": dir(), "f/sub/e": file("e")},
		ours:   tree{"f": file("f")},
		want:   map[string]string{"f": "take", "f/c": "take", "f/sub": "take", "f/sub/e": "take"},
	}, {
		name:   "RunReplacedDirWithFile",
		base:   tree{"d": dir(), "d/a": file("a")},
		theirs: tree{"d": file("now a file")},
		ours:   tree{"d": dir(), "d/a": file("a")},
		want:   map[string]string{"d": "take", "d/a": "take"},
	}, {
		name:   "RunAddedUnderDirTargetMadeFile",
		base:   tree{"a": dir()},
		theirs: tree{"a": dir(), "a/b": dir(), "a/b/c": file("c")},
		ours:   tree{"a": file("a")},
		want: map[string]string{"a/b": `conflict: parent "a" is not a directory in target`,
			"a/b/c": `conflict: parent "a/b" is in conflict`},
	}, {
		name:   "RunAddedUnderDirTargetDeleted",
		base:   tree{"a": dir()},
		theirs: tree{"a": dir(), "a/c": file("c")},
		ours:   tree{},
		want:   map[string]string{"a/c": `conflict: parent "a" is missing in target`},
	}, {
		name:   "ChangedFileBecameDirInTarget",
		base:   tree{"f": file("f")},
		theirs: tree{"f": file("f2")},
		ours:   tree{"f": dir(), "f/x": file("x")},
		want:   map[string]string{"f": "conflict: type changed in target"},
	}, {
		name:   "DirModeChange",
		base:   tree{"d": dir(), "d/a": file("a")},
		theirs: tree{"d": dirMode(0o700), "d/a": file("a")},
		ours:   tree{"d": dir(), "d/a": file("a2"), "d/b": file("b")},
		want:   map[string]string{"d": "take"},
	}, {
		name:   "ConvergedDeletion",
		base:   tree{"d": dir(), "d/a": file("a")},
		theirs: tree{},
		ours:   tree{},
		want:   map[string]string{"d": "converged", "d/a": "converged"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := actions(planSides(t, makeSides(t, tt.base, tt.theirs, tt.ours), PlanOptions{}))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("actions (-want +got):\n%s", d)
			}
		})
	}
}

func TestPlanFiles_Paths(t *testing.T) {
	base := tree{"a": dir(), "a/x": file("x"), "b": file("b")}
	theirs := tree{"a": dir(), "a/x": file("x2"), "b": file("b2"), "n": dir(), "n/m": dir(), "n/m/f": file("f"), "n/o": file("o")}
	s := makeSides(t, base, theirs, base)
	p := planSides(t, s, PlanOptions{Paths: []string{"a", "n/m/f"}})
	want := map[string]string{"a/x": "take", "n": "take", "n/m": "take", "n/m/f": "take"}
	if d := cmp.Diff(want, actions(p)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
	if p.Scope != "paths" {
		t.Errorf("scope %q, want paths", p.Scope)
	}
}

func TestPlanFiles_IgnoresStaging(t *testing.T) {
	base := tree{"f": file("f")}
	theirs := tree{"f": file("f2"), ".tine-merge-0123": dir(), ".tine-merge-0123/x": file("x")}
	p := planSides(t, makeSides(t, base, theirs, base), PlanOptions{})
	if d := cmp.Diff(map[string]string{"f": "take"}, actions(p)); d != "" {
		t.Errorf("actions (-want +got):\n%s", d)
	}
}

func TestPlanFiles_EntryFields(t *testing.T) {
	base := tree{"f": file("f"), "gone": file("gone")}
	theirs := tree{"f": file("twelve bytes"), "l": link("/etc")}
	s := makeSides(t, base, theirs, base)
	p := planSides(t, s, PlanOptions{})
	want := []Entry{
		{Path: "f", Action: Take, Change: layer.Modified, Type: "file", Bytes: 12, Source: filepath.Join(s.theirs, "f"), SourceRoot: s.theirs},
		{Path: "gone", Action: Take, Change: layer.Deleted, Type: "file"},
		{Path: "l", Action: Take, Change: layer.Added, Type: "symlink", Bytes: 4, Source: filepath.Join(s.theirs, "l"), SourceRoot: s.theirs},
	}
	if d := cmp.Diff(want, p.Entries); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
}
