//go:build linux

package main

// Helpers of the end-to-end tests in cli_integration_test.go: the tine
// binary built once, a per-test environment (state directory, workspaces,
// mount cleanup), a tree walker that records what a path holds, and
// "oracle" copies of a workspace on which the same shell scripts run as
// plain files, to say what every view must hold.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

// The binaries TestMain builds: tine, and the tree walker of testdata/walk
// (run on the host and, through tine exec, inside runs).
var tineBin, walkBin string

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run()) // every test skips: see requireRoot
	}
	dir, err := os.MkdirTemp("", "tine-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tineBin, walkBin = filepath.Join(dir, "tine"), filepath.Join(dir, "walk")
	if err := testkit.Build(map[string]string{tineBin: ".", walkBin: "./testdata/walk"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// rootWhy says why this package's tests need root: the overlay backend
// mounts, the generated workspaces hold files of another owner, and the
// tests unmount views to simulate a reboot.
const rootWhy = "the overlay backend mounts, the workspaces hold files of another owner, and reboots are simulated with umount"

// env is one test's tine: its own state directory and workspaces.
type env struct {
	t    *testing.T
	home string   // TINE_HOME
	tmp  string   // the test's temporary root; every mount of the test is below it
	vars []string // environment of every command
	ws   []string // workspaces to release at cleanup
}

// newEnv makes a state directory and registers a cleanup that releases the
// test's workspaces and unmounts whatever is left below its temp dirs, so a
// failing test never leaves mounts behind.
func newEnv(t *testing.T) *env {
	t.Helper()
	home := canonicalPath(t, t.TempDir())
	e := &env{t: t, home: home, tmp: filepath.Dir(home)}
	e.vars = testEnviron("TINE_HOME=" + home)
	t.Cleanup(e.cleanup)
	return e
}

// testEnviron is this process's environment without anything that would
// make tine or git behave differently from one machine to the next.
func testEnviron(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TINE_HOME" || k == "TINE_STORE_URL" || k == "PWD" || strings.HasPrefix(k, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, append([]string{"LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}, extra...)...)
}

func (e *env) cleanup() {
	for _, ws := range e.ws {
		e.tine("release", "--unmerged", ws)
	}
	if err := unmountBelow(e.tmp); err != nil {
		e.t.Errorf("cleanup: %v", err)
	}
}

// workspaceDir returns a new, empty directory to manage, released at cleanup.
func (e *env) workspaceDir(name string) string {
	e.t.Helper()
	dir := filepath.Join(canonicalPath(e.t, e.t.TempDir()), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	e.ws = append(e.ws, dir)
	return dir
}

func canonicalPath(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// result is what one command did.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("tine %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.code, clip(r.stdout), clip(r.stderr))
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// call says how to run one tine command.
type call struct {
	dir   string   // working directory ("" = the test's)
	stdin []byte   // standard input
	vars  []string // extra environment
}

// run runs tine with args as c says.
func (e *env) run(c call, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, tineBin, args...)
	cmd.Env = append(slices.Clone(e.vars), c.vars...)
	cmd.Dir = c.dir
	if c.dir != "" {
		cmd.Env = append(cmd.Env, "PWD="+c.dir)
	}
	cmd.Stdin = bytes.NewReader(c.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		e.t.Fatalf("tine %v: %v", args, err)
	}
	if ctx.Err() != nil {
		e.t.Fatalf("tine %v: timed out", args)
	}
	return r
}

// tine runs a command from the test's working directory.
func (e *env) tine(args ...string) result {
	e.t.Helper()
	return e.run(call{}, args...)
}

// ok runs a command that must succeed and returns its standard output.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	r := e.tine(args...)
	if r.code != 0 {
		e.t.Fatalf("%v", r)
	}
	return r.stdout
}

// okJSON runs a command that must succeed and decodes its output into v.
func (e *env) okJSON(v any, args ...string) {
	e.t.Helper()
	out := e.ok(args...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		e.t.Fatalf("tine %v: decoding %q: %v", args, clip(out), err)
	}
}

// path returns where the host reads run's files.
func (e *env) path(run string) string {
	e.t.Helper()
	return strings.TrimSpace(e.ok("path", run))
}

// walkIn snapshots root as seen inside run, through tine exec.
func (e *env) walkIn(run, root string) tree {
	e.t.Helper()
	r := e.tine("exec", run, "--", walkBin, root)
	if r.code != 0 {
		e.t.Fatalf("walking %s inside %s: %v", root, run, r)
	}
	tr, err := parseTree(r.stdout)
	if err != nil {
		e.t.Fatalf("walking %s inside %s: %v", root, run, err)
	}
	return tr
}

// execSh runs a shell script inside run, starting at the workspace path.
func (e *env) execSh(run, script string) string {
	e.t.Helper()
	r := e.tine("exec", run, "--", "sh", "-c", shPrelude+script)
	if r.code != 0 {
		if strings.Contains(r.stderr, "Read-only file system") {
			e.t.Logf("a read-only file system in %s; what may say why:\n%s", run, readOnlyClues(e.home))
		}
		e.t.Fatalf("%v", r)
	}
	return r.stdout
}

// readOnlyClues are the kernel's last overlayfs messages and the host's
// mounts below home (which holds the runs' views), for a test that met a
// read-only file system where it should not have: CI met one once in a
// fork's exec, not seen again.
func readOnlyClues(home string) string {
	var b strings.Builder
	if out, err := exec.Command("dmesg").Output(); err == nil {
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "overlay") {
				lines = append(lines, l)
			}
		}
		b.WriteString(strings.Join(lines[max(0, len(lines)-8):], "\n") + "\n")
	}
	if mi, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(mi), "\n") {
			if strings.Contains(l, filepath.Dir(home)) {
				b.WriteString(l + "\n")
			}
		}
	}
	return b.String()
}

// shPrelude makes every script behave alike on the host and in a run.
const shPrelude = "set -e; umask 022; "

// hostSh runs a shell script in dir on the host, as plain files.
func hostSh(t *testing.T, dir, script string) string {
	t.Helper()
	return hostCmd(t, dir, "sh", "-c", shPrelude+script)
}

// hostCmd runs a command on the host and returns its standard output.
func hostCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = testEnviron("PWD=" + dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v in %s: %v\n%s", args, dir, err, stderr.String())
	}
	return string(out)
}

// oracle copies dir (cp -a: modes, owners, times, hard links) into a new
// temporary directory: plain files on which scripts run to say what a view
// must hold.
func oracle(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "oracle")
	hostCmd(t, "/", "cp", "-a", dir, dst)
	return dst
}

// gitStatus is git's short status of the repository at the working
// directory, untracked files listed one by one, without refreshing the
// index (which would write .git/index).
var gitStatus = []string{"git", "--no-optional-locks", "status", "--porcelain", "--untracked-files=all"}

func sortedLines(s string) []string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	sort.Strings(lines)
	return lines
}

// ---- trees ----

// entry is what testdata/walk records of one path.
type entry struct {
	Type  string // file, dir, symlink or other
	Mode  uint32 // permission bits with setuid, setgid and sticky
	Size  int64  // as tine diff counts: bytes of files and link targets
	Data  string // SHA-256 of a file, target of a symlink
	UID   uint32
	GID   uint32
	MTime int64
	Ino   uint64
	Nlink uint64
	Rdev  uint64
}

// tree maps slash-separated paths relative to the root ("." is the root)
// to entries.
type tree map[string]entry

// walkHost runs testdata/walk on root on the host.
func walkHost(t *testing.T, root string, args ...string) tree {
	t.Helper()
	out := hostCmd(t, "/", append(append([]string{walkBin}, args...), root)...)
	tr, err := parseTree(out)
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	return tr
}

// parseTree reads testdata/walk's output: a line per path, its quoted
// name, then the entry's fields, tab-separated.
func parseTree(out string) (tree, error) {
	tr := tree{}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 11 {
			return nil, fmt.Errorf("bad line %q", line)
		}
		p, err := strconv.Unquote(f[0])
		if err != nil {
			return nil, fmt.Errorf("bad line %q: %w", line, err)
		}
		var n [8]uint64 // mode, size, uid, gid, mtime, ino, nlink, rdev
		for i, s := range append(f[2:4:4], f[5:]...) {
			if i == 4 {
				var m int64
				m, err = strconv.ParseInt(s, 10, 64)
				n[i] = uint64(m)
			} else {
				n[i], err = strconv.ParseUint(s, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("bad line %q: %w", line, err)
			}
		}
		data, err := strconv.Unquote(f[4])
		if err != nil {
			return nil, fmt.Errorf("bad line %q: %w", line, err)
		}
		tr[p] = entry{Type: f[1], Mode: uint32(n[0]), Size: int64(n[1]), Data: data, UID: uint32(n[2]), GID: uint32(n[3]),
			MTime: int64(n[4]), Ino: n[5], Nlink: n[6], Rdev: n[7]}
	}
	return tr, nil
}

// mustSnapshot records everything root holds, on the host.
func mustSnapshot(t *testing.T, root string) tree {
	t.Helper()
	return walkHost(t, root)
}

// compareOpts says what beyond type, mode, owner and content must match.
type compareOpts struct {
	times bool // modification times of everything but the root
	links bool // hard link groups
}

// treeDiffs describes how got differs from want, one line per path.
func treeDiffs(want, got tree, o compareOpts) []string {
	var out []string
	for _, p := range unionPaths(want, got) {
		w, inW := want[p]
		g, inG := got[p]
		switch {
		case !inW:
			out = append(out, fmt.Sprintf("%s: unexpected %s", p, g.Type))
		case !inG:
			out = append(out, fmt.Sprintf("%s: missing %s", p, w.Type))
		default:
			if d := entryDiff(w, g, o.times && p != "."); d != "" {
				out = append(out, p+": "+d)
			}
		}
	}
	if o.links {
		if w, g := linkGroups(want), linkGroups(got); !slices.Equal(w, g) {
			out = append(out, fmt.Sprintf("hard links: want %q, got %q", w, g))
		}
	}
	return out
}

func entryDiff(w, g entry, times bool) string {
	var d []string
	add := func(what string, wv, gv any) { d = append(d, fmt.Sprintf("%s %v, want %v", what, gv, wv)) }
	if w.Type != g.Type {
		add("type", w.Type, g.Type)
	}
	if w.Mode != g.Mode {
		add("mode", strconv.FormatUint(uint64(w.Mode), 8), strconv.FormatUint(uint64(g.Mode), 8))
	}
	if w.UID != g.UID || w.GID != g.GID {
		add("owner", fmt.Sprintf("%d:%d", w.UID, w.GID), fmt.Sprintf("%d:%d", g.UID, g.GID))
	}
	if w.Data != g.Data || w.Size != g.Size {
		add("content", fmt.Sprintf("%.16s (%d bytes)", w.Data, w.Size), fmt.Sprintf("%.16s (%d bytes)", g.Data, g.Size))
	}
	if w.Rdev != g.Rdev {
		add("rdev", w.Rdev, g.Rdev)
	}
	if times && w.MTime != g.MTime {
		add("mtime", time.Unix(0, w.MTime).UTC().Format(time.RFC3339Nano), time.Unix(0, g.MTime).UTC().Format(time.RFC3339Nano))
	}
	return strings.Join(d, "; ")
}

func unionPaths(a, b tree) []string {
	var paths []string
	for p := range a {
		paths = append(paths, p)
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	return paths
}

// linkGroups lists the sets of paths that are one file, each as a joined string.
func linkGroups(tr tree) []string {
	byIno := map[uint64][]string{}
	for p, e := range tr {
		if e.Type != "dir" && e.Nlink > 1 {
			byIno[e.Ino] = append(byIno[e.Ino], p)
		}
	}
	var out []string
	for _, ps := range byIno {
		if len(ps) > 1 {
			sort.Strings(ps)
			out = append(out, strings.Join(ps, "="))
		}
	}
	sort.Strings(out)
	return out
}

// requireSameTree fails the test when got differs from want.
func requireSameTree(t *testing.T, what string, want, got tree, o compareOpts) {
	t.Helper()
	if d := treeDiffs(want, got, o); len(d) > 0 {
		if len(d) > 25 {
			d = append(d[:25], fmt.Sprintf("... and %d more", len(d)-25))
		}
		t.Errorf("%s differs from what it should hold (%d paths):\n  %s", what, len(d), strings.Join(d, "\n  "))
	}
}

// change mirrors one element of tine diff --json.
type change struct {
	Path    string `json:"path"`
	Kind    string `json:"kind"`
	Type    string `json:"type"`
	Size    int64  `json:"size"`
	OldSize int64  `json:"old_size"`
}

// expectedChanges is what tine diff must list between two trees: a path on
// one side only is added or deleted, a changed type is type_changed, a
// changed mode, content or link target is modified. Sorted by path.
func expectedChanges(before, after tree) []change {
	out := []change{}
	for _, p := range unionPaths(before, after) {
		if p == "." {
			continue
		}
		b, inB := before[p]
		a, inA := after[p]
		switch {
		case !inB:
			out = append(out, change{p, "added", a.Type, a.Size, 0})
		case !inA:
			out = append(out, change{p, "deleted", b.Type, 0, b.Size})
		case a.Type != b.Type:
			out = append(out, change{p, "type_changed", a.Type, a.Size, b.Size})
		case a.Mode != b.Mode || a.Data != b.Data || a.Rdev != b.Rdev:
			out = append(out, change{p, "modified", a.Type, a.Size, b.Size})
		}
	}
	return out
}

// ---- generated workspaces ----

// makeRepo fills dir with a git repository: n small text files in nested
// directories, binary files, symlinks (to a file, to a directory,
// dangling), an executable script, a private file owned by someone else, an
// empty directory, two hard links and an ignored file; everything but the
// empty directory and the ignored file is committed. The repository is
// made once per size (its one commit written by git fast-import, straight
// into a pack) and copied with cp -a after that. makeRepo returns that
// template, which must not be changed, and its tree.
func makeRepo(t *testing.T, dir string, n int) (string, tree) {
	t.Helper()
	repoMu.Lock()
	defer repoMu.Unlock()
	tmpl, ok := repoTemplates[n]
	if !ok {
		tmpl.dir = filepath.Join(filepath.Dir(tineBin), fmt.Sprintf("repo-%d", n))
		if err := os.Mkdir(tmpl.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := makeFiles(t, tmpl.dir, n)
		hostCmd(t, tmpl.dir, "git", "init", "-q")
		importCommit(t, tmpl.dir, files)
		hostCmd(t, tmpl.dir, "git", "reset", "-q") // the index, from the commit
		tmpl.tree = mustSnapshot(t, tmpl.dir)
		repoTemplates[n] = tmpl
	}
	hostCmd(t, "/", "cp", "-a", "-T", tmpl.dir, dir)
	return tmpl.dir, tmpl.tree
}

var (
	repoMu        sync.Mutex
	repoTemplates = map[int]struct {
		dir  string
		tree tree
	}{}
)

// importCommit commits files (git mode and path, sorted) of the working
// tree at dir as master's first commit, with git fast-import.
func importCommit(t *testing.T, dir string, files []gitFile) {
	t.Helper()
	var in bytes.Buffer
	in.WriteString("commit refs/heads/master\ncommitter t <t@t> 1700000000 +0000\ndata 8\ninitial\n")
	for _, f := range files {
		var data []byte
		var err error
		if f.mode == "120000" {
			var target string
			target, err = os.Readlink(filepath.Join(dir, f.path))
			data = []byte(target)
		} else {
			data, err = os.ReadFile(filepath.Join(dir, f.path))
		}
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&in, "M %s inline %s\ndata %d\n", f.mode, f.path, len(data))
		in.Write(data)
		in.WriteString("\n")
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir, cmd.Env, cmd.Stdin = dir, testEnviron(), &in
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git fast-import: %v\n%s", err, out)
	}
	hostCmd(t, dir, "git", "symbolic-ref", "HEAD", "refs/heads/master")
}

// gitFile is one path to commit and its git mode.
type gitFile struct{ path, mode string }

// makeFiles writes makeRepo's files, without git, and returns those to commit.
func makeFiles(t *testing.T, dir string, n int) []gitFile {
	t.Helper()
	var files []gitFile
	rng := rand.New(rand.NewSource(int64(n)))
	w := func(p, data string, mode os.FileMode) {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
		gm := "100644"
		if mode&0o100 != 0 {
			gm = "100755"
		}
		files = append(files, gitFile{p, gm})
	}
	for i := range n {
		p := fmt.Sprintf("d%02d/s%d/f%04d.txt", i/100, (i/10)%10, i)
		w(p, fmt.Sprintf("file %d at %s\n%s\n", i, p, strings.Repeat("x", i%97)), 0o644)
	}
	w("README.md", "# generated repository\n", 0o644)
	w("run.sh", "#!/bin/sh\necho run\n", 0o755)
	w(".gitignore", "*.log\n", 0o644)
	w("private.txt", "secret\n", 0o600)
	for i := range 4 {
		b := make([]byte, 1024<<i)
		rng.Read(b)
		b[0] = 0
		w(fmt.Sprintf("bin/blob%d.bin", i), string(b), 0o644)
	}
	w("hard-a.txt", "one inode, two names\n", 0o644)
	files = append(files, gitFile{"hard-b.txt", "100644"})
	for _, l := range []struct{ target, name string }{{"README.md", "link-readme"}, {"d00", "linkdir"}, {"does/not/exist", "dangling"}} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Fatal(err)
		}
		files = append(files, gitFile{l.name, "120000"})
	}
	for _, err := range []error{
		os.WriteFile(filepath.Join(dir, "build.log"), []byte("ignored\n"), 0o644),
		os.Chown(filepath.Join(dir, "private.txt"), 1234, 1234),
		os.Link(filepath.Join(dir, "hard-a.txt"), filepath.Join(dir, "hard-b.txt")),
		os.Mkdir(filepath.Join(dir, "empty"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	slices.SortFunc(files, func(a, b gitFile) int { return strings.Compare(a.path, b.path) })
	return files
}

// ---- state and mounts ----

// mountLines returns the lines of /proc/self/mountinfo whose mount point is
// at or below dir.
func mountLines(dir string) []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && fstree.Within(mnt.Unescape(f[4]), dir) {
			out = append(out, line)
		}
	}
	return out
}

// mountPoints returns the mount points at or below dir, in mount order.
func mountPoints(dir string) []string {
	var out []string
	for _, line := range mountLines(dir) {
		out = append(out, mnt.Unescape(strings.Fields(line)[4]))
	}
	return out
}

// unmountBelow unmounts everything at or below dir, last mounted first,
// as a reboot would leave it.
func unmountBelow(dir string) error {
	for range 100 {
		mps := mountPoints(dir)
		if len(mps) == 0 {
			return nil
		}
		mp := mps[len(mps)-1]
		if err := unix.Unmount(mp, 0); err != nil {
			// The detached trash emptier a release or discard starts may
			// unmount mp between our reading and our unmounting it.
			if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
				continue
			}
			if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s: %w", mp, err)
			}
		}
	}
	return fmt.Errorf("mounts below %s keep coming back", dir)
}

// unmount unmounts exactly mp (each mount stacked there).
func unmount(t *testing.T, mp string) {
	t.Helper()
	for slices.Contains(mountPoints(mp), mp) {
		if err := unix.Unmount(mp, 0); err != nil {
			t.Fatalf("unmount %s: %v", mp, err)
		}
	}
}

// stateSnap is everything an error must leave as it was.
type stateSnap struct {
	ls, tree string   // tine ls --all --json, tine tree --json
	files    []string // every path under the state directory, with its type
	mounts   []string // mountinfo lines below the test's temp root
}

func (e *env) state() stateSnap {
	e.t.Helper()
	e.waitTrashEmptied()
	s := stateSnap{ls: e.ok("ls", "--all", "--json"), tree: e.ok("tree", "--json"), mounts: mountLines(e.tmp)}
	for p, ent := range walkHost(e.t, e.home, "-names") {
		if !strings.HasPrefix(p, "tine.db") {
			s.files = append(s.files, p+" "+ent.Type)
		}
	}
	sort.Strings(s.files)
	return s
}

// waitTrashEmptied waits, up to 30 s, for the detached "tine gc --trash"
// that a release or discard starts to empty the trash: it runs on its
// own, so a snapshot taken while it works would see the trash shrink. A
// trash that never empties is left for the snapshot to show.
func (e *env) waitTrashEmptied() {
	trash := filepath.Join(e.home, "trash")
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if ents, err := os.ReadDir(trash); err != nil || len(ents) == 0 {
			return
		}
	}
}

// requireSameState fails when the state changed between two snapshots.
func requireSameState(t *testing.T, what string, before, after stateSnap) {
	t.Helper()
	if before.ls != after.ls {
		t.Errorf("%s: tine ls --all --json changed (lines only before -, only after +):\n%s", what, jsonLineDiff(before.ls, after.ls))
	}
	if before.tree != after.tree {
		t.Errorf("%s: tine tree --json changed (lines only before -, only after +):\n%s", what, jsonLineDiff(before.tree, after.tree))
	}
	if d := lineDiff(before.files, after.files); d != "" {
		t.Errorf("%s: the state directory changed:\n%s", what, d)
	}
	if d := lineDiff(before.mounts, after.mounts); d != "" {
		t.Errorf("%s: mounts changed:\n%s", what, d)
	}
}

// jsonLineDiff is lineDiff of two JSON documents' trimmed lines.
func jsonLineDiff(a, b string) string {
	split := func(s string) []string {
		var out []string
		for _, l := range strings.Split(s, "\n") {
			out = append(out, strings.TrimSpace(l))
		}
		return out
	}
	return lineDiff(split(a), split(b))
}

// lineDiff lists lines only in a (-) and only in b (+).
func lineDiff(a, b []string) string {
	inA, inB := map[string]bool{}, map[string]bool{}
	for _, l := range a {
		inA[l] = true
	}
	for _, l := range b {
		inB[l] = true
	}
	var out []string
	for _, l := range a {
		if !inB[l] {
			out = append(out, "- "+l)
		}
	}
	for _, l := range b {
		if !inA[l] {
			out = append(out, "+ "+l)
		}
	}
	return strings.Join(out, "\n")
}

// requireOneLineError checks the form of every failing tine command: one
// line on standard error, starting "tine:" (a JSON object under --json),
// and the documented status.
func requireOneLineError(t *testing.T, r result, code int) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit status %d, want %d\n%v", r.code, code, r)
	}
	msg := strings.TrimSuffix(r.stderr, "\n")
	if !strings.HasPrefix(msg, "tine: ") && !(slices.Contains(r.args, "--json") && strings.HasPrefix(msg, `{"error":`)) || strings.Contains(msg, "\n") {
		t.Errorf("stderr should be one line starting \"tine: \", got %q", r.stderr)
	}
	if r.stdout != "" {
		t.Errorf("stdout should be empty on error, got %q", r.stdout)
	}
}

// ---- JSON of the CLI ----

type jsonWorkspace struct {
	ID      string `json:"id"`
	Name    string `json:"name"`
	Path    string `json:"path"`
	Backend string `json:"backend"`
}

type jsonRun struct {
	ID         string `json:"id"`
	Workspace  string `json:"workspace"`
	Name       string `json:"name"`
	Parent     string `json:"parent"`
	Role       string `json:"role"`
	State      string `json:"state"`
	Base       string `json:"base"`
	Origin     string `json:"origin"`
	Group      string `json:"group"`
	Approach   string `json:"approach"`
	GitHead    string `json:"git_head"`
	Resolution string `json:"resolution"`
}

type jsonVersion struct {
	ID        string   `json:"id"`
	Workspace string   `json:"workspace"`
	Parent    string   `json:"parent"`
	Run       string   `json:"run"`
	Kind      string   `json:"kind"`
	Label     string   `json:"label"`
	Layers    []string `json:"layers"`
}

type jsonGroup struct {
	ID        string `json:"id"`
	Workspace string `json:"workspace"`
	Parent    string `json:"parent"`
	Version   string `json:"version"`
}

// jsonInit is tine init --json. (Its keys are capitalised, unlike every
// other command's; encoding/json matches them case-insensitively.)
type jsonInit struct {
	Workspace jsonWorkspace `json:"workspace"`
	Run       jsonRun       `json:"run"`
}

type jsonFork struct {
	Parent  jsonRun     `json:"parent"`
	Group   jsonGroup   `json:"group"`
	Version jsonVersion `json:"version"`
	Forks   []jsonRun   `json:"forks"`
}

type jsonRollback struct {
	Run   jsonRun     `json:"run"`
	To    jsonVersion `json:"to"`
	Saved jsonVersion `json:"saved"`
}

type jsonLsRow struct {
	WorkspaceName string `json:"workspace_name"`
	jsonRun
	ParentName string `json:"parent_name"`
	Path       string `json:"path"`
	Processes  string `json:"processes"`
}

type jsonState struct {
	Workspace jsonWorkspace `json:"workspace"`
	Runs      []jsonRun     `json:"runs"`
	Versions  []jsonVersion `json:"versions"`
	Groups    []jsonGroup   `json:"groups"`
}

type jsonEvent struct {
	Seq       int64           `json:"seq"`
	Time      time.Time       `json:"time"`
	Workspace string          `json:"workspace"`
	Run       string          `json:"run"`
	Kind      string          `json:"kind"`
	Detail    json.RawMessage `json:"detail"`
}

func (e *env) ls(args ...string) []jsonLsRow {
	e.t.Helper()
	var rows []jsonLsRow
	e.okJSON(&rows, append([]string{"ls", "--json"}, args...)...)
	return rows
}

func (e *env) treeState(ws string) jsonState {
	e.t.Helper()
	var states []jsonState
	e.okJSON(&states, "tree", "--json", ws)
	if len(states) != 1 {
		e.t.Fatalf("tine tree --json %s: %d workspaces", ws, len(states))
	}
	return states[0]
}

func (e *env) events(run string) []jsonEvent {
	e.t.Helper()
	var evs []jsonEvent
	e.okJSON(&evs, "log", run, "--json")
	return evs
}

func (e *env) changes(run string) []change {
	e.t.Helper()
	var cs []change
	e.okJSON(&cs, "diff", run, "--json")
	return cs
}

// requireChanges compares tine diff --json with the expected changes.
func requireChanges(t *testing.T, what string, want, got []change) {
	t.Helper()
	if !slices.Equal(want, got) {
		var w, g []string
		for _, c := range want {
			w = append(w, fmt.Sprint(c))
		}
		for _, c := range got {
			g = append(g, fmt.Sprint(c))
		}
		t.Errorf("%s: tine diff --json differs:\n%s", what, lineDiff(w, g))
	}
}

func runByName(runs []jsonRun, name string) jsonRun {
	for _, r := range runs {
		if r.Name == name {
			return r
		}
	}
	return jsonRun{}
}
