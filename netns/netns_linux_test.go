package netns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"

	"github.com/tinehq/tine/internal/testkit"
)

// rootWhy says why this package's tests need root.
const rootWhy = "network namespaces, veth pairs and nftables"

func randHex(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// testConfig returns a Config with a bridge, subnet and nftables table of
// its own, created by EnsureBridge and removed when the test ends.
func testConfig(tb testing.TB) Config {
	tb.Helper()
	testkit.RequireRoot(tb, rootWhy)
	var r [2]byte
	rand.Read(r[:])
	suffix := randHex(6)
	cfg := Config{
		Bridge: "tinet" + suffix,
		Subnet: netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 200 + r[0]%30, r[1], 0}), 24),
		Table:  "tinet" + suffix,
	}
	tb.Cleanup(func() {
		if err := RemoveBridge(cfg); err != nil {
			tb.Error(err)
		}
		if err := RemoveNAT(cfg); err != nil && !errors.Is(err, ErrNAT) {
			tb.Error(err)
		}
	})
	if err := EnsureBridge(cfg); err != nil {
		tb.Fatal(err)
	}
	return cfg
}

// newNS starts a sleeping process in a new network namespace, killed when
// the test ends, and returns its pid. The namespace exists from the clone on,
// so there is no window where the pid still shares the host's.
func newNS(tb testing.TB) int {
	tb.Helper()
	cmd := exec.Command("sleep", "1000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// runName returns a run name unique to this test, detached when it ends.
func runName(tb testing.TB) string {
	name := "t" + randHex(10)
	tb.Cleanup(func() { Detach(name) })
	return name
}

// hasLink reports whether the host has a link called name.
func hasLink(t *testing.T, name string) bool {
	t.Helper()
	_, err := netlink.LinkByName(name)
	if err != nil && !errors.As(err, new(netlink.LinkNotFoundError)) {
		t.Fatal(err)
	}
	return err == nil
}

// inNS runs a command in pid's network namespace and returns its output.
func inNS(pid int, args ...string) (string, error) {
	args = append([]string{"-t", strconv.Itoa(pid), "-n", "--"}, args...)
	out, err := exec.Command("nsenter", args...).CombinedOutput()
	return string(out), err
}

// attach allocates an address in cfg avoiding used, and attaches pid.
func attach(t *testing.T, cfg Config, pid int, used ...netip.Addr) (string, netip.Addr) {
	t.Helper()
	addr, err := Allocate(cfg, used)
	if err != nil {
		t.Fatal(err)
	}
	name := runName(t)
	if err := Attach(cfg, pid, name, addr); err != nil {
		t.Fatal(err)
	}
	return name, addr
}

func TestEnsureBridge_Idempotent(t *testing.T) {
	cfg := testConfig(t) // the first call
	if err := EnsureBridge(cfg); err != nil {
		t.Fatal(err)
	}
	br, err := netlink.LinkByName(cfg.Bridge)
	if err != nil {
		t.Fatal(err)
	}
	if br.Type() != "bridge" || br.Attrs().Flags&net.FlagUp == 0 {
		t.Fatalf("%s: type %s flags %v", cfg.Bridge, br.Type(), br.Attrs().Flags)
	}
	addrs, err := netlink.AddrList(br, netlink.FAMILY_V4)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("%s/24", cfg.Gateway())
	if len(addrs) != 1 || addrs[0].IPNet.String() != want {
		t.Fatalf("bridge addresses %v, want just %s", addrs, want)
	}
}

func TestEnsureBridge_NotABridge(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	name := "tinet" + randHex(6)
	attrs := netlink.NewLinkAttrs()
	attrs.Name = name
	veth := &netlink.Veth{LinkAttrs: attrs, PeerName: "tinep" + randHex(6)}
	if err := netlink.LinkAdd(veth); err != nil {
		t.Fatal(err)
	}
	defer netlink.LinkDel(veth)
	if err := EnsureBridge(Config{Bridge: name}); err == nil {
		t.Fatal("EnsureBridge accepted a veth as its bridge")
	}
	if err := RemoveBridge(Config{Bridge: name}); err == nil || !hasLink(t, name) {
		t.Fatalf("RemoveBridge deleted a veth: %v", err)
	}
}

func TestAttach_TwoRuns(t *testing.T) {
	cfg := testConfig(t)
	pidA, pidB := newNS(t), newNS(t)
	nameA, addrA := attach(t, cfg, pidA)
	nameB, addrB := attach(t, cfg, pidB, addrA)
	if addrA == addrB {
		t.Fatalf("both runs got %s", addrA)
	}
	t.Run("Addr", func(t *testing.T) {
		checkAddr(t, pidA, addrA)
		checkAddr(t, pidB, addrB)
	})
	t.Run("Ping", func(t *testing.T) {
		for _, a := range []netip.Addr{addrA, addrB} {
			if err := ping(a); err != nil {
				t.Errorf("ping %s: %v", a, err)
			}
		}
	})
	t.Run("SamePort", func(t *testing.T) {
		serve(t, pidA, "run A")
		serve(t, pidB, "run B")
		expectBody(t, addrA, "run A")
		expectBody(t, addrB, "run B")
		runToRun(t, pidA, addrB, "run B")
		forwardInto(t, pidA, "run A")
	})
	t.Run("Links", func(t *testing.T) {
		checkLinks(t, cfg, []string{HostName(nameA), HostName(nameB)}, nil)
	})
	t.Run("Detach", func(t *testing.T) {
		if err := Detach(nameA); err != nil {
			t.Fatal(err)
		}
		if hasLink(t, HostName(nameA)) {
			t.Fatal("host veth survived Detach")
		}
		if out, err := inNS(pidA, "ip", "link", "show", "eth0"); err == nil {
			t.Fatalf("namespace still has eth0:\n%s", out)
		}
		checkAddr(t, pidB, addrB)
		checkLinks(t, cfg, []string{HostName(nameB)}, []string{HostName(nameA)})
		if err := Detach(nameA); err != nil {
			t.Fatalf("second Detach: %v", err)
		}
	})
}

// checkAddr checks pid's eth0 address through Addr and through ip(8).
func checkAddr(t *testing.T, pid int, want netip.Addr) {
	t.Helper()
	got, err := Addr(pid)
	if err != nil || got != want {
		t.Errorf("Addr(%d) = %v, %v; want %s", pid, got, err, want)
	}
	out, err := inNS(pid, "ip", "-4", "addr", "show", "dev", "eth0")
	if err != nil || !strings.Contains(out, "inet "+want.String()+"/24") {
		t.Errorf("ip -4 addr in %d: %v\n%s", pid, err, out)
	}
	out, err = inNS(pid, "ip", "-4", "route", "show", "default")
	if err != nil || !strings.Contains(out, "default via") {
		t.Errorf("ip route in %d: %v\n%s", pid, err, out)
	}
}

// checkLinks checks that Links lists every name in in and none in out.
func checkLinks(t *testing.T, cfg Config, in, out []string) {
	t.Helper()
	links, err := Links(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range in {
		if !slices.Contains(links, n) {
			t.Errorf("Links() = %v, missing %s", links, n)
		}
	}
	for _, n := range out {
		if slices.Contains(links, n) {
			t.Errorf("Links() = %v, still has %s", links, n)
		}
	}
}

// serve runs python's http.server on :3000 in pid's namespace, serving an
// index.html that says body.
func serve(t *testing.T, pid int, body string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-n", "--",
		"/usr/bin/python3", "-m", "http.server", "3000", "--bind", "0.0.0.0", "--directory", dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// get fetches url, retrying for a while so a starting server can catch up.
func get(url string) (string, error) {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		var resp *http.Response
		if resp, err = client.Get(url); err == nil {
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			return string(b), err
		}
	}
	return "", err
}

func expectBody(t *testing.T, addr netip.Addr, want string) {
	t.Helper()
	body, err := get("http://" + netip.AddrPortFrom(addr, 3000).String() + "/")
	if err != nil || body != want {
		t.Errorf("GET %s:3000 = %q, %v; want %q", addr, body, err, want)
	}
}

// runToRun fetches addr:3000 from inside pid's namespace, across the bridge.
func runToRun(t *testing.T, pid int, addr netip.Addr, want string) {
	t.Helper()
	script := fmt.Sprintf("import urllib.request as u; print(u.urlopen('http://%s:3000/', timeout=5).read().decode(), end='')", addr)
	out, err := inNS(pid, "/usr/bin/python3", "-c", script)
	if err != nil || out != want {
		t.Errorf("from %d GET %s:3000 = %q, %v; want %q", pid, addr, out, err, want)
	}
}

// forwardInto publishes pid's 127.0.0.1:3000 on a host loopback port with
// Forward, as a run's supervisor would, and fetches through it.
func forwardInto(t *testing.T, pid int, want string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	dial := func(ctx context.Context) (net.Conn, error) { return dialInNS(ctx, pid, "127.0.0.1:3000") }
	go func() { done <- Forward(ctx, ln, dial) }()
	body, err := get("http://" + ln.Addr().String() + "/")
	cancel()
	if err != nil || body != want {
		t.Errorf("GET through Forward = %q, %v; want %q", body, err, want)
	}
	if err := <-done; err != nil {
		t.Errorf("Forward = %v", err)
	}
}

// dialInNS connects to addr from inside pid's network namespace: the socket
// is made on a thread switched into the namespace, in a goroutine of its own
// so that a thread that cannot switch back dies with it.
func dialInNS(ctx context.Context, pid int, addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		c, err, restored := dialLocked(ctx, pid, addr)
		if restored {
			runtime.UnlockOSThread()
		}
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}

func dialLocked(ctx context.Context, pid int, addr string) (net.Conn, error, bool) {
	orig, err := vnetns.Get()
	if err != nil {
		return nil, err, true
	}
	defer orig.Close()
	ns, err := vnetns.GetFromPid(pid)
	if err != nil {
		return nil, err, true
	}
	defer ns.Close()
	if err := vnetns.Set(ns); err != nil {
		return nil, err, true
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	return c, err, vnetns.Set(orig) == nil
}

// ping sends one ICMP echo request to addr and waits for the reply.
func ping(addr netip.Addr) error {
	c, err := net.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return err
	}
	defer c.Close()
	id := [2]byte{byte(os.Getpid() >> 8), byte(os.Getpid())}
	msg := []byte{8, 0, 0, 0, id[0], id[1], 0, 1, 't', 'i', 'n', 'e'}
	sum := icmpChecksum(msg)
	msg[2], msg[3] = byte(sum>>8), byte(sum)
	if _, err := c.WriteTo(msg, &net.IPAddr{IP: addr.AsSlice()}); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(3 * time.Second))
	buf := make([]byte, 1500)
	for {
		n, from, err := c.ReadFrom(buf)
		if err != nil {
			return err
		}
		ip, _ := netip.AddrFromSlice(from.(*net.IPAddr).IP.To4())
		if ip == addr && n >= 8 && buf[0] == 0 && buf[4] == id[0] && buf[5] == id[1] {
			return nil
		}
	}
}

func icmpChecksum(b []byte) uint16 {
	var s uint32
	for i := 0; i+1 < len(b); i += 2 {
		s += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		s += uint32(b[len(b)-1]) << 8
	}
	for s > 0xffff {
		s = s>>16 + s&0xffff
	}
	return ^uint16(s)
}

// A run that takes the address of one just gone is reached from the host
// at once: the host's neighbour entry for the address, which names the
// gone run's MAC, is flushed when the new run attaches. Before, the host
// kept sending to the old MAC until the entry went stale (6 to more than
// 40 s).
func TestAttach_ReusedAddressReachableAtOnce(t *testing.T) {
	cfg := testConfig(t)
	_, other := attach(t, cfg, newNS(t)) // another run keeps the bridge's carrier up, as on a busy host
	old := newNS(t)
	nameOld, addr := attach(t, cfg, old, other)
	var err error
	for i := 0; i < 5; i++ { // the first run's link may take a moment to come up
		if err = ping(addr); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("ping %s: %v", addr, err)
	}
	if err := Detach(nameOld); err != nil {
		t.Fatal(err)
	}
	pid := newNS(t)
	if err := Attach(cfg, pid, runName(t), addr); err != nil {
		t.Fatal(err)
	}
	serve(t, pid, "the new run")
	client := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(3 * time.Second)
	for {
		resp, err := client.Get("http://" + netip.AddrPortFrom(addr, 3000).String() + "/")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			out, _ := exec.Command("ip", "neigh", "show", addr.String()).CombinedOutput()
			t.Fatalf("the new run at %s is unreachable from the host after 3 s: %v (neighbour: %s)", addr, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
