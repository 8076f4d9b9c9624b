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

	"github.com/tinehq/tine/internal/gitcmd"
)

// gitHead returns the commit HEAD names in the git repository at dir, or ""
// when dir is not the top of a repository or has no commit yet. It reads
// the repository's files itself when they are the plain kind (HEAD, the
// loose or packed ref it names): a fork recorded its commit by starting
// git, a few milliseconds of every fork. Anything else (a worktree's or
// submodule's .git file, reftables, a ref that is itself symbolic) is
// asked of git.
func gitHead(ctx context.Context, dir string) string {
	fi, err := os.Lstat(filepath.Join(dir, ".git"))
	if err != nil {
		return ""
	}
	if fi.IsDir() {
		if h, ok := readHead(filepath.Join(dir, ".git")); ok {
			return h
		}
	}
	out, err := gitcmd.Run(ctx, dir, nil, nil, nil, "rev-parse", "--verify", "-q", "HEAD")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// readHead reads the commit HEAD names from the files of the git
// directory gitdir, as git rev-parse --verify HEAD would answer: "" for a
// branch with no commit yet. ok is false when the files are not of the
// plain kind readHead knows; git must be asked then.
func readHead(gitdir string) (head string, ok bool) {
	if _, err := os.Lstat(filepath.Join(gitdir, "reftable")); err == nil {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(gitdir, "HEAD"))
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
	b, err = os.ReadFile(filepath.Join(gitdir, filepath.FromSlash(ref)))
	switch {
	case err == nil:
		h := strings.TrimSpace(string(b))
		return h, isObjectName(h)
	case !errors.Is(err, fs.ErrNotExist):
		return "", false
	}
	return packedRef(gitdir, ref)
}

// packedRef looks ref up in gitdir's packed-refs: "" and ok when it is
// not there (a branch with no commit yet).
func packedRef(gitdir, ref string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(gitdir, "packed-refs"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", true
	}
	if err != nil {
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
