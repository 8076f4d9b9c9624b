package sandbox

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/egress/egresstest"
	"github.com/tinehq/tine/sandbox/netproxy"
)

// A command with a network of its own (Spec.Net) reaches a host port at
// its own 127.0.0.1 and an allowed name on its port, and nothing else:
// not the host's other loopback ports, not the host's address, not an
// allowed name's address on another port, not a name off the policy. The
// refusals are recorded. Without the network of its own every check but
// the name's would pass.
func TestRun_NetworkOfItsOwn(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	host := egresstest.HostAddr(t)
	api, _ := egresstest.Pong(t, "127.0.0.1:0")
	hidden, hiddenConns := egresstest.Pong(t, "0.0.0.0:0")
	allowed, _ := egresstest.Pong(t, "0.0.0.0:0")
	dns := egresstest.Upstream(t, func(name string) (string, bool) {
		return host, name == "allowed.test" || name == "other.test"
	})
	var mu sync.Mutex
	var recs []egress.Record
	p := netproxy.New(egress.Policy{Rules: []egress.Rule{{Host: "allowed.test", Port: uint16(allowed)}}, Upstream: []string{dns}},
		[]int{api}, func(r egress.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() })
	ws, out := t.TempDir(), t.TempDir()+"/out"
	os.WriteFile(ws+"/hello.py", []byte(egresstest.HelloScript), 0o644)
	at := func(h string, port int) string { return net.JoinHostPort(h, strconv.Itoa(port)) }
	targets := []string{at("127.0.0.1", api), at("127.0.0.1", hidden), at("allowed.test", allowed),
		at("allowed.test", hidden), at(host, hidden), at("other.test", allowed)}
	code, err := Run(Spec{Workspace: ws, Dir: ws, Env: os.Environ(), Net: p,
		Args: append([]string{"sh", "-c", `python3 hello.py "$@" > ` + out, "sh"}, targets...)})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	b, _ := os.ReadFile(out)
	got := strings.Fields(string(b))
	if want := []string{"ok", "refused", "ok", "refused", "refused", "noname"}; !slices.Equal(got, want) {
		t.Errorf("from inside, %v: %q, want %q", targets, got, want)
	}
	if n := hiddenConns(); n != 0 {
		t.Errorf("the hidden server got %d connections", n)
	}
	mu.Lock()
	defer mu.Unlock()
	var seen []string
	for _, r := range recs {
		seen = append(seen, fmt.Sprintf("%s %s %s:%d", r.Kind, r.Host, r.Addr, r.Port))
	}
	slices.Sort(seen)
	// The address and port, refused twice, recorded once, by the name
	// that resolved to it.
	if want := []string{fmt.Sprintf("connect allowed.test %s:%d", host, hidden), "dns other.test :0"}; !slices.Equal(seen, want) {
		t.Errorf("recorded %q, want %q", seen, want)
	}
}

// A network that cannot be set up (here: a host port that is no port)
// is said, and the command runs in this process's network all the same.
func TestRun_NetworkFailsOpenAndSaysSo(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	port, _ := egresstest.Pong(t, "127.0.0.1:0")
	var said error
	ws, out := t.TempDir(), t.TempDir()+"/out"
	os.WriteFile(ws+"/hello.py", []byte(egresstest.HelloScript), 0o644)
	code, err := Run(Spec{Workspace: ws, Dir: ws, Env: os.Environ(),
		Net: netproxy.New(egress.Policy{}, []int{70000}, nil), NetFailed: func(err error) error { said = err; return nil },
		Args: []string{"sh", "-c", "python3 hello.py 127.0.0.1:" + strconv.Itoa(port) + " > " + out}})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	if said == nil || !strings.Contains(said.Error(), "70000") {
		t.Errorf("NetFailed got %v, want the host port's error", said)
	}
	if b, _ := os.ReadFile(out); strings.TrimSpace(string(b)) != "ok" {
		t.Errorf("in this process's network: %q, want ok", b)
	}
}

// BenchmarkRun_Network is what a network of its own adds to entering a
// run: Run of /bin/true in this process's network, then in one of its own
// (no host ports, an empty policy). Run as a normal user, it measures the
// sandbox of tine exec without the daemon (a user namespace as well).
func BenchmarkRun_Network(b *testing.B) {
	ws := b.TempDir()
	for _, own := range []bool{false, true} {
		name := "host"
		if own {
			name = "own"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				spec := Spec{Workspace: ws, Dir: ws, Env: os.Environ(), Args: []string{"/bin/true"}}
				if own {
					spec.Net = netproxy.New(egress.Policy{}, nil, nil)
					spec.NetFailed = func(err error) error { b.Fatal(err); return nil }
				}
				if code, err := Run(spec); err != nil || code != 0 {
					b.Fatalf("Run = %d, %v", code, err)
				}
			}
		})
	}
}

// A connection the policy refuses is refused at its first packet, as the
// daemon's rules refuse it: the command sees ECONNREFUSED on connect, not
// a connect that succeeds and is then reset (as it did); UDP other than
// DNS fails at its first send with EPERM (the rule drops the datagram on
// its way out, as the daemon's does), and IPv6 likewise, where both
// failed unrecorded. Each is recorded with its destination, port and
// protocol.
func TestRun_NetworkRefusesAtOnce(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("needs python3")
	}
	host := egresstest.HostAddr(t)
	hidden, hiddenConns := egresstest.Pong(t, "0.0.0.0:0")
	allowed, _ := egresstest.Pong(t, "0.0.0.0:0")
	dns := egresstest.Upstream(t, func(name string) (string, bool) { return host, name == "allowed.test" })
	var mu sync.Mutex
	var recs []egress.Record
	p := netproxy.New(egress.Policy{Rules: []egress.Rule{{Host: "allowed.test", Port: uint16(allowed)}}, Upstream: []string{dns}},
		nil, func(r egress.Record) { mu.Lock(); recs = append(recs, r); mu.Unlock() })
	ws, out := t.TempDir(), t.TempDir()+"/out"
	os.WriteFile(ws+"/refused.py", []byte(egresstest.ErrnoScript), 0o644)
	at := func(proto, h string, port int) string { return proto + ":" + net.JoinHostPort(h, strconv.Itoa(port)) }
	targets := []string{at("tcp", "allowed.test", allowed), at("tcp", host, hidden), at("tcp", "allowed.test", hidden),
		at("udp", host, 9999), at("tcp", "2001:db8::1", 443), at("udp", "2001:db8::1", 4433)}
	code, err := Run(Spec{Workspace: ws, Dir: ws, Env: os.Environ(), Net: p,
		NetFailed: func(err error) error { t.Errorf("the network: %v", err); return err },
		Args:      append([]string{"sh", "-c", `python3 refused.py "$@" > ` + out, "sh"}, targets...)})
	if err != nil || code != 0 {
		t.Fatalf("Run = %d, %v", code, err)
	}
	b, _ := os.ReadFile(out)
	want := []string{"ok", "ECONNREFUSED", "ECONNREFUSED", "EPERM", "ECONNREFUSED", "EPERM"}
	if got := strings.Fields(string(b)); !slices.Equal(got, want) {
		t.Errorf("from inside, %v: %q, want %q", targets, got, want)
	}
	if n := hiddenConns(); n != 0 {
		t.Errorf("the hidden server got %d connections", n)
	}
	mu.Lock()
	defer mu.Unlock()
	var seen []string
	for _, r := range recs {
		if r.Time.IsZero() {
			t.Errorf("a record without a time: %+v", r)
		}
		seen = append(seen, fmt.Sprintf("%s %s %s %s", r.Kind, r.Proto, r.Host, net.JoinHostPort(r.Addr, strconv.Itoa(int(r.Port)))))
	}
	slices.Sort(seen)
	wantRecs := []string{
		fmt.Sprintf("connect tcp allowed.test %s:%d", host, hidden), // the address refused twice, by the name that resolved to it
		"connect tcp  [2001:db8::1]:443",
		"connect udp  [2001:db8::1]:4433",
		fmt.Sprintf("connect udp allowed.test %s:9999", host),
	}
	slices.Sort(wantRecs)
	if !slices.Equal(seen, wantRecs) {
		t.Errorf("recorded %q, want %q", seen, wantRecs)
	}
}

// A command that cannot start fails as itself, with its documented exit
// status, when it has a network of its own too: its failure is not the
// network's, and it is not run again in this process's network. (A
// failed start of the namespaces, here a terminal that is no terminal,
// was taken for the network's, said so, and started again without it.)
func TestRun_StartFailureIsNotTheNetwork(t *testing.T) {
	ws := t.TempDir()
	notTTY, err := os.Create(t.TempDir() + "/not-a-tty")
	if err != nil {
		t.Fatal(err)
	}
	defer notTTY.Close()
	os.WriteFile(ws+"/not-executable", []byte("#!/bin/sh\n"), 0o644)
	for _, c := range []struct {
		name string
		spec Spec
		code int
	}{
		{"not found", Spec{Args: []string{"no-such-command-tine"}}, ExitNotFound},
		{"not executable", Spec{Args: []string{ws + "/not-executable"}}, ExitCannotRun},
		{"no namespace", Spec{Args: []string{"true"}, Terminal: notTTY}, ExitCannotRun},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec
			spec.Workspace, spec.Dir, spec.Env = ws, ws, os.Environ()
			spec.Net = netproxy.New(egress.Policy{}, nil, nil)
			var said error
			spec.NetFailed = func(err error) error { said = err; return nil }
			code, _ := Run(spec)
			if code != c.code || said != nil {
				t.Errorf("Run = %d, NetFailed(%v); want %d and the network not blamed", code, said, c.code)
			}
		})
	}
}

// Without NetFailed, or when it says so, a network that cannot be set up
// fails the command before it runs (ExitCannotRun), not in this process's
// network.
func TestRun_NetworkFailsClosed(t *testing.T) {
	ws, out := t.TempDir(), t.TempDir()+"/out"
	for _, failed := range []func(error) error{nil, func(err error) error { return fmt.Errorf("refusing: %w", err) }} {
		code, err := Run(Spec{Workspace: ws, Dir: ws, Env: os.Environ(), Args: []string{"sh", "-c", "echo ran > " + out},
			Net: netproxy.New(egress.Policy{}, []int{70000}, nil), NetFailed: failed})
		if code != ExitCannotRun || err == nil || !strings.Contains(err.Error(), "70000") {
			t.Errorf("Run = %d, %v; want %d and the host port's error", code, err, ExitCannotRun)
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("the command ran")
		}
	}
}
