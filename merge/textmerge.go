package merge

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/tinehq/tine/internal/gitcmd"
	"github.com/tinehq/tine/merge/internal/plan"
)

// Limits of what counts as a text file for a line-wise merge.
const (
	textSniffBytes = 8 << 10 // bytes examined for a NUL
	textMaxBytes   = 8 << 20 // larger files are never merged
)

// sqliteMagic starts every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// textMerge plans a path whose three versions are regular files: a
// line-wise merge staged under the scratch directory when all three are text
// and the edits do not overlap, a conflict otherwise.
func (p *fsPlanner) textMerge(e Entry, s sides) (Entry, error) {
	for _, f := range []struct {
		v  *plan.View
		fi fs.FileInfo
	}{{p.base, s.base}, {p.theirs, s.theirs}, {p.ours, s.ours}} {
		ok, err := isTextFile(f.v, e.Path, f.fi)
		if err != nil || !ok {
			return conflict(e, "changed in both (not text: never merged line-wise)"), err
		}
	}
	mode, ok := mergeModes(plan.Perm(s.base), plan.Perm(s.theirs), plan.Perm(s.ours))
	if !ok {
		return conflict(e, "permission bits changed differently in both"), nil
	}
	merged, clean, err := p.diff3(e.Path)
	if err != nil || !clean {
		return conflict(e, "overlapping text changes"), err
	}
	if err := os.Chmod(merged, mode); err != nil {
		return e, fmt.Errorf("text merge: %w", err)
	}
	fi, err := os.Lstat(merged)
	if err != nil {
		return e, fmt.Errorf("text merge: %w", err)
	}
	e.Action, e.Source, e.SourceRoot, e.Bytes = TextMerged, merged, "", fi.Size()
	return e, nil
}

// isTextFile reports whether the regular file rel of v (described by fi)
// may be merged line-wise: small, no NUL in its first bytes, not a
// database.
func isTextFile(v *plan.View, rel string, fi fs.FileInfo) (bool, error) {
	if fi.Size() >= textMaxBytes {
		return false, nil
	}
	f, err := openPlainFile(v, rel)
	if err != nil {
		return false, fmt.Errorf("text merge: %w", err)
	}
	defer f.Close()
	name := f.Name()
	head := make([]byte, textSniffBytes)
	n, err := io.ReadFull(f, head)
	if err != nil && err != io.EOF && err != io.ErrUnexpectedEOF {
		return false, fmt.Errorf("text merge: read %s: %w", name, err)
	}
	head = head[:n]
	return !bytes.HasPrefix(head, []byte(sqliteMagic)) && bytes.IndexByte(head, 0) < 0, nil
}

// mergeModes merges permission bits three-way: a side that kept base's
// bits yields to the other. ok is false when both changed them differently.
func mergeModes(base, theirs, ours fs.FileMode) (fs.FileMode, bool) {
	switch {
	case theirs == base:
		return ours, true
	case ours == base, ours == theirs:
		return theirs, true
	}
	return 0, false
}

// diff3 merges the three versions of rel with git merge-file into a new
// file under the scratch directory. clean is false when edits overlap.
func (p *fsPlanner) diff3(rel string) (merged string, clean bool, err error) {
	if p.textDir == "" {
		if p.textDir, err = os.MkdirTemp(p.opt.Scratch, "text-merge-"); err != nil {
			return "", false, fmt.Errorf("text merge: %w", err)
		}
	}
	p.texts++
	work := filepath.Join(p.textDir, strconv.Itoa(p.texts))
	if err := os.Mkdir(work, 0o700); err != nil {
		return "", false, fmt.Errorf("text merge: %w", err)
	}
	defer os.RemoveAll(filepath.Join(work, "in"))
	in, err := p.textInputs(rel, filepath.Join(work, "in"))
	if err != nil {
		return "", false, err
	}
	merged = filepath.Join(work, "merged")
	clean, err = gitMergeFile(p, in, merged)
	return merged, clean, err
}

// textInputs copies the ours, base and theirs versions of rel into dir and
// returns their paths in that order (the order git merge-file wants).
func (p *fsPlanner) textInputs(rel, dir string) ([]string, error) {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("text merge: %w", err)
	}
	var out []string
	for _, v := range []struct {
		name string
		view *plan.View
	}{{"target", p.ours}, {"base", p.base}, {"run", p.theirs}} {
		dst := filepath.Join(dir, v.name)
		if err := copyPlainFile(v.view, rel, dst); err != nil {
			return nil, fmt.Errorf("text merge: %w", err)
		}
		out = append(out, dst)
	}
	return out, nil
}

// gitMergeFile runs git merge-file on in (ours, base, theirs), writing the
// result to out. It reports clean when no edits overlapped.
func gitMergeFile(p *fsPlanner, in []string, out string) (bool, error) {
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return false, fmt.Errorf("text merge: %w", err)
	}
	defer f.Close()
	var stderr bytes.Buffer
	args := append([]string{"merge-file", "-p", "--diff3",
		"-L", "target", "-L", "base", "-L", "run"}, in...)
	// In the scratch directory, where git finds no repository above, with
	// tine's configuration.
	cmd := gitcmd.Command(p.ctx, filepath.Dir(out), gitcmd.Env("GIT_CEILING_DIRECTORIES="+filepath.Dir(out)), nil, args...)
	cmd.Stdout, cmd.Stderr = f, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return true, f.Close()
	case errors.As(err, &exit) && exit.ExitCode() > 0 && exit.ExitCode() < 128:
		return false, nil
	}
	return false, fmt.Errorf("text merge: git merge-file: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
}

// openPlainFile opens the regular file rel of v, beneath v's root
// (View.Open): anything else there by now is an error.
func openPlainFile(v *plan.View, rel string) (*os.File, error) {
	f, err := v.Open(rel)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is no longer a regular file", v.At(rel))
	}
	return f, nil
}

// copyPlainFile copies the bytes of the regular file rel of v to the new
// file dst.
func copyPlainFile(v *plan.View, rel, dst string) error {
	in, err := openPlainFile(v, rel)
	if err != nil {
		return err
	}
	defer in.Close()
	src := in.Name()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Close()
}
