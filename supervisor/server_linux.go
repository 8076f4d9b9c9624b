package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/internal/fdpass"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/netns"
	"golang.org/x/sys/unix"
)

// defaultGrace is how long processes get between SIGTERM and SIGKILL.
const defaultGrace = 5 * time.Second

type server struct {
	spec   Spec
	ln     *net.UnixListener
	reaper *reaper

	mu       sync.Mutex
	services map[string]*service
	execs    map[int][]string
	ports    []Port
	stopping bool

	flushRefusals func()           // records what the egress rules refused last (confineNetwork)
	hostPorts     *hostPorts       // the host's loopback ports forwarded into the run, if it has a network of its own
	resolver      *egress.Resolver // the run's resolver, if it has an egress policy
}

func newServer(spec Spec, ln *net.UnixListener) *server {
	return &server{spec: spec, ln: ln, reaper: newReaper(), services: map[string]*service{}, execs: map[int][]string{}}
}

func (s *server) serve() {
	s.watchSignals()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			if s.isStopping() {
				select {} // handle("stop") exits once it has answered
			}
			log.Printf("accept: %v", err)
			os.Exit(1)
		}
		go s.handle(c)
	}
}

// readRequest reads the first message of a call with the files sent beside
// it, and returns a reader of whatever follows.
func readRequest(c *net.UnixConn) (request, []*os.File, io.Reader, error) {
	buf := make([]byte, 1<<20)
	oob := make([]byte, unix.CmsgSpace(4*8))
	n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	if err != nil {
		return request{}, nil, nil, err
	}
	files, err := fdpass.Files(oob[:oobn], "passed")
	if err != nil {
		return request{}, nil, nil, err
	}
	data := buf[:n]
	r := bufio.NewReader(io.MultiReader(bytes.NewReader(data), c))
	line, err := r.ReadBytes('\n')
	if err != nil {
		closeAll(files)
		return request{}, nil, nil, err
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		closeAll(files)
		return request{}, nil, nil, fmt.Errorf("bad request: %w", err)
	}
	return req, files, r, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

func reply(w io.Writer, resp response) {
	b, _ := json.Marshal(resp)
	w.Write(append(b, '\n'))
}

func (s *server) handle(c *net.UnixConn) {
	defer c.Close()
	req, files, rest, err := readRequest(c)
	if err != nil {
		reply(c, response{Error: err.Error()})
		return
	}
	defer closeAll(files)
	switch req.Op {
	case "status":
		st := s.status()
		reply(c, response{Status: &st})
	case "exec":
		s.exec(c, req, files, rest)
	case "services":
		sts, err := s.startServices(req.Services, req.NoWait)
		reply(c, response{Services: sts, Error: errString(err)})
	case "stop-services":
		sts := s.stopServices(req.Names, req.Grace)
		reply(c, response{Services: sts})
	case "publish":
		reply(c, response{Error: errString(s.publish(req, files))})
	case "stop":
		s.markStopping()
		s.ln.Close() // nobody finds a supervisor that is going away
		s.stop(req.Grace)
		reply(c, response{})
		log.Printf("stopped")
		os.Exit(0)
	default:
		reply(c, response{Error: fmt.Sprintf("unknown request %q", req.Op)})
	}
}

// sysAttr is how every process the supervisor starts begins: leading a
// process group of its own (with session, a session), as the run's owner.
// The supervisor alone keeps its privileges.
func (s *server) sysAttr(session bool) *syscall.SysProcAttr {
	sys := &syscall.SysProcAttr{Setpgid: !session, Setsid: session}
	if s.spec.Owner != nil {
		sys.Credential = s.spec.Owner.Credential()
	}
	return sys
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (s *server) status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{Services: []ServiceStatus{}, Ports: append([]Port(nil), s.ports...)}
	for _, svc := range s.services {
		st.Services = append(st.Services, svc.snapshot())
	}
	sort.Slice(st.Services, func(i, j int) bool { return st.Services[i].Name < st.Services[j].Name })
	for pid, args := range s.execs {
		st.Execs = append(st.Execs, ExecStatus{Pid: pid, Args: args})
	}
	sort.Slice(st.Execs, func(i, j int) bool { return st.Execs[i].Pid < st.Execs[j].Pid })
	st.HostPorts = s.hostPorts.ports()
	st.Display = s.spec.Display
	return st
}

// exec starts a command with the caller's streams, tells its pid, forwards
// signals the caller sends, and tells its exit status. A caller that hangs
// up sends SIGHUP to the command's process group, as a terminal would.
func (s *server) exec(c *net.UnixConn, req request, files []*os.File, rest io.Reader) {
	if req.Exec == nil || len(req.Exec.Args) == 0 || len(files) != 3 {
		reply(c, response{Error: "exec needs a command and three streams"})
		return
	}
	x := req.Exec
	x.Env = s.spec.processEnv(x.Env, x.Grant)
	path, err := lookPath(x.Args[0], x.Env)
	if err != nil {
		reply(c, response{Error: err.Error(), Exit: intp(127)})
		return
	}
	s.allowEgress(x.Egress)
	for _, p := range x.HostPorts { // the caller's agent's API, on the host's loopback
		if err := s.hostPorts.forward(p); err != nil {
			log.Printf("exec %s: %v", x.Args[0], err)
		}
	}
	s.giveTerminal(x, files[0])
	attr := &os.ProcAttr{Dir: x.Dir, Env: x.Env, Files: files, Sys: s.execSys(x)}
	pid, done, err := s.spawn(path, x.Args, attr)
	if err != nil {
		code := 126
		if errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		reply(c, response{Error: fmt.Sprintf("%s: %v", x.Args[0], errors.Unwrap(err)), Exit: intp(code)})
		return
	}
	closeAll(files)
	s.setExec(pid, x.Args)
	reply(c, response{Pid: pid})
	ended := make(chan struct{})
	go forwardFromCaller(rest, pid, x.Tree, ended)
	ws := <-done
	close(ended)
	if x.Tree {
		killTree(pid)
	}
	// No longer listed before the caller hears the end: a caller that then
	// asks whether the run is idle (to stop a supervisor it launched) must
	// not still see this exec.
	s.setExec(pid, nil)
	reply(c, response{Exit: intp(exitCode(ws))})
}

// execSys says how an exec's process starts (see sysAttr): a tree
// command or one on a terminal leads a session of its own, and a terminal
// (its standard input) becomes the session's controlling terminal.
func (s *server) execSys(x *Exec) *syscall.SysProcAttr {
	sys := s.sysAttr(x.Tree || x.Tty)
	if x.Tty {
		sys.Setctty, sys.Ctty = true, 0
	}
	return sys
}

// giveTerminal makes the terminal of an exec on one belong to the run's
// owner, as a login does, so that what runs as them can open it by its name
// too.
func (s *server) giveTerminal(x *Exec, term *os.File) {
	if x.Tty && s.spec.Owner != nil && !s.spec.Owner.Root() {
		if err := term.Chown(s.spec.Owner.UID, -1); err != nil {
			log.Printf("giving %s to uid %d: %v", term.Name(), s.spec.Owner.UID, err)
		}
	}
}

// forwardFromCaller sends the signals the caller forwards to the command's
// process group while it runs, and SIGHUP if the caller hangs up before it
// ends, as a terminal would. Once the command has ended its group is left
// alone: what it started in the background goes on. For a tree command a
// SIGKILL, or the caller hanging up, kills the whole tree.
func forwardFromCaller(r io.Reader, pid int, tree bool, ended <-chan struct{}) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var req request
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.Signal <= 0 || !running(ended) {
			continue
		}
		if tree && syscall.Signal(req.Signal) == syscall.SIGKILL {
			killTree(pid)
			continue
		}
		syscall.Kill(-pid, syscall.Signal(req.Signal))
	}
	switch {
	case !running(ended):
	case tree:
		killTree(pid)
	default:
		syscall.Kill(-pid, syscall.SIGHUP)
	}
}

// killTree kills the session that leader started and every descendant of
// it, looking again until nothing is left, since a process may fork while
// its siblings die. The supervisor itself is never a member.
func killTree(leader int) {
	self := os.Getpid()
	for range 50 {
		procs, err := procfs.All("/proc")
		if err != nil {
			return
		}
		live := procs[:0]
		for _, p := range procs {
			if p.State != 'Z' && p.Pid != self {
				live = append(live, p)
			}
		}
		n := 0
		for _, pid := range procfs.Tree(live, leader, leader) {
			syscall.Kill(pid, syscall.SIGKILL)
			n++
		}
		if n == 0 {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func running(ended <-chan struct{}) bool {
	select {
	case <-ended:
		return false
	default:
		return true
	}
}

func (s *server) setExec(pid int, args []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if args == nil {
		delete(s.execs, pid)
		return
	}
	s.execs[pid] = args
}

func intp(n int) *int { return &n }

// lookPath finds name on the command's own PATH, inside the run.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	for _, dir := range strings.Split(path, ":") {
		if dir == "" {
			dir = "."
		}
		p := dir + "/" + name
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: command not found", name)
}

// publish forwards connections accepted on a host listener to a port of
// the run, until the supervisor ends.
func (s *server) publish(req request, files []*os.File) error {
	if len(files) != 1 || req.Port < 1 || req.Port > 65535 {
		return errors.New("publish needs a port and a listening socket")
	}
	ln, err := net.FileListener(files[0])
	if err != nil {
		return fmt.Errorf("the host listener: %w", err)
	}
	s.mu.Lock()
	s.ports = append(s.ports, Port{Port: req.Port, HostAddr: req.HostAddr})
	s.mu.Unlock()
	target := fmt.Sprintf("127.0.0.1:%d", req.Port)
	go func() {
		dial := func(ctx context.Context) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", target)
		}
		err := netns.Forward(context.Background(), ln, dial)
		log.Printf("forwarding %s to %s ended: %v", req.HostAddr, target, err)
	}()
	return nil
}

// stop ends the services and commands with SIGTERM, waits up to grace,
// then kills whatever is left in the run's pid namespace.
func (s *server) stop(grace time.Duration) {
	if grace <= 0 {
		grace = defaultGrace
	}
	s.mu.Lock()
	s.stopping = true
	var waits []<-chan struct{}
	for _, svc := range s.services {
		waits = append(waits, svc.terminate())
	}
	for pid := range s.execs {
		syscall.Kill(-pid, syscall.SIGTERM)
	}
	s.mu.Unlock()
	deadline := time.After(grace)
	for _, w := range waits {
		select {
		case <-w:
		case <-deadline:
		}
	}
	syscall.Kill(-1, syscall.SIGKILL) // as the namespace's first process: everyone else in it
	if s.flushRefusals != nil {
		s.flushRefusals()
	}
}

func (s *server) markStopping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopping = true
}

func (s *server) isStopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopping
}
