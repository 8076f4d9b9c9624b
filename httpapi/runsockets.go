package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/runtime"
	"github.com/tinehq/tine/supervisor"
)

// RunSocket is where code inside a run finds the daemon: its run's own
// socket (engine.Engine.RunSocketPath), not the people's.
const RunSocket = supervisor.RunDir + "/ctl/tine.sock"

// RunSockets gives every live run a socket of its own, in the run's
// capability directory (engine.Engine.RunSocketPath), which the run sees at
// RunSocket. A request on it is that run's, whatever the caller's cgroup:
// it must be signed with that run's capability, and it never acts for a
// person. The people's socket, in turn, refuses code inside runs
// (ConnContext), so the socket a request arrives on, which code in a run
// cannot change, says whose it is.
type RunSockets struct {
	e       *engine.Engine
	h       http.Handler
	t       Timeouts
	limit   *ConnLimiter // one pool for every run's socket
	mu      sync.Mutex
	socks   map[string]*runSocket // by run id
	closed  bool
	lastErr string
}

// runHeader bounds a request's header on a run's socket: it carries the
// request signed, its body within (the largest route's, base64).
const runHeader = maxBody*4/3 + 16<<10

// runSocket is one run's listener and its server.
type runSocket struct {
	path string
	ino  uint64 // of the socket file it made, to see it replaced
	srv  *http.Server
}

// NewRunSockets returns the run sockets of e, each serving h (wrapped in
// Handler) within t; their connections together are bounded by l, per
// user (the runs of one user share their share). Nothing listens until
// Sync.
func NewRunSockets(e *engine.Engine, h http.Handler, t Timeouts, l Limits) *RunSockets {
	rs := &RunSockets{e: e, t: t, limit: NewConnLimiter(l), socks: map[string]*runSocket{}}
	rs.h = rs.Handler(h)
	return rs
}

// Handler wraps h so that every request that may have changed the runs
// (all but GET) syncs the run sockets before it is answered: a run
// started or forked through the daemon has its socket by then.
func (rs *RunSockets) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			rs.Sync(context.WithoutCancel(r.Context()))
		}
	})
}

// Sync listens on the socket of every live run whose capability directory
// exists and closes those of runs no longer live. It returns the first
// error; the other runs are served regardless.
func (rs *RunSockets) Sync(ctx context.Context) error {
	var refs []engine.Ref
	err := rs.e.Store().View(ctx, func(tx tine.Tx) error {
		ws, err := tx.Workspaces()
		if err != nil {
			return err
		}
		for _, w := range ws {
			runs, err := tx.Runs(tine.RunFilter{Workspace: w.ID})
			if err != nil {
				return err
			}
			for _, r := range runs {
				if r.Active() {
					refs = append(refs, engine.Ref{Workspace: w, Run: r})
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	want := map[string]engine.Ref{}
	for _, r := range refs {
		// A capability directory is made when the run starts; a run never
		// started has no code to serve, and its directory is not made here
		// (nor remade after a discard removes it).
		if fi, err := os.Stat(rs.e.Layout().Run(r.Workspace.ID, r.Run.ID).Cap()); err == nil && fi.IsDir() {
			want[r.Run.ID] = r
		}
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return nil
	}
	for id, s := range rs.socks {
		if _, ok := want[id]; !ok || inode(s.path) != s.ino {
			s.srv.Close()
			if inode(s.path) == s.ino {
				os.Remove(s.path)
			}
			delete(rs.socks, id)
		}
	}
	var first error
	for id, r := range want {
		if _, ok := rs.socks[id]; ok {
			continue
		}
		s, err := rs.listen(r)
		if err != nil {
			if first == nil {
				first = fmt.Errorf("the socket of run %s: %w", r.Run.Name, err)
			}
			continue
		}
		rs.socks[id] = s
	}
	return first
}

// listen serves run r's socket.
func (rs *RunSockets) listen(r engine.Ref) (*runSocket, error) {
	path := rs.e.Layout().Run(r.Workspace.ID, r.Run.ID).Socket()
	ln, err := listenUnixAt(path)
	if err != nil {
		return nil, err
	}
	// The run's processes run as the workspace's owner and must connect.
	if err := engine.GiveToOwner(r.Workspace, path); err != nil {
		ln.Close()
		return nil, err
	}
	ref := r
	srv := NewHTTPServer(rs.h, rs.t, runConnContext(r.Run.ID, func() int { return runtime.Of(rs.e).SupervisorPid(ref) }))
	srv.MaxHeaderBytes = runHeader
	go srv.Serve(rs.limit.Listener(ln))
	return &runSocket{path: path, ino: inode(path), srv: srv}, nil
}

// Watch syncs every interval until ctx ends, reporting each new error to
// logf: runs started without the daemon get their sockets within it.
func (rs *RunSockets) Watch(ctx context.Context, every time.Duration, logf func(format string, args ...any)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		err := rs.Sync(ctx)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		rs.mu.Lock()
		if msg != rs.lastErr && msg != "" && ctx.Err() == nil {
			logf("%s", msg)
		}
		rs.lastErr = msg
		rs.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Paths lists the sockets served, by run id.
func (rs *RunSockets) Paths() map[string]string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out := map[string]string{}
	for id, s := range rs.socks {
		out[id] = s.path
	}
	return out
}

// Shutdown stops every run socket, letting requests in flight finish
// until ctx ends, and removes the socket files.
func (rs *RunSockets) Shutdown(ctx context.Context) error {
	rs.mu.Lock()
	rs.closed = true
	socks := rs.socks
	rs.socks = map[string]*runSocket{}
	rs.mu.Unlock()
	var errs []error
	for _, s := range socks {
		if err := s.srv.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
		if inode(s.path) == s.ino {
			os.Remove(s.path)
		}
	}
	return errors.Join(errs...)
}

// inode is the inode of path, 0 if it does not exist.
func inode(path string) uint64 {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// listenUnixAt listens on a unix socket at path, mode 0600, replacing what
// is there. A path too long for a socket address is bound through its
// directory's /proc/self/fd entry.
func listenUnixAt(path string) (net.Listener, error) {
	os.Remove(path)
	addr := path
	if len(path) > supervisor.MaxSocketPath {
		d, err := os.Open(filepath.Dir(path))
		if err != nil {
			return nil, err
		}
		defer d.Close()
		addr = "/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/" + filepath.Base(path)
	}
	old := syscall.Umask(0o077)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(false)
	return ln, nil
}
