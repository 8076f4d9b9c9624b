//go:build linux

package main

// Helpers of the end-to-end test: the tine and tine-controller binaries
// built once, a state directory per tine, a fleet node, a repository to
// give tasks.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/mnt"
	"github.com/tinehq/tine/internal/testkit"
	"golang.org/x/sys/unix"
)

// The binaries TestMain builds: this package's and tine, whose nodes run
// the tasks the controller queues.
var controllerBin, tineBin string

// rootWhy says why the tests need root: a fleet node mounts its tasks'
// workspaces.
const rootWhy = "a fleet node mounts its tasks' workspaces (overlay backend)"

func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run()) // every end-to-end test skips: see rootWhy
	}
	dir, err := os.MkdirTemp("", "tine-controller-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	controllerBin, tineBin = filepath.Join(dir, "tine-controller"), filepath.Join(dir, "tine")
	if err := testkit.Build(map[string]string{controllerBin: ".", tineBin: "../tine"}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// environ is this process's environment without what would make tine or
// git behave differently from one machine to the next, with extra.
func environ(extra ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "TINE_HOME" || k == "TINE_STORE_URL" || k == "TINE_FLEET_URL" || k == "KUBECONFIG" || strings.HasPrefix(k, "GIT_") {
			continue
		}
		out = append(out, kv)
	}
	return append(out, append([]string{"LC_ALL=C", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}, extra...)...)
}

// result is what one command did.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("%s: exit %d\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// runBin runs bin with args in environment env and waits for it.
func runBin(t *testing.T, env []string, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: append([]string{filepath.Base(bin)}, args...), stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", r.args, err)
	}
	return r
}

// startDaemon runs bin with args in environment env until the test ends,
// its output in a log file whose path it returns; at the end it is
// stopped with SIGTERM and its log shown if the test failed.
func startDaemon(t *testing.T, env []string, bin string, args ...string) string {
	t.Helper()
	log := filepath.Join(t.TempDir(), filepath.Base(bin)+".log")
	logf, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-done:
		case <-time.After(40 * time.Second):
			cmd.Process.Kill()
			err = <-done
		}
		if err != nil || t.Failed() {
			b, _ := os.ReadFile(log)
			t.Logf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, b)
		}
	})
	return log
}

// startNode runs tine serve --node name on a state directory of its own,
// on the fleet's PostgreSQL url, and waits until it takes tasks.
func startNode(t *testing.T, url, name string, args ...string) {
	t.Helper()
	home := canonicalPath(t, t.TempDir())
	// After the node stopped (cleanups run last first): its workspaces
	// are below its state directory's parent (HOME-tasks).
	t.Cleanup(func() { unmountBelow(t, filepath.Dir(home)) })
	env := environ("TINE_HOME="+home, "TINE_STORE_URL="+url)
	log := startDaemon(t, env, tineBin, append([]string{"serve", "--node", name, "--heartbeat", "300ms"}, args...)...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(log)
		if strings.Contains(string(b), "taking up to") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s did not start:\n%s", name, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unmountBelow unmounts what a node left mounted below dir, last mounted
// first.
func unmountBelow(t *testing.T, dir string) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Error(err)
		return
	}
	infos, err := mnt.ParseInfo(f)
	f.Close()
	if err != nil {
		t.Error(err)
		return
	}
	for _, in := range slices.Backward(infos) {
		if in.Point == dir || strings.HasPrefix(in.Point, dir+"/") {
			if err := unix.Unmount(in.Point, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				t.Errorf("unmount %s: %v", in.Point, err)
			}
		}
	}
}

func canonicalPath(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// fleetRepo makes a git repository with one commit and returns its path
// and the commit.
func fleetRepo(t *testing.T) (string, string) {
	t.Helper()
	dir := filepath.Join(canonicalPath(t, t.TempDir()), "repo")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, environ()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main", ".")
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", "a.txt")
	git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
	return dir, git("rev-parse", "HEAD")
}

// agentCmd is the tasks' command agent: it commits a file named after
// its fork and leaves another uncommitted, so the winner has both a
// commit and a change.
const agentCmd = `echo "fork $TINE_FORK_INDEX" > "f$TINE_FORK_INDEX.txt" && git add . &&
	git -c user.name=a -c user.email=a@a commit -qm "fork $TINE_FORK_INDEX" && echo more > "g$TINE_FORK_INDEX.txt"`
