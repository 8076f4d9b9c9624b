//go:build linux && amd64

package main

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/livefork"
)

// threadedPy is a threaded HTTP server (four idle threads besides) holding
// a random secret and a counter in memory: GET / answers "secret count",
// GET /inc counts one first.
const threadedPy = `import http.server, socketserver, threading, os
secret = os.urandom(8).hex()
count = 0
lock = threading.Lock()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global count
        with lock:
            if self.path == "/inc":
                count += 1
            body = f"{secret} {count}".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
for i in range(4):
    threading.Thread(target=threading.Event().wait, daemon=True).start()
S(("0.0.0.0", 8000), H).serve_forever()
`

// counterJS is the same server in Node (libuv's and V8's threads).
const counterJS = `const crypto = require("crypto");
const secret = crypto.randomBytes(8).toString("hex");
let count = 0;
require("http").createServer((req, res) => {
  if (req.url === "/inc") count++;
  res.end(secret + " " + count);
}).listen(8000, "0.0.0.0");
`

// criuToml runs cmd as the service "web"; [confine] is off, which CRIU
// needs (a restored tree keeps its parent's confinement: see
// TestLiveFork_CRIURefusedByConfinement).
func criuToml(cmd string) string {
	return "[network]\nisolate = true\n[confine]\noff = true\n[[service]]\nname = \"web\"\ncommand = \"" + cmd + "\"\nready = { port = 8000 }\n"
}

func requireCRIU(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := livefork.CRIUProbe(ctx); err != nil {
		t.Skipf("requires CRIU 4 (scripts/install-criu.sh, which .ci/run calls): %v", err)
	}
	out, _ := exec.Command("criu", "--version").Output()
	if !strings.Contains(string(out), "Version: 4") {
		t.Skipf("requires CRIU 4 (scripts/install-criu.sh): criu --version says %q", out)
	}
}

// get answers GET http://addr:8000/path, or "" after 5 s.
func get(addr, path string) string {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + ":8000" + path)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func TestLiveFork_CRIUThreadedPython(t *testing.T) {
	requireCRIU(t)
	criuForkTwoWays(t, "threaded.py", threadedPy, "exec python3 threaded.py")
}

func TestLiveFork_CRIUNode(t *testing.T) {
	requireCRIU(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("requires node")
	}
	criuForkTwoWays(t, "server.js", counterJS, "exec node server.js")
}

// criuForkTwoWays starts a server holding a secret and a counter, counts
// twice, forks it live 2 ways by CRIU, and checks that every fork answers
// at the same port on its own address with the source's secret and count,
// that each then counts on its own, and that the source serves on.
func criuForkTwoWays(t *testing.T, name, body, cmd string) {
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": criuToml(cmd), name: body})
	e.ok("start", "source")
	src := e.ps("source").Run.Addr
	get(src, "/inc")
	state := get(src, "/inc")
	if !strings.HasSuffix(state, " 2") {
		t.Fatalf("the source answers %q", state)
	}
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "criu", "-n", "2", "--wait", "--json")
	for i, rep := range res.Live {
		if !rep.Started || len(rep.Forked) != 1 || rep.Forked[0].Engine != engine.LiveCRIU || len(rep.Restarted) != 0 {
			t.Fatalf("fork %d's report: %+v", i, rep)
		}
		t.Logf("%s: forked live by CRIU in %.0f ms (pause %.1f ms)", rep.Run, rep.Forked[0].TookMS, rep.Forked[0].PauseMS)
		if got := get(rep.Addr, "/"); got != state {
			t.Errorf("fork %s at %s answers %q, want the source's %q", rep.Run, rep.Addr, got, state)
		}
	}
	secret := strings.Fields(state)[0]
	if got := get(res.Live[0].Addr, "/inc"); got != secret+" 3" {
		t.Errorf("fork 1 counts to %q", got)
	}
	if got := get(res.Live[1].Addr, "/"); got != state {
		t.Errorf("fork 2 sees %q after fork 1 counted, want %q", got, state)
	}
	if got := get(src, "/"); got != state {
		t.Errorf("the source answers %q after the forks, want %q", got, state)
	}
	if out := e.ok("fork", "source", "--live", "criu"); !strings.Contains(out, "web forked live by CRIU in") {
		t.Errorf("tine fork --live criu says:\n%s", out)
	}
}

// A fork confines its processes by Landlock and a stricter seccomp filter,
// which a tree restored by CRIU would not get: the service is restarted,
// and tine fork says why.
func TestLiveFork_CRIURefusedByConfinement(t *testing.T) {
	requireCRIU(t)
	toml := strings.Replace(criuToml("exec python3 threaded.py"), "[confine]\noff = true\n", "", 1)
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": toml, "threaded.py": threadedPy})
	e.ok("start", "source")
	out := e.ok("fork", "source", "--live", "criu", "--wait")
	if !strings.Contains(out, "restarted web") || !strings.Contains(out, "which CRIU cannot give a restored tree") {
		t.Errorf("tine fork --live criu of a confined run says:\n%s", out)
	}
}
