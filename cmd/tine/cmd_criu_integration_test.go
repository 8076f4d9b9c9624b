//go:build linux && amd64

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/livefork"
	"github.com/tinehq/tine/runtime"
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

// criuToml runs cmd as the service "web", confined as by default.
func criuToml(cmd string) string {
	return "[network]\nisolate = true\n[[service]]\nname = \"web\"\ncommand = \"" + cmd + "\"\nready = { port = 8000 }\n"
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
	criuForkWays(t, 2, "threaded.py", threadedPy, "exec python3 threaded.py")
}

func TestLiveFork_CRIUNode(t *testing.T) {
	requireCRIU(t)
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("requires node")
	}
	criuForkWays(t, 4, "server.js", counterJS, "exec node server.js")
}

// criuForkWays starts a server holding a secret and a counter, counts
// twice, forks it live n ways by CRIU, and checks that every fork answers
// at the same port on its own address with the source's secret and count,
// that each then counts on its own, and that the source serves on.
func criuForkWays(t *testing.T, n int, name, body, cmd string) {
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": criuToml(cmd), name: body})
	e.ok("start", "source")
	src := e.ps("source").Run.Addr
	get(src, "/inc")
	state := get(src, "/inc")
	if !strings.HasSuffix(state, " 2") {
		t.Fatalf("the source answers %q", state)
	}
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "criu", "-n", fmt.Sprint(n), "--wait", "--json")
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
	for _, rep := range res.Live[1:] {
		if got := get(rep.Addr, "/"); got != state {
			t.Errorf("%s sees %q after fork 1 counted, want %q", rep.Run, got, state)
		}
	}
	if got := get(src, "/"); got != state {
		t.Errorf("the source answers %q after the forks, want %q", got, state)
	}
	if out := e.ok("fork", "source", "--live", "criu"); !strings.Contains(out, "    web: forked live by CRIU in") {
		t.Errorf("tine fork --live criu says:\n%s", out)
	}
}

// probePy is a threaded server whose threads try to write and read: GET
// /write?p=PATH writes PATH.main from the request's thread (a new one,
// cloned from the main thread) and PATH.worker from a worker thread
// started before any fork, answering "main:RESULT worker:RESULT", each ok
// or an errno name; GET /read?p=PATH reads PATH so; GET / answers its
// random secret.
const probePy = `import http.server, socketserver, threading, os, queue, errno, urllib.parse
secret = os.urandom(8).hex()
jobs = queue.Queue()
def write(path):
    try:
        with open(path, "w") as f:
            f.write("x")
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
def read(path):
    try:
        with open(path, "rb") as f:
            f.read()
        return "ok"
    except OSError as e:
        return errno.errorcode[e.errno]
def worker():
    while True:
        do, path, out = jobs.get()
        out.put(do(path))
threading.Thread(target=worker, daemon=True).start()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        body = secret
        if u.path == "/write":
            path = urllib.parse.parse_qs(u.query)["p"][0]
            out = queue.Queue()
            jobs.put((write, path + ".worker", out))
            body = "main:" + write(path + ".main") + " worker:" + out.get()
        if u.path == "/read":
            path = urllib.parse.parse_qs(u.query)["p"][0]
            out = queue.Queue()
            jobs.put((read, path, out))
            body = "main:" + read(path) + " worker:" + out.get()
        body = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
S(("0.0.0.0", 8000), H).serve_forever()
`

// A fork confines its processes (Landlock, a stricter seccomp filter,
// dropped capabilities, no_new_privs) beyond what CRIU restores of the
// source's: the tree restored by CRIU is left stopped and each of its
// threads confined as the fork's own processes are before it runs, so a
// service forked live is no less confined than the same service
// restarted in a fork: thread by thread, and in what its threads (one
// started before the fork, one after) may write.
func TestLiveFork_CRIUConfined(t *testing.T) {
	requireCRIU(t)
	toml := "[network]\nisolate = true\n[[service]]\nname = \"web\"\ncommand = \"exec python3 probe.py\"\nready = { port = 8000 }\n"
	e, dir := liveWorkspace(t, true, map[string]string{"tine.toml": toml, "probe.py": probePy})
	e.ok("start", "source")
	secret := get(e.ps("source").Run.Addr, "/")
	var live, rerun engine.ForkResult
	e.okJSON(&live, "fork", "source", "--live", "criu", "--wait", "--json")
	e.okJSON(&rerun, "fork", "source", "--live", "rerun", "--wait", "--json")
	rep := live.Live[0]
	if len(rep.Forked) != 1 || rep.Forked[0].Engine != engine.LiveCRIU || len(rep.Restarted) != 0 {
		t.Fatalf("the fork's report: %+v, want web forked live by CRIU", rep)
	}
	if got := get(rep.Addr, "/"); got != secret {
		t.Errorf("the fork answers %q, want the source's secret %q", got, secret)
	}
	restored := rep.Forked[0].Child
	restarted := servicePid(t, e.ps(rerun.Live[0].Run), "probe.py")
	want := threadConfinement(t, restarted)[0]
	for i, got := range threadConfinement(t, restored) {
		if !noLessConfined(got, want) {
			t.Errorf("thread %d of the restored service: %+v; a restarted one: %+v", i, got, want)
		}
	}
	// Landlock shows in what a thread may reach: a process outside its
	// domain, such as its supervisor (pid 1 of its namespace), which its
	// parent's unconfined copy in the source may read.
	src := e.ps("source").Run.Addr
	if got := get(src, "/read?p=/proc/1/environ"); got != "main:ok worker:ok" {
		t.Errorf("the source's service reads its supervisor's environment: %q", got)
	}
	for _, addr := range []string{rep.Addr, rerun.Live[0].Addr} {
		if got := get(addr, "/read?p=/proc/1/environ"); got != "main:EACCES worker:EACCES" {
			t.Errorf("the service at %s reads its supervisor's environment: %q, want Landlock's EACCES", addr, got)
		}
		if got := get(addr, "/write?p="+filepath.Join(dir, "probe")); got != "main:ok worker:ok" {
			t.Errorf("a write to the workspace at %s: %q", addr, got)
		}
	}
}

// threadStatus is what /proc/PID/task/TID/status says of a thread's
// confinement.
type threadStatus struct {
	NoNewPrivs, Seccomp, Filters int
	CapEff, CapPrm, CapBnd       uint64
}

// threadConfinement reads the confinement of every thread of pid.
func threadConfinement(t *testing.T, pid int) []threadStatus {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		t.Fatalf("threads of %d: %v", pid, err)
	}
	var out []threadStatus
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, task.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var s threadStatus
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			v = strings.TrimSpace(v)
			n, _ := strconv.Atoi(v)
			c, _ := strconv.ParseUint(v, 16, 64)
			switch k {
			case "NoNewPrivs":
				s.NoNewPrivs = n
			case "Seccomp":
				s.Seccomp = n
			case "Seccomp_filters":
				s.Filters = n
			case "CapEff":
				s.CapEff = c
			case "CapPrm":
				s.CapPrm = c
			case "CapBnd":
				s.CapBnd = c
			}
		}
		out = append(out, s)
	}
	return out
}

// noLessConfined reports whether a thread confined as got is held at
// least as tightly as one confined as want.
func noLessConfined(got, want threadStatus) bool {
	subset := func(a, b uint64) bool { return a&^b == 0 }
	return got.NoNewPrivs >= want.NoNewPrivs && got.Seccomp >= want.Seccomp && got.Filters >= want.Filters &&
		subset(got.CapEff, want.CapEff) && subset(got.CapPrm, want.CapPrm) && subset(got.CapBnd, want.CapBnd)
}

// servicePid is the host pid of the process of ps whose command holds
// word.
func servicePid(t *testing.T, ps runtime.PS, word string) int {
	t.Helper()
	for _, p := range ps.Processes {
		if strings.Contains(p.Command, word) {
			return p.Pid
		}
	}
	t.Fatalf("no %s in %s: %+v", word, ps.Run.Name, ps.Processes)
	return 0
}

// tine fork --live auto carries each service as its [[service]] live
// says: a single-threaded process by ptrace, a threaded server by CRIU, a
// service marked live = "restart" started fresh; tine fork and tine ps
// say which and why, service by service.
func TestLiveFork_Auto(t *testing.T) {
	requireCRIU(t)
	toml := "[network]\nisolate = true\n" +
		"[[service]]\nname = \"web\"\ncommand = \"exec python3 threaded.py\"\nready = { port = 8000 }\n" +
		"[[service]]\nname = \"single\"\ncommand = \"exec python3 -c 'import time\\nwhile True: time.sleep(1)'\"\n" +
		"[[service]]\nname = \"db\"\ncommand = \"exec sleep 1000\"\nlive = \"restart\"\n"
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": toml, "threaded.py": threadedPy})
	e.ok("start", "source")
	src := e.ps("source").Run.Addr
	state := get(src, "/inc")
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "auto", "--wait", "--json")
	rep := res.Live[0]
	got := map[string]engine.LiveChoice{}
	for _, c := range rep.Choices {
		got[c.Service] = c
	}
	if c := got["web"]; c.Engine != engine.LiveCRIU || !strings.Contains(c.Why, "threads") || c.PauseMS <= 0 || c.TookMS <= 0 {
		t.Errorf("web: %+v, want forked live by CRIU for its threads", c)
	}
	if c := got["single"]; c.Engine != engine.LivePtrace || c.Why != "a single-threaded process" {
		t.Errorf("single: %+v, want forked live by ptrace", c)
	}
	if c := got["db"]; c.Engine != engine.LiveRerun || c.Why != `live = "restart" in tine.toml` {
		t.Errorf("db: %+v, want restarted for its live = \"restart\"", c)
	}
	if got := get(rep.Addr, "/"); got != state {
		t.Errorf("the fork's web answers %q, want the source's %q", got, state)
	}
	out := e.ok("fork", "source", "--live", "auto")
	for _, want := range []string{"    web: forked live by CRIU in ", "    single: forked live by ptrace (pause ", "    db: restarted: live = \"restart\" in tine.toml"} {
		if !strings.Contains(out, want) {
			t.Errorf("tine fork --live auto does not say %q:\n%s", want, out)
		}
	}
	if out := e.ok("ps", rep.Run); !strings.Contains(out, "at fork: web: forked live by CRIU in ") || !strings.Contains(out, "at fork: db: restarted: ") {
		t.Errorf("tine ps %s does not say how its services came:\n%s", rep.Run, out)
	}
}

// Redis holding keys in memory only (no RDB, no AOF) forked live 4 ways
// (--live auto: its threads send it to CRIU): every fork has the keys,
// then each fork's writes stay its own.
func TestLiveFork_CRIURedis(t *testing.T) {
	requireCRIU(t)
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("requires redis-server (.ci/run installs it)")
	}
	toml := "[network]\nisolate = true\n[[service]]\nname = \"redis\"\n" +
		"command = \"exec redis-server --port 6379 --bind 0.0.0.0 --protected-mode no --save '' --appendonly no\"\nready = { port = 6379 }\n"
	e, dir := liveWorkspace(t, true, map[string]string{"tine.toml": toml})
	e.ok("start", "source")
	src := e.ps("source").Run.Addr
	for i := range 100 {
		redisDo(t, src, "SET", fmt.Sprint("k", i), fmt.Sprint("v", i))
	}
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "auto", "-n", "4", "--wait", "--json")
	for _, rep := range res.Live {
		if len(rep.Choices) != 1 || rep.Choices[0].Engine != engine.LiveCRIU {
			t.Fatalf("%s: %+v, want redis forked live by CRIU", rep.Run, rep)
		}
		if got := redisDo(t, rep.Addr, "DBSIZE"); got != "100" {
			t.Errorf("%s holds %s keys, want the source's 100", rep.Run, got)
		}
		if got := redisDo(t, rep.Addr, "GET", "k42"); got != "v42" {
			t.Errorf("%s: GET k42 = %q", rep.Run, got)
		}
		redisDo(t, rep.Addr, "SET", "mine", rep.Run)
	}
	for _, rep := range res.Live {
		if got := redisDo(t, rep.Addr, "GET", "mine"); got != rep.Run {
			t.Errorf("%s: GET mine = %q, want its own write", rep.Run, got)
		}
	}
	if got := redisDo(t, src, "GET", "mine"); got != "" {
		t.Errorf("the source sees a fork's write: %q", got)
	}
	if ents, _ := filepath.Glob(filepath.Join(dir, "*.rdb")); len(ents) != 0 {
		t.Errorf("redis wrote %v: the keys were not in memory only", ents)
	}
}

// redisDo sends one command to the Redis at addr:6379 and returns its
// reply's value ("" for a nil reply).
func redisDo(t *testing.T, addr string, args ...string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr+":6379", 5*time.Second)
	if err != nil {
		t.Fatalf("redis at %s: %v", addr, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	req := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		req += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := c.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("redis %v at %s: %v", args, addr, err)
	}
	line = strings.TrimRight(line, "\r\n")
	switch line[0] {
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return ""
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(r, b); err != nil {
			t.Fatal(err)
		}
		return string(b[:n])
	case '-':
		t.Fatalf("redis %v at %s: %s", args, addr, line)
	}
	return line[1:]
}

// peerPy holds a connection to the "echo" service (outside its tree)
// open: GET /peer sends a line over it and answers what came back, or the
// error.
const peerPy = `import http.server, socket, time
for _ in range(50):
    try:
        peer = socket.create_connection(("127.0.0.1", 9000))
        break
    except OSError:
        time.sleep(0.1)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        try:
            peer.settimeout(3)
            peer.sendall(b"ping\n")
            got = peer.recv(100)
            body = ("echo " + got.decode().strip()) if got else "closed"
        except OSError as e:
            body = type(e).__name__
        body = body.encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(("0.0.0.0", 8000), H).serve_forever()
`

// A service's established TCP connection to a server outside its tree
// is closed in each fork, where the process sees it reset (not a hang);
// the source's connection works on.
func TestLiveFork_CRIUConnectionReset(t *testing.T) {
	requireCRIU(t)
	toml := "[network]\nisolate = true\n" +
		"[[service]]\nname = \"echo\"\ncommand = \"exec python3 -c 'import socketserver\\nclass H(socketserver.StreamRequestHandler):\\n    def handle(self):\\n        for l in self.rfile: self.wfile.write(l)\\nsocketserver.ThreadingTCPServer((\\\"0.0.0.0\\\", 9000), H).serve_forever()'\"\nready = { port = 9000 }\nlive = \"restart\"\n" +
		"[[service]]\nname = \"web\"\ncommand = \"exec python3 peer.py\"\nready = { port = 8000 }\nlive = \"criu\"\n"
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": toml, "peer.py": peerPy})
	e.ok("start", "source")
	src := e.ps("source").Run.Addr
	if got := get(src, "/peer"); got != "echo ping" {
		t.Fatalf("the source's web: %q", got)
	}
	var res engine.ForkResult
	e.okJSON(&res, "fork", "source", "--live", "auto", "--wait", "--json")
	rep := res.Live[0]
	if len(rep.Forked) != 1 || rep.Forked[0].Service != "web" || rep.Forked[0].Engine != engine.LiveCRIU {
		t.Fatalf("the fork's report: %+v, want web forked live by CRIU", rep)
	}
	start := time.Now()
	if got := get(rep.Addr, "/peer"); got != "ConnectionResetError" && got != "BrokenPipeError" {
		t.Errorf("the fork's web on its inherited connection: %q, want a reset", got)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the fork's web took %v to see its connection gone", d)
	}
	if got := get(src, "/peer"); got != "echo ping" {
		t.Errorf("the source's web after the fork: %q", got)
	}
}

// tine killed (SIGKILL) while criu dumps a service: the source serves on
// with its state, no fork holds a copy of it, and nothing of the dump
// (its tmpfs of the service's memory) is left mounted or on disk.
func TestLiveFork_CRIUKilledMidDump(t *testing.T) {
	requireCRIU(t)
	body := "import os\nballast = bytearray(os.urandom(1 << 20)) * 200\n" + threadedPy
	e, _ := liveWorkspace(t, true, map[string]string{"tine.toml": criuToml("exec python3 threaded.py"), "threaded.py": body})
	e.ok("start", "source")
	src := e.ps("source").Run.Addr
	state := get(src, "/inc")
	cmd := exec.Command(tineBin, "fork", "source", "--live", "criu", "-n", "2")
	cmd.Env = e.vars
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(criuProcs("dump")) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("criu dump never ran")
		}
		time.Sleep(time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, func() bool { return len(criuProcs("")) == 0 })
	if got := get(src, "/"); got != state {
		t.Errorf("the source answers %q after tine was killed mid-dump, want %q", got, state)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], e.home) && strings.Contains(line, " - tmpfs ") {
			t.Errorf("a tmpfs is left mounted in the state directory: %s", line)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(e.home, "workspaces", "*", "runs", "*", "sup", "criu-*")); len(left) != 0 {
		t.Errorf("CRIU images left: %v", left)
	}
	if copies := processesRunning("threaded.py"); len(copies) != 1 {
		t.Errorf("%d processes run threaded.py (%v), want the source's alone", len(copies), copies)
	}
}

// criuProcs lists the pids of criu processes whose command line holds
// word.
func criuProcs(word string) []int {
	var out []int
	for _, pid := range processesRunning("criu") {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if args := strings.Split(string(b), "\x00"); filepath.Base(args[0]) == "criu" && strings.Contains(string(b), word) {
			out = append(out, pid)
		}
	}
	return out
}

// processesRunning lists the pids whose command line holds word.
func processesRunning(word string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(b), word) {
			out = append(out, pid)
		}
	}
	return out
}
