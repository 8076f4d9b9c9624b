package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/dashboard"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/access"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/layer/overlay"
	"github.com/tinehq/tine/layout"
	"github.com/tinehq/tine/metrics"
	"github.com/tinehq/tine/runtime"
)

func newServe(a *app) *cobra.Command {
	var listen string
	var system bool
	var nf nodeFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the tine daemon: the JSON API on a unix socket (and TCP)",
		Long: `Serves tine's JSON HTTP API on the unix socket ctl/tine.sock in the state
directory (mode 0600: whoever may open it has full control, so it refuses
processes inside runs, told by their pid and mount namespaces), a socket of
its own for every run (seen inside at /run/tine/ctl/tine.sock: requests
there are that run's and must carry its capability), and with
--listen also on TCP, where every request needs the bearer token kept in the
state directory's file "token" (created on first use). SIGINT or SIGTERM
stops it gracefully: requests in flight finish; runs and their processes
keep running and the next tine serve finds them. Fork-runs it started
(POST /v1/runs/{run}/fork-run) are canceled: their agents are killed, their
forks kept (state canceled).

With --system (as root; tine setup daemon installs it so) it also serves
every local user on /run/tine/tine.sock (or $TINE_DAEMON_SOCKET; mode
0666, its directory made 0755): each caller is told by SO_PEERCRED and
sees and acts only on their own workspaces and those granted to one of
their groups (tine init --group); root sees all. Their runs' processes run
as them. A normal user's tine serve while the system daemon serves them
(no TINE_HOME or --home) is refused, exit 4, naming their workspaces
there and tine dashboard: their commands go to it already.

The system daemon also listens on TCP for the dashboard: on --listen ADDR,
or by itself on a free loopback port. Every request there needs the bearer
token, or on /ui/ a normal user's dashboard token (tine dashboard hands it
out over the unix socket), which shows only that user's workspaces.

With --node NAME (the store must be PostgreSQL's) it is also a node of a
fleet: it registers, heartbeats, marks lost the tasks of nodes that stopped
heartbeating, and runs up to --capacity queued tasks (tine submit) at once;
see tine tasks and docs/cluster.md. With a PostgreSQL store, a node or
not, it serves the fleet's API (GET /v1/fleet, POST /v1/fleet/tasks),
which tine mcp's submit_tasks and list_tasks use, and the dashboard's
page /ui/fleet.`,
		Example: `  tine serve
  sudo tine serve --system
  tine serve --listen 127.0.0.1:7070
  TINE_STORE_URL=postgres://tine@db/tine tine serve --node build-1 --capacity 4
  curl --unix-socket /var/lib/tine/ctl/tine.sock http://tine/v1/runs`,
		Args: exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			if err := a.servedAlready(c.Context()); err != nil {
				return err
			}
			e, err := a.open(c.Context())
			if err != nil {
				return err
			}
			defer e.Close()
			return a.serve(e, listen, system, nf)
		},
	}
	addNodeFlags(c, &nf)
	c.Flags().StringVar(&listen, "listen", "", "also serve on this TCP address, with the bearer token")
	c.Flags().BoolVar(&system, "system", false, "also serve every local user on "+httpapi.SystemSocket+" (or $TINE_DAEMON_SOCKET)")
	return c
}

func (a *app) serve(e *engine.Engine, listen string, system bool, nf nodeFlags) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	say := func(format string, args ...any) { fmt.Fprintf(a.stderr, "tine serve: "+format+"\n", args...) }
	nd, err := a.startNode(ctx, e, nf, listen, say)
	if err != nil {
		return err
	}
	defer func() {
		stop()
		if nerr := nd.wait(); nerr != nil {
			say("node: %v", nerr)
		}
	}()
	sock := e.Layout().Socket()
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		return err
	}
	uln, err := listenUnix(sock, 0o600)
	if err != nil {
		return err
	}
	var sysLn net.Listener
	if system {
		if sysLn, err = listenSystem(); err != nil {
			uln.Close()
			return err
		}
		defer os.Remove(daemonSocket())
	}
	m := metrics.New(metrics.WithSource(metrics.EngineSource(e)), metrics.WithForkRuns(e), metrics.WithErrorLog(log.New(a.stderr, "tine serve: ", 0)))
	e.SetObserver(m)
	// The system daemon serves every user's dashboard (tine dashboard) on
	// loopback, at a free port unless --listen says where.
	if system && listen == "" {
		listen = "127.0.0.1:0"
	}
	var tln net.Listener
	var token string
	if listen != "" {
		if token, err = loadToken(e.Home()); err == nil {
			tln, err = net.Listen("tcp", listen)
		}
		if err != nil {
			uln.Close()
			return err
		}
	}
	users := access.NewTokens(e.Layout().UserTokens())
	// One API for every listener: the fork-runs it starts are seen, and
	// canceled, from any of them.
	opts := []httpapi.Option{httpapi.WithHookObserver(m.ObserveHook), httpapi.WithInited(nd.homeOfInits(say))}
	if tln != nil {
		opts = append(opts, httpapi.WithDashboard(httpapi.Dashboard{URL: "http://" + tln.Addr().String(), Token: token, Users: users}))
	}
	api := httpapi.New(e, "", opts...)
	// Every run gets a socket of its own; what arrives on it is the run's.
	// The people's socket refuses code inside runs.
	runSocks := httpapi.NewRunSockets(e, a.accessLog(routes(e, m, api, "", nil)), httpapi.DefaultTimeouts, httpapi.DefaultLimits)
	h := func(token string) http.Handler {
		return runSocks.Handler(a.accessLog(nd.guard(token, routes(e, m, api, token, users, nd.dashboardOptions()...))))
	}
	// Each pool of listeners bounds its connections, in all and per peer:
	// the people's sockets (per user), the runs' (in RunSockets), TCP
	// (per address).
	people := httpapi.NewConnLimiter(httpapi.DefaultLimits)
	servers := []*http.Server{httpapi.NewHTTPServer(h(""), httpapi.DefaultTimeouts, httpapi.ConnContext)}
	lns := []net.Listener{people.Listener(uln)}
	if sysLn != nil {
		servers = append(servers, httpapi.NewHTTPServer(h(""), httpapi.DefaultTimeouts, httpapi.ConnContext))
		lns = append(lns, people.Listener(sysLn))
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go runSocks.Watch(watchCtx, time.Second, say)
	go runtime.Of(e).WatchCopies(watchCtx, 2*time.Second, say)
	go runtime.Of(e).WatchDisplays(watchCtx, time.Second, say)
	go runtime.Of(e).WatchLogins(watchCtx, 5*time.Second, say)
	go e.WatchSweep(watchCtx, sweepEvery)
	if trackChanges(say) {
		go e.WatchPreseal(watchCtx, presealEvery, func(p *engine.Presealed) { sayPresealed(say, p) })
	}
	defer overlay.StopTracking()
	fmt.Fprintf(a.stdout, "tine serve: listening on %s\n", sock)
	if sysLn != nil {
		fmt.Fprintf(a.stdout, "tine serve: listening on %s for every local user\n", daemonSocket())
	}
	if tln != nil {
		servers = append(servers, httpapi.NewHTTPServer(h(token), httpapi.DefaultTimeouts, nil))
		lns = append(lns, httpapi.NewConnLimiter(httpapi.DefaultLimits).Listener(tln))
		fmt.Fprintf(a.stdout, "tine serve: listening on %s (bearer token in %s; tine dashboard prints each user's URL)\n", tln.Addr(), layout.New(e.Home()).Token())
		if sysLn == nil {
			// Not the system daemon's: its output goes to a journal that
			// more than root may read, and tine dashboard gives root's URL.
			fmt.Fprintf(a.stdout, "tine serve: dashboard at %s\n", dashboardURL(tln.Addr(), token))
		}
	}
	errc := make(chan error, len(servers))
	for i, srv := range servers {
		go func() { errc <- srv.Serve(lns[i]) }()
	}
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forkRuns := make(chan error, 1)
	go func() { forkRuns <- api.Shutdown(sctx) }() // cancels fork-runs at once
	stopWatch()
	for _, srv := range servers {
		srv.Shutdown(sctx)
	}
	runSocks.Shutdown(sctx)
	if ferr := <-forkRuns; ferr != nil {
		fmt.Fprintf(a.stderr, "tine serve: %v\n", ferr)
	}
	os.Remove(sock)
	fmt.Fprintln(a.stdout, "tine serve: stopped")
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// userTokens is who a dashboard token stands for: its user as the
// account database describes them now (a user deleted has none).
func userTokens(t *access.Tokens) dashboard.UserTokens {
	return func(tok string) *access.Caller {
		uid, ok := t.Check(tok)
		if !ok {
			return nil
		}
		c, err := access.Of(uid)
		if err != nil {
			return nil
		}
		return c
	}
}

// listenUnix listens on path with the given mode, refusing to take over a
// socket a live daemon answers on, and replacing a stale one.
func listenUnix(path string, mode os.FileMode) (net.Listener, error) {
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return nil, fmt.Errorf("a tine daemon already listens on %s", path)
	}
	os.Remove(path)
	old := syscall.Umask(0o077)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err == nil && mode != 0o600 {
		if err = os.Chmod(path, mode); err != nil {
			ln.Close()
		}
	}
	return ln, err
}

// listenSystem listens on the system daemon's socket, which every local
// user may open (the daemon tells them apart by SO_PEERCRED): as root
// only, since it serves them as themselves.
func listenSystem() (net.Listener, error) {
	if os.Geteuid() != 0 {
		return nil, fmt.Errorf("tine serve --system serves every user as themselves and must run as root: %w", tine.ErrPrivilege)
	}
	path := daemonSocket()
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	return listenUnix(path, 0o666)
}

// loadToken returns the state directory's bearer token, making one if needed.
func loadToken(home string) (string, error) {
	path := layout.New(home).Token()
	b, err := os.ReadFile(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	token := hex.EncodeToString(raw)
	return token, os.WriteFile(path, []byte(token+"\n"), 0o600)
}

// accessLog prints one line per request that changes something:
// method, path, status, duration.
func (a *app) accessLog(h http.Handler) http.Handler {
	var mu sync.Mutex
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t0 := time.Now()
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		if r.Method == http.MethodGet {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(a.stdout, "%s %s %s %d %v\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path, sw.code,
			time.Since(t0).Round(time.Millisecond))
	})
}

// statusWriter remembers the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	code int
}

// Unwrap lets http.ResponseController reach the connection (tine exec's
// attach hijacks it, the dashboard's event stream flushes it).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush sends what was written so far, for a handler that asks for an
// http.Flusher.
func (s *statusWriter) Flush() { http.NewResponseController(s.ResponseWriter).Flush() }

func (s *statusWriter) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// forkRunStarter lets the dashboard start fork-runs in api, so they run
// in the daemon like those POST /v1/runs/{ref}/fork-run starts: the API's
// report route follows them and its shutdown cancels them.
func forkRunStarter(api *httpapi.Server) dashboard.ForkRunStarter {
	return func(ctx context.Context, ref string, req forkrun.Request) (string, []string, error) {
		st, err := api.StartForkRun(ctx, ref, req)
		if err != nil {
			return "", nil, err
		}
		return st.Group, st.Warnings, nil
	}
}

// routes serves api at /v1/, the metrics at /metrics and the dashboard
// at /ui/ (those two for people only), behind the bearer token when there
// is one. The dashboard also opens with a normal user's token (users),
// showing only what they may use, as it does for a normal user on a unix
// socket; fleetOpts add the fleet's page and what a node's dashboard does
// (node.dashboardOptions).
func routes(e *engine.Engine, m *metrics.Metrics, api *httpapi.Server, token string, users *access.Tokens, fleetOpts ...dashboard.Option) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", httpapi.RequireToken(token, api))
	mux.Handle("GET /metrics", httpapi.PersonOnly(httpapi.RequireToken(token, m.Handler())))
	opts := []dashboard.Option{dashboard.WithForkRuns(forkRunStarter(api))}
	if users != nil {
		opts = append(opts, dashboard.WithUsers(userTokens(users)))
	}
	opts = append(opts, fleetOpts...)
	mux.Handle("/ui/", httpapi.People(dashboard.New(e, token, opts...)))
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	return mux
}

// sweepEvery is how often the daemon sweeps every workspace whole (a
// command sweeps only where something is left; see engine.Sweep).
const sweepEvery = 10 * time.Minute

// trackChanges starts the overlay backend's change tracker, so the
// daemon's seals of a busy source walk only the directories that changed,
// and reports whether it runs. It needs root; without it seals walk the
// whole delta, as the CLI's do.
func trackChanges(say func(string, ...any)) bool {
	if os.Geteuid() != 0 {
		return false
	}
	err := overlay.Track()
	if err != nil && !errors.Is(err, tine.ErrUnsupported) {
		say("%v (forks of a busy source walk its whole delta)", err)
	}
	return err == nil
}

// presealEvery is how often the daemon looks for busy runs whose writes
// settled, to seal them in the background (engine.WatchPreseal).
const presealEvery = time.Second

// sayPresealed logs a background seal: "sealed ws/source in the
// background (busy): copied 412 changed files (3.1 MiB) in 85 ms".
func sayPresealed(say func(string, ...any), p *engine.Presealed) {
	s := p.Seal
	what := fmt.Sprintf("copied %d changed files (%s)", s.Files, size(s.Bytes))
	if s.Whole {
		what = fmt.Sprintf("copied its whole delta, %d files (%s),", s.Files, size(s.Bytes))
	}
	say("sealed %s/%s in the background (it is busy): %s in %s", display.Text(p.Workspace.Name), display.Text(p.Run.Name), what, msString(s.MS))
}
