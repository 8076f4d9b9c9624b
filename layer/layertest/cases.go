package layertest

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tinehq/tine/layer"
)

// cases is the suite, in the order Run runs it.
var cases = []struct {
	name string
	fn   func(h *harness)
}{
	{"ImportCopy", testImportCopy},
	{"ImportMove", testImportMove},
	{"ActivateEmptyViewDir", testActivateEmptyViewDir},
	{"CreateFile", testCreateFile},
	{"ModifyFile", testModifyFile},
	{"DeleteFile", testDeleteFile},
	{"DeleteDirTree", testDeleteDirTree},
	{"RenameFile", testRenameFile},
	{"RenameDir", testRenameDir},
	{"Symlink", testSymlink},
	{"HardLink", testHardLink},
	{"Chmod", testChmod},
	{"EmptyDir", testEmptyDir},
	{"RecreateFile", testRecreateFile},
	{"RecreateDir", testRecreateDir},
	{"FileToDir", testFileToDir},
	{"DirToFile", testDirToFile},
	{"Isolation", testIsolation},
	{"ParentChangesAfterSeal", testParentChangesAfterSeal},
	{"SealTwice", testSealTwice},
	{"NestedForks", testNestedForks},
	{"VersionReadBack", testVersionReadBack},
	{"Changes", testChanges},
	{"ChangesEmpty", testChangesEmpty},
	{"ChangesRestored", testChangesRestored},
	{"Read", testRead},
	{"Deactivate", testDeactivate},
	{"DeactivateUnactivatedView", testDeactivateUnactivatedView},
	{"Restore", testRestore},
	{"RemoveLayer", testRemoveLayer},
	{"LargeFile", testLargeFile},
	{"SparseFile", testSparseFile},
	{"PinnedFiles", testPinnedFiles},
	{"ManyFiles", testManyFiles},
	{"UnusualNames", testUnusualNames},
	{"Fifo", testFifo},
	{"EmptyFiles", testEmptyFiles},
	{"Permissions", testPermissions},
}

// baseTree is a small workspace: nested files, an executable, an empty
// directory and a symlink.
func baseTree() tree {
	return tree{
		"README.md":        file("# demo\n"),
		"src/main.go":      file("package main\n"),
		"src/util/util.go": file("package util\n"),
		"bin/run.sh":       fileMode("#!/bin/sh\necho hi\n", 0o755),
		"docs":             dir(),
		"link":             symlink("README.md"),
	}
}

// testImportCopy: Import with move=false leaves the source as it was, and
// the layer reads back exactly, hard links included, whatever a view of it
// then does.
func testImportCopy(h *harness) {
	tr := baseTree().with(tree{
		"hard":       hardlink("README.md"),
		"secret.key": fileMode("key", 0o600),
		"private":    dirMode(0o700),
		"private/x":  file("x"),
	})
	src := h.source(tr)
	v := h.importDir(src, false)
	checkTree(h.t, "source after Import(move=false)", src, tr)
	r := h.activate(v)
	h.check("view of the imported layer", r, tr)
	h.do(r, write("README.md", "changed in the view"), write("hard", "through the link"),
		remove("src"), put("new", file("n")), chmod("secret.key", 0o644))
	checkTree(h.t, "source after writes in a view", src, tr)
	h.checkVersion("imported layer after writes in a view of it", v, tr)
}

// testImportMove: Import with move=true may empty the source, but the layer
// holds every entry, hidden ones included.
func testImportMove(h *harness) {
	tr := baseTree().with(tree{
		".hidden":     file("h"),
		".git/config": file("[core]\n"),
		"hard":        hardlink("README.md"),
	})
	src := h.source(tr)
	v := h.importDir(src, true)
	h.checkMovedSource(src, tr)
	r := h.activate(v)
	h.check("view of the layer imported with move", r, tr)
	h.do(r, write("README.md", "changed"), put("new", file("n")), remove(".git"))
	h.checkMovedSource(src, tr)
	h.checkVersion("layer imported with move, after writes in a view of it", v, tr)
}

// checkMovedSource fails unless src, imported with move=true, still exists
// and is either empty or exactly as it was.
func (h *harness) checkMovedSource(src string, tr tree) {
	h.t.Helper()
	h.mustBeDir("Import(move=true)", src)
	if len(readTree(h.t, src)) > 0 {
		checkTree(h.t, "source after Import(move=true), neither empty nor untouched", src, tr)
	}
}

// testActivateEmptyViewDir: Activate accepts a view that exists as an empty
// directory.
func testActivateEmptyViewDir(h *harness) {
	base := baseTree()
	v := h.importTree(base)
	r := h.newRun()
	if err := os.Mkdir(r.View, 0o755); err != nil {
		h.t.Fatal(err)
	}
	h.activateRun(r, v)
	h.check("view activated over an empty directory", r, base)
	h.do(r, put("x", file("x")))
	h.check("view activated over an empty directory, after a write", r, base.with(tree{"x": file("x")}))
	h.checkVersion("version after writes in a view", v, base)
}

// testCreateFile: files created in a run, at any depth, are in its view,
// in its Changes, and in the version sealed from it.
func testCreateFile(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("new.txt", file("fresh")), put("src/util/new.go", file("package util // new\n")),
		put("a", dir()), put("a/b", dir()), put("a/b/c", dir()), put("a/b/c/deep.txt", file("deep")))
	want := base.with(tree{"new.txt": file("fresh"), "src/util/new.go": file("package util // new\n"),
		"a/b/c/deep.txt": file("deep")})
	h.check("source after creating files", src, want)
	h.checkChanges("source after creating files", src, v0, []layer.Change{
		added("a", "dir", 0), added("a/b", "dir", 0), added("a/b/c", "dir", 0),
		added("a/b/c/deep.txt", "file", 4), added("new.txt", "file", 5), added("src/util/new.go", "file", 20),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.check("source after the seal", src, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("imported version", v0, base)
}

// testModifyFile: a file rewritten in place, also with the same size, reads
// the new content; the fork's later rewrite stays in the fork.
func testModifyFile(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, write("README.md", "# demo, edited\n"), write("src/main.go", "package nain\n"))
	want := base.with(tree{"README.md": file("# demo, edited\n"), "src/main.go": file("package nain\n")})
	h.check("source after modifying files", src, want)
	h.checkChanges("source after modifying files", src, v0, []layer.Change{
		modified("README.md", "file", 15, 7), modified("src/main.go", "file", 13, 13),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, write("src/main.go", "package forked\n"), write("bin/run.sh", "#!/bin/sh\nexit 1\n"))
	h.check("fork after its own edits", fork, want.with(tree{
		"src/main.go": file("package forked\n"), "bin/run.sh": fileMode("#!/bin/sh\nexit 1\n", 0o755)}))
	h.checkChanges("fork after its own edits", fork, v1, []layer.Change{
		modified("bin/run.sh", "file", 17, 18), modified("src/main.go", "file", 15, 13),
	})
	h.check("source after the fork's edits", src, want)
	h.checkVersion("sealed version after the fork's edits", v1, want)
	h.checkVersion("imported version", v0, base)
}

// testDeleteFile: deleted files and symlinks are gone from the view and
// from versions sealed after, and only there.
func testDeleteFile(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, remove("README.md"), remove("src/util/util.go"), remove("link"))
	want := base.without("README.md", "src/util/util.go", "link").with(tree{"src/util": dir()})
	h.check("source after deleting files", src, want)
	h.checkChanges("source after deleting files", src, v0, []layer.Change{
		deleted("README.md", "file", 7), deleted("link", "symlink", 0), deleted("src/util/util.go", "file", 13),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, remove("src/main.go"))
	h.check("fork after deleting one more", fork, want.without("src/main.go"))
	h.checkChanges("fork after deleting one more", fork, v1, []layer.Change{deleted("src/main.go", "file", 13)})
	h.check("source after the fork's deletion", src, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("imported version", v0, base)
}

// testDeleteDirTree: removing a directory tree removes every entry of it,
// and Changes lists each.
func testDeleteDirTree(h *harness) {
	base := baseTree().with(tree{
		"tree/a/b/c/file": file("f"),
		"tree/a/x":        file("x"),
		"tree/y":          file("yy"),
		"tree/empty":      dir(),
		"tree/l":          symlink("y"),
	})
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, remove("tree"))
	want := base.without("tree")
	h.check("source after deleting a tree", src, want)
	h.checkChanges("source after deleting a tree", src, v0, []layer.Change{
		deleted("tree", "dir", 0), deleted("tree/a", "dir", 0), deleted("tree/a/b", "dir", 0),
		deleted("tree/a/b/c", "dir", 0), deleted("tree/a/b/c/file", "file", 1), deleted("tree/a/x", "file", 1),
		deleted("tree/empty", "dir", 0), deleted("tree/l", "symlink", 0), deleted("tree/y", "file", 2),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, remove("src"))
	h.check("fork after deleting src", fork, want.without("src"))
	h.checkChanges("fork after deleting src", fork, v1, []layer.Change{
		deleted("src", "dir", 0), deleted("src/main.go", "file", 13),
		deleted("src/util", "dir", 0), deleted("src/util/util.go", "file", 13),
	})
	h.check("source after the fork's deletion", src, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("imported version", v0, base)
}

// testRenameFile: a renamed file moves, keeping its content and mode.
func testRenameFile(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, rename("README.md", "README.txt"), put("cmd", dir()), rename("src/main.go", "cmd/main.go"),
		rename("bin/run.sh", "bin/start.sh"))
	want := base.without("README.md", "src/main.go", "bin/run.sh").with(tree{
		"README.txt": file("# demo\n"), "cmd/main.go": file("package main\n"),
		"bin/start.sh": fileMode("#!/bin/sh\necho hi\n", 0o755)})
	h.check("source after renames", src, want)
	h.checkChanges("source after renames", src, v0, []layer.Change{
		deleted("README.md", "file", 7), added("README.txt", "file", 7),
		deleted("bin/run.sh", "file", 18), added("bin/start.sh", "file", 18),
		added("cmd", "dir", 0), added("cmd/main.go", "file", 13), deleted("src/main.go", "file", 13),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, rename("README.txt", "README.md"))
	h.check("fork after renaming back", fork, want.without("README.txt").with(tree{"README.md": file("# demo\n")}))
	h.check("source after the fork's rename", src, want)
	h.checkVersion("sealed version", v1, want)
}

// testRenameDir: a renamed directory moves with everything in it, and a new
// directory made at the old name does not show the old entries.
func testRenameDir(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, rename("src", "lib"), put("src", dir()), put("src/other.go", file("package other\n")))
	want := base.without("src").with(tree{
		"lib/main.go": file("package main\n"), "lib/util/util.go": file("package util\n"),
		"src/other.go": file("package other\n")})
	h.check("source after renaming a directory", src, want)
	h.checkChanges("source after renaming a directory", src, v0, []layer.Change{
		added("lib", "dir", 0), added("lib/main.go", "file", 13), added("lib/util", "dir", 0),
		added("lib/util/util.go", "file", 13), deleted("src/main.go", "file", 13),
		added("src/other.go", "file", 14), deleted("src/util", "dir", 0), deleted("src/util/util.go", "file", 13),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, rename("lib/util", "util"))
	forkWant := want.without("lib/util").with(tree{"util/util.go": file("package util\n")})
	h.check("fork after moving a directory up", fork, forkWant)
	h.checkChanges("fork after moving a directory up", fork, v1, []layer.Change{
		deleted("lib/util", "dir", 0), deleted("lib/util/util.go", "file", 13),
		added("util", "dir", 0), added("util/util.go", "file", 13),
	})
	h.check("source after the fork's rename", src, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("fork's files, sealed", h.seal(fork, v1), forkWant)
}

// testSymlink: symlinks are stored and read back as links, retargeted in
// place, and never followed: no layer or view ever holds the bytes of what
// they point at.
func testSymlink(h *harness) {
	outside := h.t.TempDir()
	secret := fmt.Sprintf("layertest secret %x\n", rand.Uint64())
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte(secret), 0o644); err != nil {
		h.t.Fatal(err)
	}
	base := tree{
		"a":        file("alpha"),
		"b":        file("bravo"),
		"rel":      symlink("a"),
		"passwd":   symlink("/etc/passwd"),
		"outside":  symlink(filepath.Join(outside, "secret")),
		"outdir":   symlink(outside),
		"dangling": symlink("no/such/file"),
		"sub/x":    file("x"),
		"dirlink":  symlink("sub"),
		"loop":     symlink("loop"),
	}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("rel", symlink("b")), put("up", symlink("../../../../etc/shadow")),
		put("abs", symlink(outside+"/secret")))
	want := base.with(tree{"rel": symlink("b"), "up": symlink("../../../../etc/shadow"),
		"abs": symlink(outside + "/secret")})
	h.check("source after symlink changes", src, want)
	h.checkChanges("source after symlink changes", src, v0, []layer.Change{
		added("abs", "symlink", 0), modified("rel", "symlink", 0, 0), added("up", "symlink", 0),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, put("passwd", symlink("/etc/hostname")))
	h.check("fork after retargeting", fork, want.with(tree{"passwd": symlink("/etc/hostname")}))
	h.check("source after the fork's retarget", src, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("imported version", v0, base)
	h.checkNoCopyOf("a symlink's target", []byte(secret))
	if passwd, err := os.ReadFile("/etc/passwd"); err == nil && len(passwd) > 0 {
		h.checkNoCopyOf("/etc/passwd", passwd)
	}
}

// checkNoCopyOf fails if any regular file under the case's directory
// (layers, runs, sources) contains data.
func (h *harness) checkNoCopyOf(what string, data []byte) {
	h.t.Helper()
	err := filepath.WalkDir(h.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, data) {
			h.t.Errorf("%s holds a copy of %s: a symlink was followed", p, what)
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// testHardLink: both names of a hard link read the same content, in the run
// and after a fork (still one file there), and a write through the fork
// changes neither name in the parent.
func testHardLink(h *harness) {
	base := tree{"a": file("one"), "x": file("ex"), "x2": hardlink("x")}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.check("source", src, base)
	h.do(src, put("b", hardlink("a")), write("a", "two"))
	want := tree{"a": file("two"), "b": hardlink("a"), "x": file("ex"), "x2": hardlink("x")}
	h.check("source after linking and writing through one name", src, want)
	h.checkChanges("source after linking", src, v0, []layer.Change{
		modified("a", "file", 3, 3), added("b", "file", 3),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, write("a", "three"))
	h.checkFile("fork after writing through a", fork, "a", "three")
	h.check("source after the fork wrote through a", src, want)
	h.checkVersion("sealed version after the fork wrote through a", v1, want)
	h.checkVersion("imported version", v0, base)
}

// testChmod: a mode change alone is kept and listed as a modification.
func testChmod(h *harness) {
	base := tree{"run.sh": file("#!/bin/sh\n"), "data": file("d"), "dir": dir(), "dir/f": file("f")}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, chmod("run.sh", 0o755), chmod("data", 0o600), chmod("dir", 0o700))
	want := base.with(tree{"run.sh": fileMode("#!/bin/sh\n", 0o755), "data": fileMode("d", 0o600),
		"dir": dirMode(0o700)})
	h.check("source after chmod", src, want)
	h.checkChanges("source after chmod", src, v0, []layer.Change{
		modified("data", "file", 1, 1), modified("dir", "dir", 0, 0), modified("run.sh", "file", 10, 10),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, chmod("run.sh", 0o700))
	h.check("fork after its chmod", fork, want.with(tree{"run.sh": fileMode("#!/bin/sh\n", 0o700)}))
	h.check("source after the fork's chmod", src, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("imported version", v0, base)
}

// testEmptyDir: empty directories, imported, made, or emptied, survive
// sealing with their modes; an empty workspace imports too.
func testEmptyDir(h *harness) {
	h.checkVersion("empty import", h.importTree(tree{}), tree{})
	base := tree{"empty": dir(), "nested/empty/deeper": dirMode(0o750), "full/f": file("f")}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("made", dirMode(0o711)), remove("full/f"))
	want := base.without("full/f").with(tree{"full": dir(), "made": dirMode(0o711)})
	h.check("source", src, want)
	h.checkChanges("source", src, v0, []layer.Change{deleted("full/f", "file", 1), added("made", "dir", 0)})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.checkVersion("sealed version", v1, want)
}

// testRecreateFile: a file deleted in one generation and created again, with
// other content and mode, in a fork of it reads the new content, never the
// old; likewise within one generation.
func testRecreateFile(h *harness) {
	base := tree{"f": file("old content"), "g": file("gee")}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, remove("f"), remove("g"), put("g", fileMode("different g", 0o755)))
	want0 := tree{"g": fileMode("different g", 0o755)}
	h.check("source after deleting f and recreating g", src, want0)
	h.checkChanges("source after deleting f and recreating g", src, v0, []layer.Change{
		deleted("f", "file", 11), modified("g", "file", 11, 3),
	})
	fork1, v1 := h.fork(src, v0)
	h.check("fork of the deletion", fork1, want0)
	h.do(fork1, put("f", fileMode("new", 0o600)))
	want1 := want0.with(tree{"f": fileMode("new", 0o600)})
	h.check("fork after recreating f", fork1, want1)
	h.checkChanges("fork after recreating f", fork1, v1, []layer.Change{added("f", "file", 3)})
	fork2, v2 := h.fork(fork1, v1)
	h.check("fork of the fork", fork2, want1)
	h.check("source after its fork recreated f", src, want0)
	h.checkVersion("version with f deleted", v1, want0)
	h.checkVersion("version with f recreated", v2, want1)
	h.checkVersion("imported version", v0, base)
}

// testRecreateDir: a directory deleted and made again, in the same
// generation or in a fork, holds only its new entries (overlay: opaque).
func testRecreateDir(h *harness) {
	base := tree{"d/a": file("a"), "d/b": file("b"), "d/sub/c": file("c"),
		"e/old1": file("1"), "e/old2": file("2"), "keep": file("k")}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, remove("d"), remove("e"), put("e", dir()), put("e/z", file("z")))
	want0 := tree{"e/z": file("z"), "keep": file("k")}
	h.check("source after deleting d and recreating e", src, want0)
	h.checkChanges("source after deleting d and recreating e", src, v0, []layer.Change{
		deleted("d", "dir", 0), deleted("d/a", "file", 1), deleted("d/b", "file", 1), deleted("d/sub", "dir", 0),
		deleted("d/sub/c", "file", 1), deleted("e/old1", "file", 1), deleted("e/old2", "file", 1),
		added("e/z", "file", 1),
	})
	fork1, v1 := h.fork(src, v0)
	h.check("fork of the deletion", fork1, want0)
	h.do(fork1, put("d", dirMode(0o700)), put("d/new", file("new")), put("d/sub", dir()))
	want1 := want0.with(tree{"d": dirMode(0o700), "d/new": file("new"), "d/sub": dir()})
	h.check("fork after recreating d", fork1, want1)
	h.checkChanges("fork after recreating d", fork1, v1, []layer.Change{
		added("d", "dir", 0), added("d/new", "file", 3), added("d/sub", "dir", 0),
	})
	fork2, v2 := h.fork(fork1, v1)
	h.check("fork of the fork", fork2, want1)
	h.checkVersion("version with d deleted", v1, want0)
	h.checkVersion("version with d recreated", v2, want1)
	h.checkVersion("imported version", v0, base)
}

// testFileToDir: a file replaced by a directory (and a symlink) is a type
// change, and so is turning it back into a file in a fork.
func testFileToDir(h *harness) {
	base := tree{"x": file("I was a file"), "y": file("yy")}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, remove("x"), put("x", dir()), put("x/inside", file("in")), remove("y"), put("y", symlink("x/inside")))
	want0 := tree{"x/inside": file("in"), "y": symlink("x/inside")}
	h.check("source after replacing files", src, want0)
	h.checkChanges("source after replacing files", src, v0, []layer.Change{
		typeChanged("x", "dir"), added("x/inside", "file", 2), typeChanged("y", "symlink"),
	})
	fork1, v1 := h.fork(src, v0)
	h.check("fork", fork1, want0)
	h.do(fork1, remove("x"), put("x", file("file again")))
	want1 := tree{"x": file("file again"), "y": symlink("x/inside")}
	h.check("fork after turning x back into a file", fork1, want1)
	h.checkChanges("fork after turning x back into a file", fork1, v1, []layer.Change{
		typeChanged("x", "file"), deleted("x/inside", "file", 2),
	})
	fork2, v2 := h.fork(fork1, v1)
	h.check("fork of the fork", fork2, want1)
	h.check("source after its fork's changes", src, want0)
	h.checkVersion("version with x a directory", v1, want0)
	h.checkVersion("version with x a file again", v2, want1)
	h.checkVersion("imported version", v0, base)
}

// testDirToFile: a directory replaced by a file is a type change that
// deletes its entries; a directory made there again in a fork is empty but
// for its new entries.
func testDirToFile(h *harness) {
	base := tree{"d/1": file("1"), "d/sub/2": file("2"), "other": file("o")}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, remove("d"), put("d", fileMode("now a file", 0o600)))
	want0 := tree{"d": fileMode("now a file", 0o600), "other": file("o")}
	h.check("source after replacing a directory", src, want0)
	h.checkChanges("source after replacing a directory", src, v0, []layer.Change{
		typeChanged("d", "file"), deleted("d/1", "file", 1), deleted("d/sub", "dir", 0), deleted("d/sub/2", "file", 1),
	})
	fork1, v1 := h.fork(src, v0)
	h.check("fork", fork1, want0)
	h.do(fork1, remove("d"), put("d", dir()), put("d/new", file("n")))
	want1 := tree{"d/new": file("n"), "other": file("o")}
	h.check("fork after making d a directory again", fork1, want1)
	h.checkChanges("fork after making d a directory again", fork1, v1, []layer.Change{
		typeChanged("d", "dir"), added("d/new", "file", 1),
	})
	fork2, v2 := h.fork(fork1, v1)
	h.check("fork of the fork", fork2, want1)
	h.checkVersion("version with d a file", v1, want0)
	h.checkVersion("version with d a directory again", v2, want1)
	h.checkVersion("imported version", v0, base)
}

// testIsolation: after a seal, what the parent changes never shows in the
// fork and the other way round; a second fork of the same version sees
// neither.
func testIsolation(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	fork, v1 := h.fork(src, v0)
	other := h.activate(v1)
	h.do(src, put("from-parent", file("p")), write("README.md", "parent edit"), remove("docs"),
		write("src/util/util.go", "package parent\n"))
	h.do(fork, put("from-fork", file("f")), write("src/main.go", "fork edit"), remove("link"),
		chmod("bin/run.sh", 0o700), write("src/util/util.go", "package fork\n"))
	h.check("parent", src, base.without("docs").with(tree{"from-parent": file("p"),
		"README.md": file("parent edit"), "src/util/util.go": file("package parent\n")}))
	h.check("fork", fork, base.without("link").with(tree{"from-fork": file("f"),
		"src/main.go": file("fork edit"), "bin/run.sh": fileMode("#!/bin/sh\necho hi\n", 0o700),
		"src/util/util.go": file("package fork\n")}))
	h.checkChanges("fork", fork, v1, []layer.Change{
		modified("bin/run.sh", "file", 18, 18), added("from-fork", "file", 1), deleted("link", "symlink", 0),
		modified("src/main.go", "file", 9, 13), modified("src/util/util.go", "file", 13, 13),
	})
	h.check("second fork of the same version", other, base)
	h.checkChanges("second fork of the same version", other, v1, nil)
	h.checkVersion("sealed version", v1, base)
}

// testParentChangesAfterSeal: the parent keeps changing after Seal, and the
// sealed version does not move.
func testParentChangesAfterSeal(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("gen1", file("g1")), write("README.md", "readme v1"))
	want1 := base.with(tree{"gen1": file("g1"), "README.md": file("readme v1")})
	fork, v1 := h.fork(src, v0)
	h.do(src, write("README.md", "readme v2, longer"), write("gen1", "g2"), chmod("gen1", 0o600),
		write("src/main.go", "package changed\n"), remove("src/util"), rename("bin", "sbin"),
		put("later", file("later")), put("docs/new", file("new")))
	want2 := base.without("src/util", "bin").with(tree{
		"README.md": file("readme v2, longer"), "gen1": fileMode("g2", 0o600), "src/main.go": file("package changed\n"),
		"sbin/run.sh": fileMode("#!/bin/sh\necho hi\n", 0o755), "later": file("later"), "docs/new": file("new")})
	h.check("parent after more changes", src, want2)
	h.check("fork after the parent's changes", fork, want1)
	h.checkVersion("sealed version after the parent's changes", v1, want1)
}

// testSealTwice: a run sealed twice (a source forked twice) gives two
// versions, each exactly its files at the time; the base passed to the
// second Seal and to Changes is still the version the run was activated
// with.
func testSealTwice(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("first", file("1")), write("README.md", "first edit"))
	want1 := base.with(tree{"first": file("1"), "README.md": file("first edit")})
	v1 := h.seal(src, v0)
	h.do(src, put("second", file("22")), remove("first"), write("README.md", "second edit"), remove("docs"))
	want2 := base.without("docs").with(tree{"second": file("22"), "README.md": file("second edit")})
	v2 := h.seal(src, v0)
	h.check("source after two seals", src, want2)
	h.checkChanges("source after two seals, against the version it was activated with", src, v0, []layer.Change{
		modified("README.md", "file", 11, 7), deleted("docs", "dir", 0), added("second", "file", 2),
	})
	h.checkVersion("first sealed version", v1, want1)
	h.checkVersion("second sealed version", v2, want2)
	fork := h.activate(v2)
	h.checkChanges("fork of the second version", fork, v2, nil)
}

// testNestedForks: a fork of a fork of a fork reads back exactly at each
// level, and each level's version stays as sealed.
func testNestedForks(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("level", file("0")), put("l0", file("source")))
	want0 := base.with(tree{"level": file("0"), "l0": file("source")})
	f1, v1 := h.fork(src, v0)
	h.do(f1, write("level", "11"), put("l1", file("one")), remove("README.md"), put("dir1", dir()), put("dir1/x", file("x")))
	want1 := want0.without("README.md").with(tree{"level": file("11"), "l1": file("one"), "dir1/x": file("x")})
	f2, v2 := h.fork(f1, v1)
	h.do(f2, write("level", "222"), remove("l1"), put("README.md", file("recreated at level 2")),
		remove("dir1"), put("dir1", dir()), put("dir1/y", file("y")))
	want2 := want1.without("l1", "dir1").with(tree{"level": file("222"), "README.md": file("recreated at level 2"),
		"dir1/y": file("y")})
	f3, v3 := h.fork(f2, v2)
	h.do(f3, write("level", "3333"), put("l3", symlink("level")), remove("src"))
	want3 := want2.without("src").with(tree{"level": file("3333"), "l3": symlink("level")})
	h.check("source", src, want0)
	h.check("fork", f1, want1)
	h.check("fork of fork", f2, want2)
	h.check("fork of fork of fork", f3, want3)
	h.checkChanges("fork of fork of fork", f3, v3, []layer.Change{
		added("l3", "symlink", 0), modified("level", "file", 4, 3), deleted("src", "dir", 0),
		deleted("src/main.go", "file", 13), deleted("src/util", "dir", 0), deleted("src/util/util.go", "file", 13),
	})
	h.checkVersion("version 1", v1, want0)
	h.checkVersion("version 2", v2, want1)
	h.checkVersion("version 3", v3, want2)
	h.checkVersion("version 4", h.seal(f3, v3), want3)
}

// testVersionReadBack: old versions read back exactly after later changes
// everywhere, after the runs that made them are gone, and from two runs at
// once.
func testVersionReadBack(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("a", file("a1")), write("README.md", "v1"))
	want1 := base.with(tree{"a": file("a1"), "README.md": file("v1")})
	fork, v1 := h.fork(src, v0)
	h.do(fork, write("a", "a2"), write("src/main.go", "package v2\n"), remove("docs"))
	want2 := want1.without("docs").with(tree{"a": file("a2"), "src/main.go": file("package v2\n")})
	v2 := h.seal(fork, v1)
	h.do(src, write("a", "a3"), write("src/util/util.go", "package v3\n"), write("README.md", "v3"))
	h.do(fork, write("a", "a4"), write("README.md", "v4"))
	h.deactivate(src)
	h.deactivate(fork)
	h.checkVersion("imported version", v0, base)
	h.checkVersion("version 1", v1, want1)
	h.checkVersion("version 2", v2, want2)
	r1, r2 := h.activate(v1), h.activate(v1)
	h.do(r1, write("a", "r1"), write("README.md", "r1"), remove("src"))
	h.check("second run of version 1, after writes in the first", r2, want1)
	h.checkVersion("version 1, after writes in two more runs of it", v1, want1)
}

// testChanges: Changes lists exactly, sorted by path, the additions,
// modifications, deletions (a deleted directory with its entries) and type
// changes of a fork against a two-generation version, and nothing that is
// unchanged, restored, or a parent of a change.
func testChanges(h *harness) {
	base := tree{
		"a.txt": file("alpha"), "b.txt": file("bravo"), "c.txt": file("charlie"),
		"d/x": file("x"), "d/y": file("yy"), "e": file("echo"), "f/one": file("1"), "g": file("golf"),
		"k": file("kilo"), "n/deep/keep": file("keep"), "n/deep/mod": file("mod"),
		"zz": file("deleted by the source"),
	}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("d/sub", dir()), put("d/sub/z", file("zulu")), put("h", symlink("a.txt")),
		put("m", file("mike")), remove("zz"))
	h.checkChanges("source", src, v0, []layer.Change{
		added("d/sub", "dir", 0), added("d/sub/z", "file", 4), added("h", "symlink", 0),
		added("m", "file", 4), deleted("zz", "file", 21),
	})
	fork, v1 := h.fork(src, v0)
	h.do(fork,
		write("a.txt", "alpha, longer"), write("b.txt", "BRAVO"), remove("c.txt"), remove("d"),
		remove("e"), put("e", dir()), put("e/inner", file("in")),
		remove("f"), put("f", file("foxtrot")),
		remove("g"), put("g", symlink("a.txt")),
		put("h", symlink("b.txt")), chmod("k", 0o755),
		write("m", "xxx"), write("m", "mike"), write("n/deep/mod", "MOD"),
		put("new", dir()), put("new/dir", dir()), put("new/dir/file", file("nf")),
		put("newfile.txt", file("nft")), put("newlink", symlink("new/dir/file")))
	h.checkChanges("fork", fork, v1, []layer.Change{
		modified("a.txt", "file", 13, 5),
		modified("b.txt", "file", 5, 5),
		deleted("c.txt", "file", 7),
		deleted("d", "dir", 0),
		deleted("d/sub", "dir", 0),
		deleted("d/sub/z", "file", 4),
		deleted("d/x", "file", 1),
		deleted("d/y", "file", 2),
		typeChanged("e", "dir"),
		added("e/inner", "file", 2),
		typeChanged("f", "file"),
		deleted("f/one", "file", 1),
		typeChanged("g", "symlink"),
		modified("h", "symlink", 0, 0),
		modified("k", "file", 4, 4),
		modified("n/deep/mod", "file", 3, 3),
		added("new", "dir", 0),
		added("new/dir", "dir", 0),
		added("new/dir/file", "file", 2),
		added("newfile.txt", "file", 3),
		added("newlink", "symlink", 0),
	})
}

// testChangesEmpty: right after Activate, of an imported layer or of a
// sealed version, Changes is empty, also after reading every file and
// touching one.
func testChangesEmpty(h *harness) {
	base := baseTree().with(tree{"hard": hardlink("README.md"), "private": dirMode(0o700)})
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.checkChanges("source right after Activate", src, v0, nil)
	readTree(h.t, src.View)
	if err := os.Chtimes(at(src.View, "README.md"), fixedTime.AddDate(1, 0, 0), fixedTime.AddDate(1, 0, 0)); err != nil {
		h.t.Fatal(err)
	}
	h.checkChanges("source after reading every file and touching one", src, v0, nil)
	h.do(src, put("x", file("x")), remove("docs"))
	fork, v1 := h.fork(src, v0)
	h.checkChanges("fork right after Activate", fork, v1, nil)
	h.do(fork, write("x", "y"))
	fork2, v2 := h.fork(fork, v1)
	h.checkChanges("fork of a fork right after Activate", fork2, v2, nil)
}

// testChangesRestored: a file modified and then restored to the same bytes
// and mode, a directory whose mode went back, a file deleted and made again
// the same, and a file created and deleted again, are no change.
func testChangesRestored(h *harness) {
	base := tree{"m": file("mike"), "d": dir(), "d/f": fileMode("f", 0o640), "other": file("o")}
	v0 := h.importTree(base)
	restore := []op{
		write("m", "xxx"), write("m", "mike"),
		chmod("d", 0o700), chmod("d", 0o755),
		remove("d/f"), put("d/f", fileMode("f", 0o640)),
		put("tmp", file("tmp")), remove("tmp"),
		chmod("other", 0o600), chmod("other", 0o644),
	}
	src := h.activate(v0)
	h.do(src, restore...)
	h.check("source after restoring", src, base)
	h.checkChanges("source after restoring", src, v0, nil)
	h.do(src, put("sealed", file("s")))
	fork, v1 := h.fork(src, v0)
	h.do(fork, restore...)
	h.do(fork, write("sealed", "?"), write("sealed", "s"))
	h.checkChanges("fork after restoring", fork, v1, nil)
}

// testRead: Read shows a version exactly, several versions at once, while
// the run sealed into it keeps changing; after release the version still
// activates.
func testRead(h *harness) {
	base := baseTree().with(tree{"hard": hardlink("README.md")})
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("x", file("x")), remove("docs"), write("src/main.go", "package read\n"))
	want1 := base.without("docs").with(tree{"x": file("x"), "src/main.go": file("package read\n")})
	v1 := h.seal(src, v0)
	h.do(src, write("x", "later"), write("README.md", "later"), put("docs", dir()))
	dir1, release1 := h.read(v1)
	dir0, release0 := h.read(v0)
	checkTree(h.t, "Read of the sealed version", dir1, want1)
	checkTree(h.t, "Read of the imported version", dir0, base)
	h.do(src, remove("src"))
	checkTree(h.t, "Read of the sealed version after more changes in the run", dir1, want1)
	release1()
	release0()
	h.checkVersion("sealed version after Read", v1, want1)
	dir1, release1 = h.read(v1)
	checkTree(h.t, "second Read of the sealed version", dir1, want1)
	release1()
}

// testDeactivate: Deactivate removes the view and the run's private state,
// leaves the layers, and is idempotent, also for a run never activated.
func testDeactivate(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	r := h.activate(v0)
	h.do(r, put("x", file("x")), write("README.md", "changed"))
	h.deactivate(r)
	h.mustNotExist("view after Deactivate", r.View)
	h.checkNoPrivateState(r)
	h.deactivate(r)
	h.deactivate(h.newRun())
	h.checkVersion("imported version after Deactivate", v0, base)
	src := h.activate(v0)
	h.do(src, put("y", file("y")))
	fork, v1 := h.fork(src, v0)
	h.do(fork, put("only-fork", file("f")))
	h.deactivate(fork)
	h.mustNotExist("fork's view after Deactivate", fork.View)
	h.checkNoPrivateState(fork)
	want := base.with(tree{"y": file("y")})
	h.check("parent after its fork's Deactivate", src, want)
	h.checkVersion("sealed version after its fork's Deactivate", v1, want)
}

// testDeactivateUnactivatedView: a flat backend's Deactivate removes a
// source's view that is a plain workspace directory, never activated.
func testDeactivateUnactivatedView(h *harness) {
	v0 := h.importTree(tree{"f": file("f")})
	probe := h.activate(v0)
	if v := h.seal(probe, v0); len(v) != 1 {
		h.t.Skip("a stacking backend: only flat backends take a never-activated workspace directory")
	}
	r := h.newRun()
	if err := os.Mkdir(r.View, 0o755); err != nil {
		h.t.Fatal(err)
	}
	tree{"work/file": file("w"), "link": symlink("work")}.create(h.t, r.View)
	h.deactivate(r)
	h.mustNotExist("workspace directory after Deactivate", r.View)
	h.deactivate(r)
}

// testRestore: for a backend with Restore, restoring a run whose view is
// there changes nothing, and above all keeps the run's changes.
func testRestore(h *harness) {
	rs, ok := h.b.(layer.Restorer)
	if !ok {
		h.t.Skip("the backend has no Restore")
	}
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("x", file("x")), remove("docs"), write("README.md", "changed"))
	want := base.without("docs").with(tree{"x": file("x"), "README.md": file("changed")})
	for i := range 2 {
		if err := rs.Restore(h.ctx, src, slices.Clone(v0)); err != nil {
			h.t.Fatalf("Restore #%d: %v", i+1, err)
		}
		h.check(fmt.Sprintf("view after Restore #%d", i+1), src, want)
	}
	h.checkChanges("after Restore", src, v0, []layer.Change{
		modified("README.md", "file", 7, 7), deleted("docs", "dir", 0), added("x", "file", 1),
	})
}

// checkNoPrivateState fails unless r.Dir is gone or empty.
func (h *harness) checkNoPrivateState(r layer.Run) {
	h.t.Helper()
	entries, err := os.ReadDir(r.Dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		h.t.Fatal(err)
	}
	if len(entries) > 0 {
		names := make([]string, len(entries))
		for i, e := range entries {
			names[i] = e.Name()
		}
		h.t.Errorf("run's private directory %s still holds %q after Deactivate", r.Dir, names)
	}
}

// testRemoveLayer: RemoveLayer deletes a layer, leaves the others, and
// removing it again, or a layer never made, is not an error.
func testRemoveLayer(h *harness) {
	base := baseTree()
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("x", file("x")))
	v1 := h.seal(src, v0)
	h.deactivate(src)
	top := v1[len(v1)-1]
	h.removeLayer(top)
	h.mustNotExist("layer after RemoveLayer", top)
	h.removeLayer(top)
	h.removeLayer(filepath.Join(h.root, "layers", "never-made"))
	h.checkVersion("imported version after removing a later layer", v0, base)
	h.removeLayer(v0[0])
	h.mustNotExist("imported layer after RemoveLayer", v0[0])
}

// removeLayer calls RemoveLayer and fails the case on an error.
func (h *harness) removeLayer(l string) {
	h.t.Helper()
	if err := h.b.RemoveLayer(h.ctx, l); err != nil {
		h.t.Fatalf("RemoveLayer(%s): %v", l, err)
	}
}

// largeSize is the size of the large files, 8 MiB.
const largeSize = 8 << 20

// random returns n bytes from a seeded generator.
func random(seed uint64, n int) string {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{byte(seed)}).Read(b)
	return string(b)
}

// testLargeFile: 8 MiB files of random bytes, imported or written in a
// run, survive seals and forks; a one-byte write in the middle of one stays
// in the fork that made it.
func testLargeFile(h *harness) {
	base := tree{"imported.bin": file(random(1, largeSize)), "small": file("s")}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.do(src, put("written.bin", fileMode(random(2, largeSize), 0o600)))
	want := base.with(tree{"written.bin": fileMode(random(2, largeSize), 0o600)})
	h.check("source", src, want)
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, patch("imported.bin", largeSize/2, "X"), patch("written.bin", largeSize/2+1, "Y"))
	forkWant := want.with(tree{
		"imported.bin": file(patched(random(1, largeSize), largeSize/2, "X")),
		"written.bin":  fileMode(patched(random(2, largeSize), largeSize/2+1, "Y"), 0o600),
	})
	h.check("fork after writing one byte into each", fork, forkWant)
	h.checkChanges("fork after writing one byte into each", fork, v1, []layer.Change{
		modified("imported.bin", "file", largeSize, largeSize), modified("written.bin", "file", largeSize, largeSize),
	})
	h.check("source after the fork's writes", src, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("fork's version", h.seal(fork, v1), forkWant)
	h.checkVersion("imported version", v0, base)
}

// patch writes data into the existing file p at offset off, in place.
func patch(p string, off int64, data string) op {
	return func(t *testing.T, root string) {
		t.Helper()
		f, err := os.OpenFile(at(root, p), os.O_WRONLY, 0)
		if err == nil {
			_, err = f.WriteAt([]byte(data), off)
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			t.Fatalf("patch %q: %v", p, err)
		}
	}
}

// patched returns s with data written at off.
func patched(s string, off int, data string) string { return s[:off] + data + s[off+len(data):] }

// testManyFiles: 2,000 files, 1,500 of them in one directory, survive import,
// seals and forks, and a fork's deletions and edits among them are listed
// exactly.
func testManyFiles(h *harness) {
	base := tree{}
	for i := range 1500 {
		base[fmt.Sprintf("flat/f%04d", i)] = file(fmt.Sprintf("flat file %d\n", i))
	}
	v0 := h.importTree(base)
	src := h.activate(v0)
	made := tree{}
	ops := []op{put("tree", dir())}
	for d := range 20 {
		ops = append(ops, put(fmt.Sprintf("tree/d%02d", d), dir()))
		for f := range 25 {
			p := fmt.Sprintf("tree/d%02d/f%02d", d, f)
			made[p] = file(fmt.Sprintf("tree file %d %d\n", d, f))
			ops = append(ops, put(p, made[p]))
		}
	}
	h.do(src, ops...)
	want1 := base.with(made)
	h.check("source with 2,000 files", src, want1)
	fork, v1 := h.fork(src, v0)
	h.check("fork with 2,000 files", fork, want1)
	want2 := want1.with(nil)
	var changes []layer.Change
	for i := 0; i < 1500; i += 3 {
		p := fmt.Sprintf("flat/f%04d", i)
		h.do(fork, remove(p))
		delete(want2, p)
		changes = append(changes, deleted(p, "file", int64(len(base[p].Data))))
	}
	for d := range 20 {
		for f := 0; f < 25; f += 7 {
			p := fmt.Sprintf("tree/d%02d/f%02d", d, f)
			h.do(fork, write(p, "edited\n"))
			want2[p] = file("edited\n")
			changes = append(changes, modified(p, "file", 7, int64(len(made[p].Data))))
		}
	}
	h.check("fork after deleting and editing some", fork, want2)
	h.checkChanges("fork after deleting and editing some", fork, v1, changes)
	h.checkVersion("fork's version", h.seal(fork, v1), want2)
	h.checkVersion("sealed version", v1, want1)
}

// unusualNames are names a backend must store as they are.
var unusualNames = []string{
	"with space", "  leading spaces", "trailing space ", "-leading-dash", "--", "new\nline", "tab\tname",
	"ctrl\x01char", "ünïcødé", "日本語のファイル", "emoji-🍴", "quote'\"", "back\\slash", "star*?[x]",
	".hidden", "..dots", "#hash", "a:b", "%41", "~tilde", strings.Repeat("n", 255),
}

// testUnusualNames: names with spaces, unicode, a leading dash, a newline,
// control characters or 255 bytes survive import, seals and Changes.
func testUnusualNames(h *harness) {
	base := tree{"dir ü -x\n/f -\n": file("inside")}
	for _, n := range unusualNames {
		base[n] = file("imported " + n)
	}
	v0 := h.importTree(base)
	src := h.activate(v0)
	ops := []op{put("made", dir())}
	want := base.with(nil)
	changes := []layer.Change{added("made", "dir", 0)}
	for _, n := range slices.Sorted(slices.Values(unusualNames)) {
		p := "made/" + n
		want[p] = file("made " + n)
		ops = append(ops, put(p, want[p]))
		changes = append(changes, added(p, "file", int64(len(want[p].Data))))
	}
	ops = append(ops, rename("new\nline", "renamed\nline"))
	want = want.without("new\nline").with(tree{"renamed\nline": file("imported new\nline")})
	h.do(src, ops...)
	h.check("source", src, want)
	h.checkChanges("source", src, v0, append(changes[:len(changes):len(changes)],
		deleted("new\nline", "file", 17), added("renamed\nline", "file", 17)))
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("imported version", v0, base)
}

// testFifo: named pipes are stored as pipes (never opened), with their
// modes, and a file replaced by one is a type change to "other".
func testFifo(h *harness) {
	base := tree{"pipe": fifo(0o644), "f": file("file")}
	src := h.source(base)
	v0 := h.importDir(src, false)
	r := h.activate(v0)
	h.do(r, put("pipe2", fifo(0o600)), remove("f"), put("f", fifo(0o640)))
	want := tree{"pipe": fifo(0o644), "pipe2": fifo(0o600), "f": fifo(0o640)}
	h.check("source", r, want)
	h.checkChanges("source", r, v0, []layer.Change{typeChanged("f", "other"), added("pipe2", "other", 0)})
	fork, v1 := h.fork(r, v0)
	h.check("fork", fork, want)
	h.do(fork, remove("pipe"))
	h.check("source after the fork removed a pipe", r, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("imported version", v0, base)
}

// testEmptyFiles: empty files, imported, created or truncated, stay empty
// files with their modes.
func testEmptyFiles(h *harness) {
	base := tree{"empty": file(""), "full": file("content"), "d/empty": fileMode("", 0o600)}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.check("source", src, base)
	h.do(src, put("new-empty", fileMode("", 0o755)), write("full", ""))
	want := base.with(tree{"new-empty": fileMode("", 0o755), "full": file("")})
	h.check("source after creating and truncating", src, want)
	h.checkChanges("source after creating and truncating", src, v0, []layer.Change{
		modified("full", "file", 0, 7), added("new-empty", "file", 0),
	})
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.do(fork, write("empty", "now something"))
	h.check("source after the fork filled a file", src, want)
	h.checkVersion("sealed version", v1, want)
}

// testPermissions: permission bits of files and directories (0600, 0640,
// 0444, executable bits, 0700 and 0711 directories) survive import and
// seals.
func testPermissions(h *harness) {
	base := tree{
		"p600": fileMode("a", 0o600), "p755": fileMode("#!/bin/sh\n", 0o755), "p700": fileMode("b", 0o700),
		"p640": fileMode("c", 0o640), "p444": fileMode("d", 0o444), "p751": fileMode("e", 0o751),
		"p604": fileMode("f", 0o604), "d700": dirMode(0o700), "d700/f": fileMode("g", 0o600),
		"d750": dirMode(0o750), "d711": dirMode(0o711), "d711/x": fileMode("x", 0o755),
	}
	v0 := h.importTree(base)
	src := h.activate(v0)
	h.check("source", src, base)
	h.do(src, put("new600", fileMode("n", 0o600)), put("new755", fileMode("n", 0o755)),
		put("newdir", dirMode(0o700)), put("newdir/x", fileMode("x", 0o711)), chmod("p444", 0o400))
	want := base.with(tree{"new600": fileMode("n", 0o600), "new755": fileMode("n", 0o755),
		"newdir": dirMode(0o700), "newdir/x": fileMode("x", 0o711), "p444": fileMode("d", 0o400)})
	h.check("source after new files", src, want)
	fork, v1 := h.fork(src, v0)
	h.check("fork", fork, want)
	h.checkVersion("sealed version", v1, want)
	h.checkVersion("imported version", v0, base)
}

// checkFile fails unless the regular file p in r's view holds data.
func (h *harness) checkFile(what string, r layer.Run, p, data string) {
	h.t.Helper()
	b, err := os.ReadFile(at(r.View, p))
	if err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
	if string(b) != data {
		h.t.Errorf("%s: %s reads %q, want %q", what, p, b, data)
	}
}
