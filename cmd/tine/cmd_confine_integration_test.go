//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// From inside a fork: the state directory (the store, other runs) and
// other workspaces are not visible; /tmp and the home are the fork's own
// (written there, not on the host); writes anywhere else but the workspace
// fail (Landlock), even as root; denied system calls
// fail with EPERM and the shell goes on; root there cannot manage the
// fork's network (CAP_NET_ADMIN, with which it could delete its egress
// rules, is gone). The source is not write-limited.
// tine ps says what the fork is confined by.
func TestConfine_ForkIsABoundary(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"f": "x\n", "connect.py": connectPy})
	// A service of the host's listening in /run, as systemd's, D-Bus's and
	// docker's do: reaching it from a fork has the host act for the fork.
	sock := serveUnix(t, "/run/tine-confine-test.sock")
	// A file of the host's outside every writable path, whose mode, owner
	// and times a fork must not change (Landlock limits writes, not those).
	meta := "/opt/tine-confine-meta"
	if err := os.WriteFile(meta, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(meta) })
	before, err := os.Stat(meta)
	if err != nil {
		t.Fatal(err)
	}
	other := e.workspaceDir("other")
	if err := os.WriteFile(filepath.Join(other, "secret.txt"), []byte("another project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.ok("init", other)
	e.ok("fork", "live/source")
	e.ok("start", "live/source-1")
	// The fork's own records (its supervisor's files), here below /tmp,
	// where its Landlock rules reach.
	run := e.ps("live/source-1").Run
	records := filepath.Join(e.home, "workspaces", run.Workspace, "runs", run.ID, "sup", "confinement.json")
	if _, err := os.Stat(records); err != nil {
		t.Fatalf("the fork's records: %v", err)
	}
	script := `
echo '{}' > ` + records + ` 2>/dev/null && echo records-written || echo records-readonly
test -e ` + e.home + `/tine.db && echo store-visible || echo store-hidden
ls -A ` + other + ` | grep -q secret.txt && echo other-visible || echo other-hidden
echo y > f && echo ws-write-ok
echo y > /tmp/tine-confine-test && echo tmp-write-ok
echo planted >> "$HOME/.tine-confine-planted" && echo home-write-ok
echo y > /var/tmp/tine-confine-test && echo vartmp-write-ok
echo y > /etc/tine-confine-test 2>/dev/null && echo etc-write-ok || echo etc-write-refused
dmesg -S >/dev/null 2>&1 && echo dmesg-ok || echo dmesg-refused
{ test ! -e /dev/kmsg || [ "$(stat -c %t:%T /dev/kmsg)" = "$(stat -c %t:%T /dev/null)" ]; } && echo kmsg-hidden || echo kmsg-visible
ls /dev | grep -qE '^(loop|vd|sd|nvme|console$|tty[0-9])' && echo host-devices-visible || echo host-devices-hidden
echo y > /dev/shm/tine-confine-test && echo shm-write-ok
head -c 4 /dev/urandom | wc -c | tr -d ' '
echo ok > /dev/null && echo null-ok
mount -t tmpfs t /mnt 2>/dev/null && echo mount-ok || echo mount-refused
echo $$ > /sys/fs/cgroup/freezer/cgroup.procs 2>/dev/null && echo cgroup-escaped || echo cgroup-escape-refused
python3 connect.py ` + sock + `
chmod 4755 ` + meta + ` 2>/dev/null && echo chmod-ok || echo chmod-refused
chown 1:1 ` + meta + ` 2>/dev/null && echo chown-ok || echo chown-refused
touch -d 2000-01-01 ` + meta + ` 2>/dev/null && echo touch-ok || echo touch-refused
chmod 4755 /run/tine/bin/tine 2>/dev/null && echo bin-chmod-ok || echo bin-chmod-refused
test -s /etc/shadow && echo shadow-visible || echo shadow-hidden
chmod 600 f && echo ws-chmod-ok
cp /bin/true ./t && chmod 4755 ./t 2>/dev/null && echo setuid-ok || echo setuid-refused
ip addr add 10.9.9.9/32 dev lo 2>/dev/null && echo netadmin-ok || echo netadmin-refused
ip link set lo down 2>/dev/null && echo lo-down || echo lo-down-refused
echo still-here`
	got := strings.Fields(e.execSh("live/source-1", script))
	want := []string{"records-readonly", "store-hidden", "other-hidden", "ws-write-ok", "tmp-write-ok", "home-write-ok", "vartmp-write-ok", "etc-write-refused", "dmesg-refused", "kmsg-hidden",
		"host-devices-hidden", "shm-write-ok", "4", "null-ok", "mount-refused", "cgroup-escape-refused",
		"host-socket-unreachable", "chmod-refused", "chown-refused", "touch-refused", "bin-chmod-refused", "shadow-hidden", "ws-chmod-ok", "setuid-refused", "netadmin-refused", "lo-down-refused", "still-here"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("inside the fork:\n got %q\nwant %q", got, want)
	}
	for _, p := range []string{"/tmp/tine-confine-test", "/var/tmp/tine-confine-test", "/etc/tine-confine-test", "/dev/shm/tine-confine-test"} {
		if _, err := os.Stat(p); err == nil {
			os.Remove(p)
			t.Errorf("the fork's write to %s reached the host", p)
		}
	}
	if after, err := os.Stat(meta); err != nil || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the fork changed %s: %v, %v (was %v, %v)", meta, after.Mode(), after.ModTime(), before.Mode(), before.ModTime())
	}
	home, _ := os.UserHomeDir()
	if _, err := os.Stat(filepath.Join(home, ".tine-confine-planted")); err == nil {
		os.Remove(filepath.Join(home, ".tine-confine-planted"))
		t.Error("the fork's write to its home reached the owner's")
	}
	ps := e.ps("live/source-1")
	if c := ps.Confinement; c == nil || c.Landlock == 0 || !c.Seccomp || len(c.Hidden) < 2 {
		t.Errorf("tine ps says the fork is confined by %+v", ps.Confinement)
	}
	if c := ps.Confinement; c == nil || c.OtherWorkspaces != 1 {
		t.Errorf("other workspaces hidden: %+v, want 1", ps.Confinement)
	}
	// It says how many other workspaces it hides, never where they are
	// (another user's, through the daemon).
	// The fork has a network of its own, with the default egress policy.
	if out := e.ok("ps", "live/source-1"); !strings.Contains(out, "confined: ") || !strings.Contains(out, "landlock ABI") || strings.Contains(out, other) ||
		!strings.Contains(out, "egress: only api.anthropic.com:443") {
		t.Errorf("tine ps:\n%s", out)
	}
	// The source: the state directory hidden too, but its writes and its
	// host's services are its own.
	src := strings.Fields(e.execSh("live/source", `python3 connect.py `+sock+`
test -e `+e.home+`/tine.db && echo store-visible || echo store-hidden
touch /var/tmp/tine-confine-src && rm /var/tmp/tine-confine-src && echo var-write-ok`))
	if strings.Join(src, " ") != "host-socket-reached store-hidden var-write-ok" {
		t.Errorf("inside the source: %q", src)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "f")); string(b) != "x\n" {
		t.Errorf("the fork's write reached the source: %q", b)
	}
}

// A fork cannot loosen its own boundary by writing its tine.toml: at its
// next start it is confined by its source's file. Before, [confine] off
// in the fork's own file dropped Landlock, seccomp and the hidden state
// directory at its next start.
func TestConfine_AForkCannotLoosenItsOwnBoundary(t *testing.T) {
	e, _ := liveWorkspace(t, false, map[string]string{"f": "x\n"})
	e.ok("fork", "live/source")
	e.ok("start", "live/source-1")
	e.execSh("live/source-1", `printf '[confine]\noff = true\n[network]\nfork_egress = "open"\n' > tine.toml`)
	e.ok("stop", "live/source-1")
	e.ok("start", "live/source-1")
	got := strings.Fields(e.execSh("live/source-1", `test -e `+e.home+`/tine.db && echo store-visible || echo store-hidden
echo y > /etc/tine-loosen-test 2>/dev/null && echo etc-write-ok || echo etc-write-refused`))
	os.Remove("/etc/tine-loosen-test")
	if strings.Join(got, " ") != "store-hidden etc-write-refused" {
		t.Errorf("after the fork wrote [confine] off into its own tine.toml: %q", got)
	}
	if c := e.ps("live/source-1").Confinement; c == nil || c.Landlock == 0 || !c.Seccomp {
		t.Errorf("tine ps says the fork is confined by %+v", c)
	}
}

// connectPy connects to the unix socket $1 and says whether the listener
// answered.
const connectPy = `import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(3)
try:
    s.connect(sys.argv[1])
    print("host-socket-reached" if s.recv(16) == b"hello" else "host-socket-silent")
except OSError:
    print("host-socket-unreachable")
`

// serveUnix serves "hello" on a unix socket at path until the test ends.
func serveUnix(t *testing.T, path string) string {
	t.Helper()
	os.Remove(path)
	serveGreeting(t, "unix", path, "hello")
	t.Cleanup(func() { os.Remove(path) })
	return path
}
