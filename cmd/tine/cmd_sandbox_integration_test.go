//go:build linux

package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/egress/egresstest"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/runtime"
	"golang.org/x/sys/unix"
)

// A normal user's tine exec without the daemon runs in a sandbox of its
// own (a user namespace), not through a supervisor. It used to run the
// command unconfined: a fork's agent could read the store, write the
// user's home and any file the user may write. Now a fork is confined as
// its supervisor would confine it.
func TestExec_SandboxConfinesAFork(t *testing.T) {
	testkit.RequireRoot(t, "making the user's directories and checking them as root")
	ann := asUser(t, "tineuser", filepath.Join(t.TempDir(), "no-daemon.sock"))
	top := publicDir(t)
	os.Chown(top, ann.uid, ann.gid)
	// outside is the user's, but neither below /tmp nor the home (which a
	// fork gets its own of): only Landlock keeps the fork from writing it.
	outside, err := os.MkdirTemp("/srv", "tine-outside-")
	if err != nil {
		t.Skipf("needs a directory outside /tmp and the home: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(outside) })
	ws, state := filepath.Join(top, "ws"), filepath.Join(top, "state")
	for _, d := range []string{ws, outside} {
		os.Mkdir(d, 0o755)
		os.Chown(d, ann.uid, ann.gid)
	}
	for name, content := range map[string]string{"a.txt": "hello\n", ".env": "DB_URL=postgres://secret\n",
		"tine.toml": "[secrets]\nenv = [\"MY_SECRET\"]\nfiles = [\".env\"]\n"} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(filepath.Join(ws, name), ann.uid, ann.gid)
	}
	ann.vars = append(ann.vars, "TINE_HOME="+state, "TINE_NO_DAEMON=1", "MY_SECRET=s3cret")
	ann.ok(ws, "init", "--backend", "copy", ".")
	ann.ok(ws, "fork", "ws/source", "-n", "1")
	planted := filepath.Join(ann.home, ".tine-sandbox-test-"+filepath.Base(top))
	t.Cleanup(func() { os.Remove(planted) })
	script := strings.Join([]string{
		"echo fork >> a.txt",
		"echo x > " + planted,
		"echo y > " + filepath.Join(outside, "f"),
		"echo t > /tmp/" + filepath.Base(top) + "-tmp",
		"cat " + filepath.Join(state, "tine.db") + " > /dev/null && echo READ-STORE",
		`echo "secret:[$MY_SECRET]"; cat .env`,
		"true",
	}, "; ")
	r := ann.tine(ws, nil, "exec", "ws/source-1", "--", "sh", "-c", script)
	if r.code != 0 {
		t.Fatalf("exec in the fork: %v", r)
	}
	if strings.Contains(r.stdout, "READ-STORE") {
		t.Errorf("the fork read the store: %v", r)
	}
	if !strings.Contains(r.stdout, "secret:[]") || strings.Contains(r.stdout, "postgres") {
		t.Errorf("the fork got a declared secret: %v", r)
	}
	if out := ann.ok(ws, "exec", "ws/source", "--", "sh", "-c", `echo "[$MY_SECRET]"; cat .env`); !strings.Contains(out, "[s3cret]") || !strings.Contains(out, "postgres") {
		t.Errorf("the source lost its own secrets: %q", out)
	}
	if _, err := os.Stat(planted); err == nil {
		t.Errorf("the fork wrote the user's home: %s", planted)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err == nil {
		t.Errorf("the fork wrote outside its workspace (Landlock)")
	}
	if _, err := os.Stat("/tmp/" + filepath.Base(top) + "-tmp"); err == nil {
		os.Remove("/tmp/" + filepath.Base(top) + "-tmp")
		t.Errorf("the fork wrote the host's /tmp")
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "hello\n" {
		t.Errorf("the source's file changed: %q", b)
	}
	if d := ann.ok(ws, "diff", "ws/source-1"); !strings.Contains(d, "a.txt") {
		t.Errorf("the fork's own write is not in its diff: %q", d)
	}
	// The source is the user's own: not write-confined (as with a supervisor).
	ann.ok(ws, "exec", "ws/source", "--", "sh", "-c", "echo s > "+filepath.Join(outside, "s"))
	if _, err := os.Stat(filepath.Join(outside, "s")); err != nil {
		t.Errorf("the source could not write where its user may: %v", err)
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// The real claude, run by a normal user in a fork through tine exec
// without the daemon (the sandbox), edits the fork's files under the
// fork's confinement and on the fork's own network (the mock API reached
// through the port ANTHROPIC_BASE_URL names), and its own state
// (~/.claude) stays out of the user's real home: the fork's home layer
// lasts the one command.
func TestExec_SandboxRealClaude(t *testing.T) {
	testkit.RequireRoot(t, "making the user's directories and checking them as root")
	requireClaude(t)
	ann := asUser(t, "tineuser", filepath.Join(t.TempDir(), "no-daemon.sock"))
	mock := answerMock(t)
	top := publicDir(t)
	os.Chown(top, ann.uid, ann.gid)
	ws := filepath.Join(top, "ws")
	os.Mkdir(ws, 0o755)
	os.Chown(ws, ann.uid, ann.gid)
	if err := os.WriteFile(filepath.Join(ws, "README"), []byte("a workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(filepath.Join(ws, "README"), ann.uid, ann.gid)
	ann.vars = append(append(ann.vars, "TINE_HOME="+filepath.Join(top, "state"), "TINE_NO_DAEMON=1"), mock.Env(ann.home)...)
	ann.ok(ws, "init", "--backend", "copy", ".")
	ann.ok(ws, "fork", "ws/source", "-n", "1")
	before, _ := os.ReadDir(filepath.Join(ann.home, ".claude", "projects"))
	r := ann.tine(ws, nil, "exec", "ws/source-1", "--", "claude", "-p", "write the answer to answer.txt",
		"--permission-mode", "acceptEdits", "--output-format", "json")
	if r.code != 0 || len(mock.Conversation()) < 2 {
		t.Fatalf("claude in the sandboxed fork (%d requests): %v", len(mock.Conversation()), r)
	}
	if strings.Contains(r.stderr, "note:") { // it ran on the fork's own network, the mock forwarded
		t.Errorf("claude's fork did not get a network of its own: %v", r)
	}
	if d := ann.ok(ws, "diff", "ws/source-1"); !strings.Contains(d, "answer.txt") {
		t.Errorf("claude's edit is not in the fork: %q", d)
	}
	if _, err := os.Stat(filepath.Join(ws, "answer.txt")); err == nil {
		t.Error("claude's edit reached the source")
	}
	if after, _ := os.ReadDir(filepath.Join(ann.home, ".claude", "projects")); len(after) != len(before) {
		t.Errorf("claude's session reached the user's real home: %d project dirs, %d before", len(after), len(before))
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// A normal user's fork, entered without the daemon, has a network of its
// own held by its egress policy, as it would under its supervisor: the
// host's loopback is reachable only at the port its agent's variable
// names (ANTHROPIC_BASE_URL), the host's address not at all; an allowed
// name resolves (through the policy's resolver, which asks [network]
// resolvers) and connects on its port only; a name off the policy gets
// NXDOMAIN. Each refusal is in tine ps, and nothing is said on stderr.
// The source keeps the host's network. It used to share the host's
// network, unrestricted, with a note saying so.
func TestExec_SandboxNetworkOfItsOwn(t *testing.T) {
	testkit.RequireRoot(t, "running servers on the host's network and the user's tine")
	ann := asUser(t, "tineuser", filepath.Join(t.TempDir(), "no-daemon.sock"))
	host := egresstest.HostAddr(t)
	api, apiConns := egresstest.Pong(t, "127.0.0.1:0")
	hidden, hiddenConns := egresstest.Pong(t, "0.0.0.0:0")
	allowed, _ := egresstest.Pong(t, "0.0.0.0:0")
	dns := egresstest.Upstream(t, func(name string) (string, bool) {
		return host, name == "allowed.test" || name == "other.test"
	})
	top := publicDir(t)
	os.Chown(top, ann.uid, ann.gid)
	ws := filepath.Join(top, "ws")
	os.Mkdir(ws, 0o755)
	os.Chown(ws, ann.uid, ann.gid)
	toml := fmt.Sprintf("[network]\negress = [\"allowed.test:%d\"]\nresolvers = [%q]\n", allowed, dns)
	writeFiles(t, ann, ws, map[string]string{"tine.toml": toml, "hello.py": egresstest.HelloScript, "errno.py": egresstest.ErrnoScript})
	ann.vars = append(ann.vars, "TINE_HOME="+filepath.Join(top, "state"), "TINE_NO_DAEMON=1")
	ann.ok(ws, "init", "--backend", "copy", ".")
	ann.ok(ws, "fork", "ws/source", "-n", "1")
	at := func(h string, port int) string { return net.JoinHostPort(h, strconv.Itoa(port)) }
	hello := func(run string, vars []string, targets ...string) []string {
		t.Helper()
		r := ann.tine(ws, vars, append([]string{"exec", run, "--", "python3", "hello.py"}, targets...)...)
		if r.code != 0 || strings.Contains(r.stderr, "note") {
			t.Fatalf("exec in %s: %v", run, r)
		}
		return strings.Fields(r.stdout)
	}
	got := hello("ws/source-1", []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:" + strconv.Itoa(api)},
		at("127.0.0.1", api), at("127.0.0.1", hidden), at("allowed.test", allowed),
		at("allowed.test", hidden), at(host, hidden), at("other.test", allowed))
	if want := []string{"ok", "refused", "ok", "refused", "refused", "noname"}; !slices.Equal(got, want) {
		t.Errorf("from the fork: %q, want %q", got, want)
	}
	before := apiConns()
	if got := hello("ws/source-1", nil, at("127.0.0.1", api)); !slices.Equal(got, []string{"refused"}) || apiConns() != before {
		t.Errorf("from the fork, with no variable naming the API's port: %q (%d connections), want refused", got, apiConns()-before)
	}
	// Refused at once, as the daemon's rules refuse: TCP at its SYN
	// (ECONNREFUSED, not a connect that is then reset), UDP at its first
	// datagram; both recorded.
	r := ann.tine(ws, nil, "exec", "ws/source-1", "--", "python3", "errno.py", "tcp:"+at(host, hidden), "udp:"+at(host, 9999))
	if got := strings.Fields(r.stdout); r.code != 0 || !slices.Equal(got, []string{"ECONNREFUSED", "EPERM"}) {
		t.Errorf("refused from the fork: %v, want ECONNREFUSED then EPERM", r)
	}
	if n := hiddenConns(); n != 0 {
		t.Errorf("the host's hidden server got %d connections from the fork", n)
	}
	var ps runtime.PS
	ann.okJSON(ws, &ps, "ps", "ws/source-1", "--json")
	var recs []string
	for _, r := range ps.Refused {
		recs = append(recs, fmt.Sprintf("%s %s %s %s:%d", r.Kind, r.Proto, r.Host, r.Addr, r.Port))
	}
	slices.Sort(recs)
	// Each exec records a destination once, with the name that resolved to
	// it in that exec (errno.py's connect to the address had none).
	if want := []string{fmt.Sprintf("connect tcp  %s:%d", host, hidden), fmt.Sprintf("connect tcp allowed.test %s:%d", host, hidden),
		fmt.Sprintf("connect udp  %s:9999", host), "dns  other.test :0"}; !slices.Equal(recs, want) {
		t.Errorf("tine ps records %q, want %q", recs, want)
	}
	if ps.Egress != nil {
		t.Errorf("tine ps shows a policy once no command runs: %+v", ps.Egress)
	}
	// While a command runs, tine ps shows the policy that holds it, as it
	// does a supervisor's.
	done := make(chan result, 1)
	go func() { done <- ann.tine(ws, nil, "exec", "ws/source-1", "--", "sleep", "3") }()
	var line string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline) && line == ""; time.Sleep(50 * time.Millisecond) {
		for _, l := range strings.Split(ann.ok(ws, "ps", "ws/source-1"), "\n") {
			if strings.HasPrefix(l, "egress: only ") {
				line = l
			}
		}
	}
	if want := fmt.Sprintf("allowed.test:%d", allowed); !strings.Contains(line, want) {
		t.Errorf("tine ps while a command runs: egress line %q, want one naming %s", line, want)
	}
	if r := <-done; r.code != 0 {
		t.Errorf("exec sleep: %v", r)
	}
	if got := hello("ws/source", nil, at("127.0.0.1", hidden)); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("from the source: %q, want ok (the host's network)", got)
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// writeFiles writes files (name: content) in dir, as the user's.
func writeFiles(t *testing.T, u *localUser, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chown(filepath.Join(dir, name), u.uid, u.gid)
	}
}

// A fork whose network of its own cannot be set up in the sandbox (here:
// its agent's API at port 53 of the host's loopback, which the sandbox's
// resolver holds) runs in the host's network, and that is never silent:
// one line on stderr, and a record tine ps shows. With [network]
// sandbox_fallback = "refuse" in the source's tine.toml it does not run.
func TestExec_SandboxNetworkFallback(t *testing.T) {
	testkit.RequireRoot(t, "making the user's directories")
	ann, top, ws := sandboxFork(t, map[string]string{"tine.toml": "[network]\n"})
	clash := []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:53"}
	r := ann.tine(ws, clash, "exec", "ws/source-1", "--", "echo", "ran")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "ran" || strings.Count(r.stderr, "the host's network") != 1 {
		t.Fatalf("exec with a network that cannot be set up: %v, want it run and said once", r)
	}
	ps := ann.ok(ws, "ps", "ws/source-1")
	if !strings.Contains(ps, "network: the host's, unrestricted: its own could not be set up (") || !strings.Contains(ps, "53") {
		t.Errorf("tine ps after the fallback:\n%s\nwant a line saying the command ran in the host's network, and why", ps)
	}
	writeFiles(t, ann, ws, map[string]string{"tine.toml": "[network]\nsandbox_fallback = \"refuse\"\n"})
	r = ann.tine(ws, clash, "exec", "ws/source-1", "--", "echo", "ran")
	if r.code != 126 || strings.Contains(r.stdout, "ran") || !strings.Contains(r.stderr, `sandbox_fallback = "refuse"`) {
		t.Errorf("exec with sandbox_fallback = \"refuse\": %v, want 126 and nothing run", r)
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// TestExec_SandboxHomeWithAMountBelow: a user whose home has a mount
// below it (a workspace the daemon mounted there, an sshfs) cannot get a
// home of the fork's own in the sandbox (the mount is locked in the
// user's namespace, and overlayfs refuses the home as its lower layer):
// tine exec fails (126) with one line naming the mount and what to do,
// not overlayfs's "invalid argument".
func TestExec_SandboxHomeWithAMountBelow(t *testing.T) {
	testkit.RequireRoot(t, "mounting below the user's home")
	ann := asUser(t, "tineuser", filepath.Join(t.TempDir(), "no-daemon.sock"))
	top := publicDir(t)
	os.Chown(top, ann.uid, ann.gid)
	ws, state := filepath.Join(top, "ws"), filepath.Join(top, "state")
	os.Mkdir(ws, 0o755)
	os.Chown(ws, ann.uid, ann.gid)
	below := filepath.Join(ann.home, ".tine-test-mount-"+filepath.Base(top))
	if err := os.Mkdir(below, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(below) })
	if err := unix.Mount("tmpfs", below, "tmpfs", 0, "size=64k"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Unmount(below, unix.MNT_DETACH) })
	ann.vars = append(ann.vars, "TINE_HOME="+state, "TINE_NO_DAEMON=1")
	ann.ok(ws, "init", "--backend", "copy", ".")
	ann.ok(ws, "fork", "ws/source", "-n", "1")
	r := ann.tine(ws, nil, "exec", "ws/source-1", "--", "true")
	if r.code != 126 || !strings.Contains(r.stderr, "has a mount below it ("+below+")") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 1 {
		t.Errorf("exec in a fork with a mount below the home: %v", r)
	}
}

// The sandbox has no pid namespace of its own: before its Landlock scope,
// a fork's command could signal every process of its user's (kill the
// person's editor, shell, the source's dev server) and saw them in /proc.
// Now a fork signals only what it started; the source still reaches the
// user's own processes.
func TestExec_SandboxForkSignalsOnlyItsOwn(t *testing.T) {
	testkit.RequireRoot(t, "starting a process as the user")
	if a := confine.Probe(confine.Spec{Scoped: true}); !a.Scoped {
		t.Skipf("needs Landlock scopes: %v", a.Unavailable)
	}
	ann, top, ws := sandboxFork(t, nil)
	editor := exec.Command("sleep", "300") // a process of the user's, outside every run
	editor.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
	if err := editor.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { editor.Process.Kill(); editor.Wait() })
	script := fmt.Sprintf("kill -0 %d && echo REACHED; sleep 30 & kill $! && echo OWN-KILLED", editor.Process.Pid)
	r := ann.tine(ws, nil, "exec", "ws/source-1", "--", "sh", "-c", script)
	if r.code != 0 || strings.Contains(r.stdout, "REACHED") || !strings.Contains(r.stdout, "OWN-KILLED") {
		t.Errorf("a fork signalling its user's process outside it, then its own: %v, want the first refused, the second done", r)
	}
	if out := ann.ok(ws, "exec", "ws/source", "--", "sh", "-c", fmt.Sprintf("kill -0 %d && echo REACHED", editor.Process.Pid)); !strings.Contains(out, "REACHED") {
		t.Errorf("the source could not signal its user's own process: %q", out)
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// tine ps shows a command running in tine exec's sandbox, what it is
// confined by and the host ports it reaches, as it does a supervisor's run (it showed the fork
// "stopped", and nothing of its confinement); once it ends, neither.
func TestExec_SandboxShownByPs(t *testing.T) {
	testkit.RequireRoot(t, "making the user's directories")
	ann, top, ws := sandboxFork(t, nil)
	done := make(chan result, 1)
	api := []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:18123"} // an agent's API on the host's loopback
	go func() { done <- ann.tine(ws, api, "exec", "ws/source-1", "--", "sleep", "5") }()
	var ps string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ps = ann.ok(ws, "ps", "ws/source-1"); strings.Contains(ps, "confined:") {
			break
		}
	}
	for _, want := range []string{"1 command(s) in tine exec's sandbox", "landlock ABI", "seccomp", "sleep 5", "host ports: 18123"} {
		if !strings.Contains(ps, want) {
			t.Errorf("tine ps while the fork's command runs in the sandbox:\n%s\nwant %q", ps, want)
		}
	}
	if confine.Probe(confine.Spec{Scoped: true}).Scoped && !strings.Contains(ps, "signals and abstract sockets only within the run") {
		t.Errorf("tine ps does not say the sandbox's signals are scoped:\n%s", ps)
	}
	if r := <-done; r.code != 0 {
		t.Fatalf("exec: %v", r)
	}
	if ps := ann.ok(ws, "ps", "ws/source-1"); strings.Contains(ps, "confined:") || strings.Contains(ps, "sandbox") || strings.Contains(ps, "host ports") {
		t.Errorf("tine ps after the command ended:\n%s\nwant neither the command, its confinement nor its host ports", ps)
	}
	// A tine exec killed (its command dies with it) leaves its records:
	// tine ps showed the fork confined, its policy and host ports, as if
	// a command still ran.
	killed := exec.Command(ann.bin, "exec", "ws/source-1", "--", "sleep", "30")
	killed.Dir, killed.Env = ws, append(append([]string{}, ann.vars...), api...)
	killed.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
	if err := killed.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !strings.Contains(ann.ok(ws, "ps", "ws/source-1"), "host ports"); {
		time.Sleep(100 * time.Millisecond)
	}
	killed.Process.Kill()
	killed.Wait()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ps = ann.ok(ws, "ps", "ws/source-1"); !strings.Contains(ps, "sandbox") {
			break
		}
	}
	if strings.Contains(ps, "sandbox") || strings.Contains(ps, "confined:") || strings.Contains(ps, "host ports") || strings.Contains(ps, "egress: only") {
		t.Errorf("tine ps after its tine exec was killed:\n%s\nwant nothing of the command left", ps)
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// A fork's egress preset opens its ecosystem's registry (registry.npmjs.org
// for a package.json), which is where npm publishes too: with the owner's
// ~/.npmrc token readable, an agent in a fork could publish a package, an
// external effect no person approved. The registries' credential files are
// secrets by default now; inherit = ["~/.npmrc"] keeps one, as written.
func TestExec_SandboxForkGetsNoRegistryToken(t *testing.T) {
	testkit.RequireRoot(t, "writing the user's ~/.npmrc")
	ann := asUser(t, "tineuser", filepath.Join(t.TempDir(), "no-daemon.sock"))
	npmrc := filepath.Join(ann.home, ".npmrc")
	if _, err := os.Lstat(npmrc); err == nil {
		t.Skipf("%s exists: not overwriting the user's own", npmrc)
	}
	if err := os.WriteFile(npmrc, []byte("//registry.npmjs.org/:_authToken=npm_SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(npmrc, ann.uid, ann.gid)
	t.Cleanup(func() { os.Remove(npmrc) })
	top, ws := sandboxForkOf(t, ann, map[string]string{"package.json": "{}\n"})
	read := []string{"exec", "ws/source-1", "--", "sh", "-c", "cat ~/.npmrc; echo end"}
	if r := ann.tine(ws, nil, read...); r.code != 0 || strings.Contains(r.stdout, "npm_SECRET") || !strings.Contains(r.stdout, "end") {
		t.Errorf("a fork reading its owner's ~/.npmrc: %v, want it empty", r)
	}
	if out := ann.ok(ws, "exec", "ws/source", "--", "cat", npmrc); !strings.Contains(out, "npm_SECRET") {
		t.Errorf("the source lost its owner's ~/.npmrc: %q", out)
	}
	writeFiles(t, ann, ws, map[string]string{"tine.toml": "[secrets]\ninherit = [\"~/.npmrc\"]\n"})
	if r := ann.tine(ws, nil, read...); !strings.Contains(r.stdout, "npm_SECRET") {
		t.Errorf("a fork of a source that inherits ~/.npmrc: %v, want the token", r)
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// sandboxFork is tineuser without the daemon (tine exec's sandbox), with a
// workspace ws of files (copy backend, a state directory of their own in
// top) and one fork of it, ws/source-1.
func sandboxFork(t *testing.T, files map[string]string) (ann *localUser, top, ws string) {
	t.Helper()
	ann = asUser(t, "tineuser", filepath.Join(t.TempDir(), "no-daemon.sock"))
	top, ws = sandboxForkOf(t, ann, files)
	return ann, top, ws
}

// sandboxForkOf is sandboxFork for ann, made already.
func sandboxForkOf(t *testing.T, ann *localUser, files map[string]string) (top, ws string) {
	t.Helper()
	top = publicDir(t)
	os.Chown(top, ann.uid, ann.gid)
	ws = filepath.Join(top, "ws")
	os.Mkdir(ws, 0o755)
	os.Chown(ws, ann.uid, ann.gid)
	writeFiles(t, ann, ws, files)
	ann.vars = append(ann.vars, "TINE_HOME="+filepath.Join(top, "state"), "TINE_NO_DAEMON=1")
	ann.ok(ws, "init", "--backend", "copy", ".")
	ann.ok(ws, "fork", "ws/source", "-n", "1")
	return top, ws
}

// The real codex, run by a normal user in a fork through tine exec without
// the daemon (the sandbox), as the user's own codex configuration has it
// (its model provider's base_url, no API variable) and with its own
// sandbox asked for (workspace-write): it reaches the mock model through
// the fork's network of its own, and its command fixes the fork's file.
// Codex's sandbox (bubblewrap) cannot start in a confined fork: every
// command of codex's failed ("bwrap: setting up uid map: Read-only file
// system") while codex said "fixed app.txt" and exited 0, the fork
// unchanged. tine runs it with danger-full-access there, and says so.
func TestExec_SandboxRealCodex(t *testing.T) {
	testkit.RequireRoot(t, "making the user's directories and checking them as root")
	cx := newCodexEnv(t)
	ann, top, ws := sandboxFork(t, map[string]string{"app.txt": "status BUG\n"})
	// The user's CODEX_HOME in their home (a fork's /tmp is its own).
	home := filepath.Join(ann.home, ".codex-tine-test-"+filepath.Base(top))
	cfg, err := os.ReadFile(filepath.Join(cx.home, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	os.Mkdir(home, 0o700)
	t.Cleanup(func() { os.RemoveAll(home) })
	os.Chown(home, ann.uid, ann.gid)
	writeFiles(t, ann, home, map[string]string{"config.toml": string(cfg)})
	vars := []string{"CODEX_HOME=" + home, "TINE_MOCK_OPENAI_KEY=mock"}
	asked := []string{"exec", "ws/source-1", "--", "codex", "exec", "--skip-git-repo-check", "--sandbox", "workspace-write", "fix app.txt"}
	if r := ann.tine(ws, vars, asked...); !strings.Contains(r.stderr, "each of its commands will fail") {
		t.Errorf("codex with a sandbox of its own asked for in the fork: %v, want told its commands will fail", r)
	}
	r := ann.tine(ws, vars, "exec", "ws/source-1", "--", "codex", "exec", "--skip-git-repo-check", "fix app.txt")
	if r.code != 0 || len(cx.mock.Requests()) < 4 {
		t.Fatalf("codex in the sandboxed fork (%d requests to the mock): %v", len(cx.mock.Requests()), r)
	}
	if strings.Contains(r.stderr, "network") || !strings.Contains(r.stderr, `codex runs with sandbox_mode="danger-full-access"`) {
		t.Errorf("codex in the fork: %v, want it on the fork's own network, and told it runs without its own sandbox", r)
	}
	if d := ann.ok(ws, "diff", "ws/source-1"); !strings.Contains(d, "app.txt") {
		reqs := cx.mock.Requests()
		t.Errorf("codex's fix is not in the fork: %q\n%v\nits command's output: %+v", d, r, reqs[len(reqs)-1].ToolOutputs())
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "app.txt")); string(b) != "status BUG\n" {
		t.Errorf("codex's fix reached the source: %q", b)
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// A sign-in refreshed by an agent in a fork in tine exec's sandbox, whose
// home layer lasts the one command, was lost with it, and the person
// signed out at their next refresh: it reaches the user's home while the
// command runs.
func TestExec_SandboxRefreshedSignInReachesTheHome(t *testing.T) {
	testkit.RequireRoot(t, "writing the user's sign-ins")
	ann, top, ws := sandboxFork(t, nil)
	claudeFile, _ := plantSignIns(t, ann)
	r := ann.tine(ws, nil, "exec", "ws/source-1", "--", "sh", "-c", save("~/.claude/.credentials.json", claude("rt-new", 2000))+" && sleep 5")
	if r.code != 0 {
		t.Fatalf("exec: %v", r)
	}
	if b, _ := os.ReadFile(claudeFile); !strings.Contains(string(b), "rt-new") {
		t.Errorf("claude's sign-in in the home after a sandboxed fork refreshed it: %s", b)
	}
	if uidOf(t, claudeFile) != ann.uid {
		t.Error("the carried sign-in is not the user's")
	}
	ann.ok(top, "release", "--unmerged", ws)
}

// TestExec_SandboxRunsAsTheUser: a normal user's tine exec without the
// daemon runs the command as the user's own uid and gid, in the source
// and in a fork, as it does through the system daemon; the files the user
// owns are theirs inside, and the command holds no capability. Before,
// it ran as uid 0 of a user namespace of its own (pip, initdb and ssh
// behaved differently than under the daemon).
func TestExec_SandboxRunsAsTheUser(t *testing.T) {
	testkit.RequireRoot(t, "making the user's directories")
	ann := asUser(t, "tineuser", filepath.Join(t.TempDir(), "no-daemon.sock"))
	top := publicDir(t)
	os.Chown(top, ann.uid, ann.gid)
	ws := filepath.Join(top, "ws")
	os.Mkdir(ws, 0o755)
	os.Chown(ws, ann.uid, ann.gid)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("a\n"), 0o644)
	os.Chown(filepath.Join(ws, "a.txt"), ann.uid, ann.gid)
	ann.vars = append(ann.vars, "TINE_HOME="+filepath.Join(top, "state"), "TINE_NO_DAEMON=1")
	ann.ok(ws, "init", "--backend", "copy", ".")
	ann.ok(ws, "fork", "ws/source", "-n", "1")
	want := fmt.Sprintf("%d %d %d 0000000000000000\n", ann.uid, ann.gid, ann.uid)
	for _, run := range []string{"ws/source", "ws/source-1"} {
		out := ann.ok(ws, "exec", run, "--", "sh", "-c", `echo "$(id -u) $(id -g) $(stat -c %u a.txt) $(grep CapEff /proc/self/status | cut -f2)"`)
		if out != want {
			t.Errorf("tine exec %s as uid %d: id -u, id -g, a.txt's owner, capabilities: %q, want %q", run, ann.uid, out, want)
		}
	}
	ann.ok(top, "release", "--unmerged", ws)
}
