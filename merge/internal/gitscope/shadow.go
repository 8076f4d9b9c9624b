package gitscope

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/gitcmd"
)

// The shadow repository. A run's repository is the run's: its
// configuration can name a clean filter for every path, a diff or merge
// driver, an fsmonitor or hooks, and git, run by tine as root on the host,
// would run them. So the planner's git never opens the run's git directory:
// it runs with a private one under scratch that has the run's HEAD commit,
// reads the run's objects as an alternate, and copies from the run's what
// says how files are staged and nothing that runs a command: a few
// configuration keys (shadowKeys), info/exclude, info/attributes,
// info/sparse-checkout and shallow. What it copies it reads beneath the
// work tree, through descriptors that follow no symbolic link, so a run
// cannot make tine read another file in their place.

// shadowKeys are the configuration keys a shadow repository takes from the
// run's: each says how git stages or compares files, none runs anything.
var shadowKeys = map[string]bool{
	"core.repositoryformatversion": true, "extensions.objectformat": true,
	"core.filemode": true, "core.symlinks": true, "core.ignorecase": true, "core.precomposeunicode": true,
	"core.protecthfs": true, "core.protectntfs": true, "core.autocrlf": true, "core.eol": true,
	"core.safecrlf": true, "core.checkroundtripencoding": true, "core.bigfilethreshold": true,
	"core.sparsecheckout": true, "core.sparsecheckoutcone": true,
}

// shadowFiles are the files of a git directory a shadow repository copies.
var shadowFiles = []string{"info/exclude", "info/attributes", "info/sparse-checkout", "shallow"}

// makeShadow makes the shadow repository at dir of the repository whose
// git directory is gitDir, beneath the work tree top. Its HEAD names an
// unborn branch: every command the planner runs names its commits.
func makeShadow(ctx context.Context, top, gitDir, dir string) error {
	rel, err := beneath(top, gitDir)
	if err != nil {
		return err
	}
	for _, d := range []string{"refs/heads", "refs/tags", "objects", "info"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return fmt.Errorf("merge: shadow repository: %w", err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "HEAD"), []byte("ref: refs/heads/tine\n"), 0o600); err != nil {
		return fmt.Errorf("merge: shadow repository: %w", err)
	}
	for _, f := range shadowFiles {
		_, err := copyBeneath(top, filepath.Join(rel, f), filepath.Join(dir, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("merge: the run's %s: %w", f, err)
		}
	}
	cfg, err := shadowConfig(ctx, top, filepath.Join(rel, "config"), dir)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "config"), cfg, 0o600)
}

// shadowConfig returns the shadow repository's configuration: shadowKeys as
// the run's configuration file (read beneath top at rel, without the files
// it includes) sets them.
func shadowConfig(ctx context.Context, top, rel, dir string) ([]byte, error) {
	orig := filepath.Join(dir, "run-config")
	_, err := copyBeneath(top, rel, orig)
	if errors.Is(err, fs.ErrNotExist) {
		return []byte("[core]\n\tbare = false\n"), nil
	}
	if err != nil {
		return nil, fmt.Errorf("merge: the run's git configuration: %w", err)
	}
	defer os.Remove(orig)
	out, err := gitcmd.Run(ctx, dir, gitcmd.Env(), nil, nil, "config", "--file", orig, "--no-includes", "-z", "--list")
	if err != nil {
		return nil, fmt.Errorf("merge: read the run's git configuration: %w", err)
	}
	sections := map[string][]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "\n")
		k = strings.ToLower(k)
		if !shadowKeys[k] {
			continue
		}
		sec, name, _ := strings.Cut(k, ".")
		sections[sec] = append(sections[sec], fmt.Sprintf("\t%s = %s\n", name, strconv.Quote(v)))
	}
	var b strings.Builder
	b.WriteString("[core]\n\tbare = false\n")
	b.WriteString(strings.Join(sections["core"], ""))
	if ext := sections["extensions"]; len(ext) > 0 {
		b.WriteString("[extensions]\n" + strings.Join(ext, ""))
	}
	return []byte(b.String()), nil
}

// beneath returns p relative to top, or an error when p is not below it.
func beneath(top, p string) (string, error) {
	rel, err := filepath.Rel(top, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
		return "", fmt.Errorf("merge: the run's git directory %s is outside its work tree %s: git scope plans only a repository inside the workspace", p, top)
	}
	return rel, nil
}

// copyBeneath copies the regular file rel beneath top, opened beneath it
// (fstree.Root: no symbolic link followed on the way, top never left), to
// dst (replaced), and returns what the opened file was.
func copyBeneath(top, rel, dst string) (fs.FileInfo, error) {
	root, err := fstree.OpenRoot(top)
	if err != nil {
		return nil, err
	}
	in, err := root.Open(rel)
	root.Close()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", rel)
	}
	if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return nil, err
	}
	return fi, out.Close()
}
