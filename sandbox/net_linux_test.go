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
		Net: netproxy.New(egress.Policy{}, []int{70000}, nil), NetFailed: func(err error) { said = err },
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
					spec.NetFailed = func(err error) { b.Fatal(err) }
				}
				if code, err := Run(spec); err != nil || code != 0 {
					b.Fatalf("Run = %d, %v", code, err)
				}
			}
		})
	}
}
