//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine/egress/egresstest"
	"github.com/tinehq/tine/internal/testkit"
)

// connectScript tries each host:port from inside a run and prints one
// word per attempt: ok, refused, noname or other.
const connectScript = `
import socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
        print("ok")
    except ConnectionRefusedError:
        print("refused")
    except socket.gaierror:
        print("noname")
    except Exception as e:
        print("other", type(e).__name__)
`

// tcpDNSScript asks, over TCP (to a server that is not the run's: the
// rules send it to tine's resolver), for each name's A record and prints
// one word per name: its last address and how many there are, or the
// answer's rcode.
const tcpDNSScript = `
import socket, struct, sys
for i, name in enumerate(sys.argv[1:]):
    q = struct.pack(">HHHHHH", i + 1, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\0" + struct.pack(">HH", 1, 1)
    s = socket.create_connection(("192.0.2.1", 53), timeout=3)
    s.sendall(struct.pack(">H", len(q)) + q)
    n = struct.unpack(">H", s.recv(2, socket.MSG_WAITALL))[0]
    r = s.recv(n, socket.MSG_WAITALL)
    rcode, count = r[3] & 15, struct.unpack(">H", r[6:8])[0]
    print("%s/%d" % (socket.inet_ntoa(r[-4:]), count) if rcode == 0 and count else "rcode%d" % rcode)
`

// A fork with its own network reaches only what its policy allows: a name
// listed in [network] egress, through tine's resolver, on its port; an
// address by itself, another port or an unlisted name is refused (over
// UDP and TCP DNS alike), and each refusal is in tine ps. Over TCP an
// answer too long for UDP (400 addresses) comes whole, asked upstream over
// TCP from the host's network. The source's network stays open.
func TestEgress_ForkReachesOnlyWhatIsAllowed(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	dir := e.workspaceDir("egress")
	var names sync.Map
	dns := egresstest.Server(t, func(name string) (egresstest.Answer, bool) {
		ips, ok := names.Load(name)
		if !ok {
			return egresstest.Answer{}, false
		}
		return egresstest.Answer{Addrs: ips.([]string), TTL: 60}, true
	})
	toml := webToml + fmt.Sprintf("[network]\nisolate = true\negress = [\"allowed.test:3000\", \"many.test:3000\"]\nresolvers = [%q]\n", dns)
	for name, body := range map[string]string{"tine.toml": toml, "connect.py": connectScript, "tcpdns.py": tcpDNSScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e.ok("init", dir, "--net")
	e.ok("start", "source")
	src := e.ps("source")
	if src.Addr == "" || src.Egress != nil {
		t.Fatalf("the source: address %q, egress %+v; want an address and an open network", src.Addr, src.Egress)
	}
	names.Store("allowed.test", []string{src.Addr})
	names.Store("other.test", []string{src.Addr})
	var many []string
	for i := range 399 {
		many = append(many, fmt.Sprintf("198.18.%d.%d", i/200, i%200+1))
	}
	names.Store("many.test", append(many, src.Addr))
	e.ok("fork", "source")
	fork := e.ps("source-1")
	if fork.Egress == nil {
		t.Fatal("the fork has no egress policy")
	}
	out := e.execSh("source-1", "python3 connect.py "+src.Addr+":3000 other.test:3000 allowed.test:3000 allowed.test:3001")
	if got := strings.Join(strings.Fields(out), " "); got != "refused noname ok refused" {
		t.Errorf("from the fork: %q, want refused noname ok refused", got)
	}
	// DNS over TCP: the same policy, the same records.
	got := strings.Fields(e.execSh("source-1", "python3 tcpdns.py allowed.test tcpother.test many.test"))
	if want := []string{src.Addr + "/1", "rcode3", src.Addr + "/400"}; !slices.Equal(got, want) {
		t.Errorf("DNS over TCP from the fork: %q, want %q", got, want)
	}
	if out := e.execSh("source", "python3 connect.py "+fork.Addr+":3000"); strings.TrimSpace(out) != "ok" {
		t.Errorf("from the source to the fork's web: %q, want ok", out)
	}
	want := []string{"connect " + src.Addr + ":3000", "connect " + src.Addr + ":3001", "dns other.test", "dns tcpother.test"}
	got = nil
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got = got[:0]
		for _, r := range e.ps("source-1").Refused {
			if r.Kind == "dns" {
				got = append(got, "dns "+r.Host)
			} else {
				got = append(got, fmt.Sprintf("connect %s:%d", r.Addr, r.Port))
			}
		}
		slices.Sort(got)
		if slices.Equal(got, want) {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("refusals recorded: %q, want %q", got, want)
	}
	if out := e.ok("ps", "source-1"); !strings.Contains(out, "egress: only ") || !strings.Contains(out, "refused: name other.test") {
		t.Errorf("tine ps does not show the policy and the refusals:\n%s", out)
	}
}
