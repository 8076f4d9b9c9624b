package engine

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/gitcmd"
)

// gitHead returns the commit HEAD names in the git repository at dir, or ""
// when dir is not the top of a repository or has no commit yet. It reads
// the repository's files itself when they are the plain kind (HEAD, the
// loose or packed ref it names): a fork recorded its commit by starting
// git, a few milliseconds of every fork. They are read beneath dir with no
// symbolic link followed (fstree.Root), as every file of a fork is: a
// fork's .git is its own to make hostile. Anything else (a worktree's or
// submodule's .git file, reftables, a ref that is itself symbolic, a link
// on the way) is asked of git.
func gitHead(ctx context.Context, dir string) string {
	fi, err := os.Lstat(filepath.Join(dir, ".git"))
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		if h, ok := readHead(dir); ok {
			return h
		}
	}
	out, err := gitcmd.Run(ctx, dir, nil, nil, nil, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// readHead reads the commit HEAD names from the files of the repository
// at dir, as git rev-parse --verify HEAD would answer: "" for a branch
// with no commit yet. ok is false when the files are not of the plain
// kind readHead knows; git must be asked then.
func readHead(dir string) (head string, ok bool) {
	r, err := fstree.OpenRoot(dir)
	if err != nil {
		return "", false
	}
	defer r.Close()
	if _, err := os.Lstat(filepath.Join(dir, ".git", "reftable")); err == nil {
		return "", false
	}
	b, _, err := r.ReadFileBeneath(".git/HEAD", refMax)
	if err != nil {
		return "", false
	}
	s := strings.TrimSpace(string(b))
	ref, symbolic := strings.CutPrefix(s, "ref: ")
	if !symbolic {
		return s, isObjectName(s)
	}
	if !plainRef(ref) {
		return "", false
	}
	b, _, err = r.ReadFileBeneath(".git/"+ref, refMax)
	switch {
	case err == nil:
		h := strings.TrimSpace(string(b))
		return h, isObjectName(h)
	case !errors.Is(err, fs.ErrNotExist):
		return "", false
	}
	return packedRef(r, ref)
}

// refMax bounds what readHead reads of HEAD or a loose ref; packedMax of
// packed-refs (git's own for a repository with many tags can be large).
const (
	refMax    = 4096
	packedMax = 256 << 20
)

// packedRef looks ref up in the repository's packed-refs: "" and ok when
// it is not there (a branch with no commit yet).
func packedRef(r *fstree.Root, ref string) (string, bool) {
	b, fi, err := r.ReadFileBeneath(".git/packed-refs", packedMax)
	if errors.Is(err, fs.ErrNotExist) {
		return "", true
	}
	if err != nil || fi.Size() > packedMax {
		return "", false
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '^' {
			continue
		}
		h, name, found := strings.Cut(line, " ")
		if found && name == ref {
			return h, isObjectName(h)
		}
	}
	return "", sc.Err() == nil
}

// plainRef reports whether ref is a branch or other ref below refs/ whose
// name can be read as a path below the git directory.
func plainRef(ref string) bool {
	if !strings.HasPrefix(ref, "refs/") || strings.ContainsAny(ref, "\\\x00") {
		return false
	}
	for _, part := range strings.Split(ref, "/") {
		if part == "" || part == "." || part == ".." {
			return false
		}
	}
	return true
}

// isObjectName reports whether s is a full object name: 40 hexadecimal
// digits (SHA-1) or 64 (SHA-256).
func isObjectName(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
