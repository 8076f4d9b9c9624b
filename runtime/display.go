package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/desktop"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/supervisor"
)

// displayOn reports whether run r has a display of its own: tine.toml asks
// for one ([display] enabled, or a service with display = true), or the
// run or its parent was started with one (tine start --display, want).
// mark says the run is to be marked for it (see markDisplay): when it has
// one that tine.toml does not ask for.
func (m *Manager) displayOn(r engine.Ref, cfg *config.Config, want bool) (on, mark bool) {
	if cfg.DisplayOn() {
		return true, false
	}
	if want {
		return true, true
	}
	marked := func(run string) bool {
		_, err := os.Stat(m.lay.Run(r.Workspace.ID, run).Display())
		return err == nil
	}
	if marked(r.Run.ID) {
		return true, false
	}
	if r.Run.Parent != "" && marked(r.Run.Parent) {
		return true, true
	}
	return false, false
}

// markDisplay records that r has a display tine.toml may not ask for, so
// that it keeps it and its forks get one.
func (m *Manager) markDisplay(r engine.Ref) error {
	if err := os.WriteFile(m.lay.Run(r.Workspace.ID, r.Run.ID).Display(), nil, 0o644); err != nil {
		return fmt.Errorf("recording %s's display: %w", r.Run.Name, err)
	}
	return nil
}

// checkDisplay refuses a display for r, whose supervisor runs, when
// it was started without one: its network and /tmp are not its own, so an
// X server there would not be the run's alone.
func (m *Manager) checkDisplay(ctx context.Context, r engine.Ref) error {
	st, err := supervisor.NewClient(m.supDir(r)).Status(ctx)
	if err != nil {
		return err
	}
	if st.Display == "" {
		return tine.Optionf("%s runs without a display, and a display needs the run started with one: tine stop %s, then tine start %s %s (or with [display] enabled = true in tine.toml): %w",
			r.Run.Name, r.Run.Name, r.Run.Name, tine.Opt("display"), tine.ErrState)
	}
	return nil
}

// displayStack is the display stack's services of r, for a width×height
// display ([display] size); it refuses a service of tine.toml that takes
// one of their names.
func (m *Manager) displayStack(r engine.Ref, cfg *config.Config) ([]supervisor.Service, error) {
	for _, s := range cfg.Services {
		if desktop.Reserved(s.Name) {
			return nil, fmt.Errorf("service %q: the name is the display's own: %w", s.Name, tine.ErrInvalid)
		}
	}
	w, h, err := cfg.Display.Dimensions()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, tine.ErrInvalid)
	}
	var out []supervisor.Service
	for _, c := range desktop.Stack(w, h) {
		out = append(out, supervisor.Service{Name: c.Name, Command: c.Command, Dir: r.Workspace.Path,
			ReadyCommand: c.ReadyCommand, ReadyTimeout: 20 * time.Second, Restart: config.RestartOnFailure})
	}
	return out, nil
}

// startDisplay starts r's display stack, each service once the one before
// is ready, and returns once its window manager manages the screen, so
// that the services that draw on it find it.
// It returns the run's services as they are then.
func (m *Manager) startDisplay(ctx context.Context, r engine.Ref, cfg *config.Config, skip map[string]bool) ([]supervisor.ServiceStatus, error) {
	stack, err := m.displayStack(r, cfg)
	if err != nil {
		return nil, err
	}
	stack = slices.DeleteFunc(stack, func(s supervisor.Service) bool { return skip[s.Name] })
	// One at a time: a batch's services start together, and the window
	// manager must find the X server taking clients, as the apps must
	// find the manager managing.
	var st []supervisor.ServiceStatus
	for _, s := range stack {
		if st, err = supervisor.NewClient(m.supDir(r)).StartServices(ctx, []supervisor.Service{s}, false); err != nil {
			return st, fmt.Errorf("%s's display: %w", r.Run.Name, err)
		}
	}
	m.armIdle(r, cfg)
	return st, nil
}

// noteDisplays says, in each fork's report, how its display came to be:
// forked live by CRIU (its X server restored, with whichever clients
// could be: each service's choice says), or restarted from the fork's
// files (the display stack and its services started fresh), and takes
// the stack out of the restarted services.
func noteDisplays(reports []engine.LiveReport) {
	for i := range reports {
		rep := &reports[i]
		switch {
		case slices.ContainsFunc(rep.Forked, func(p engine.LiveProcess) bool { return p.Service == desktop.ServiceX }):
			rep.Display = engine.LiveCRIU
		case slices.ContainsFunc(rep.Services, func(s tine.ServiceStatus) bool { return s.Name == desktop.ServiceX }):
			rep.Display = engine.LiveRerun
		default:
			continue
		}
		rep.Restarted = slices.DeleteFunc(rep.Restarted, desktop.Reserved)
	}
}

// Screen returns a PNG of run ref's display as it is now. The dump comes
// from a program in the run, so no more of it is kept than a screen of
// the run's size holds.
func (m *Manager) Screen(ctx context.Context, ref string) ([]byte, error) {
	if err := m.requireDisplay(ctx, ref, "screen"); err != nil {
		return nil, err
	}
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	cfg, err := m.eng.Config(ctx, r)
	if err != nil {
		return nil, err
	}
	w, h, err := cfg.Display.Dimensions()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, tine.ErrInvalid)
	}
	var dump *capped
	var res *ExecResult
	for try := 0; ; try++ {
		dump = &capped{max: desktop.MaxDump(w, h)}
		res, err = m.ExecWith(ctx, r.Run.ID, ExecOptions{Args: desktop.ScreenArgs(), Stdout: dump, Timeout: 30 * time.Second})
		if err != nil {
			return nil, err
		}
		// xwd walks the window tree (a display with several visuals):
		// a window closed meanwhile fails it with BadWindow. Again.
		if res.Exit == 0 || try == screenTries-1 || !strings.Contains(res.Stderr, "BadWindow") {
			break
		}
	}
	if res.Exit != 0 {
		return nil, fmt.Errorf("xwd in %s exited with status %d: %s", res.Run, res.Exit, firstLineOf(res.Stderr))
	}
	if dump.over {
		return nil, fmt.Errorf("the screen dump of %s is larger than a %dx%d screen: %w", res.Run, w, h, desktop.ErrXWD)
	}
	img, err := desktop.DecodeXWD(dump.buf.Bytes())
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&out, img); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// screenTries is how many times Screen runs xwd when a window closed while
// it walked the window tree.
const screenTries = 3

// Input performs in on run ref's display.
func (m *Manager) Input(ctx context.Context, ref string, in desktop.Input) error {
	args, err := in.Args()
	if err != nil {
		return fmt.Errorf("%w: %w", err, tine.ErrInvalid)
	}
	if err := m.requireDisplay(ctx, ref, "input"); err != nil {
		return err
	}
	res, err := m.ExecWith(ctx, ref, ExecOptions{Args: args, Timeout: 30 * time.Second})
	if err != nil {
		return err
	}
	if res.Exit != 0 {
		return fmt.Errorf("xdotool in %s exited with status %d: %s", res.Run, res.Exit, firstLineOf(res.Stderr))
	}
	return nil
}

// requireDisplay refuses a run whose display is not up, after recording
// a use of it by by (screen, input, vnc) and starting it again when it was
// stopped for being idle.
func (m *Manager) requireDisplay(ctx context.Context, ref, by string) error {
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return err
	}
	if m.supervised(r) == 0 {
		return fmt.Errorf("%s is not running, so its display is not up: %w", r.Run.Name, tine.ErrState)
	}
	m.touchDisplay(r)
	if err := m.wakeDisplay(ctx, r, by); err != nil {
		return fmt.Errorf("starting %s's idle display again: %w", r.Run.Name, err)
	}
	if !m.DisplayUp(ctx, r) {
		return fmt.Errorf("%s has no display up (start it with [display] enabled = true in tine.toml, or tine start --display): %w", r.Run.Name, tine.ErrState)
	}
	return nil
}

// DisplayUp reports whether run r's display is up: its X server is a
// ready service of its supervisor, or was forked live into r and runs.
func (m *Manager) DisplayUp(ctx context.Context, r engine.Ref) bool {
	if m.supervised(r) == 0 {
		return false
	}
	if m.adoptedX(r) > 0 {
		return true
	}
	st, err := supervisor.NewClient(m.supDir(r)).Status(ctx)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(st.Services, func(s supervisor.ServiceStatus) bool {
		return s.Name == desktop.ServiceX && s.State == supervisor.StateReady
	})
}

// capped keeps what is written to it up to max bytes, and notes that more
// came; it never fails a write, so the writer is drained.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if c.over || c.buf.Len()+len(p) > c.max {
		c.over = true
		return len(p), nil
	}
	return c.buf.Write(p)
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// withTmp is h with a /tmp of the run's own, where a display's X server
// keeps its lock file.
func withTmp(h *supervisor.Hide) *supervisor.Hide {
	if h == nil {
		h = &supervisor.Hide{}
	}
	h.Tmp = true
	return h
}

// DialDisplay connects to the VNC server of run ref's display: the X
// server its supervisor started, through its own socket, and only when
// that X server is what listens there (desktop.DialVNC); a run that put a
// server of its own in its place is refused.
func (m *Manager) DialDisplay(ctx context.Context, ref string) (net.Conn, error) {
	if err := m.requireDisplay(ctx, ref, "vnc"); err != nil {
		return nil, err
	}
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	pid, err := m.displayServer(ctx, r)
	if err != nil {
		return nil, err
	}
	conn, err := desktop.DialVNC(ctx, pid)
	if errors.Is(err, desktop.ErrNotTheServer) {
		return nil, fmt.Errorf("%s's display: %w (refused): %w", r.Run.Name, err, tine.ErrState)
	}
	if err != nil {
		return nil, fmt.Errorf("%s's display: %w", r.Run.Name, err)
	}
	return m.heldOpen(r, conn), nil
}

// displayServer returns the host pid of run r's X server: the process of
// its supervisor's display service, found in the run's cgroup by its pid
// in the run's pid namespace.
func (m *Manager) displayServer(ctx context.Context, r engine.Ref) (int, error) {
	if pid := m.adoptedX(r); pid > 0 {
		return pid, nil
	}
	sup := m.supervised(r)
	st, err := supervisor.NewClient(m.supDir(r)).Status(ctx)
	if err != nil {
		return 0, err
	}
	i := slices.IndexFunc(st.Services, func(s supervisor.ServiceStatus) bool { return s.Name == desktop.ServiceX })
	if sup == 0 || i < 0 || st.Services[i].Pid == 0 {
		return 0, fmt.Errorf("%s has no display up: %w", r.Run.Name, tine.ErrState)
	}
	cg, err := cgroup.Load(r.Run.ID)
	if err != nil {
		return 0, err
	}
	pids, err := cg.Procs()
	if err != nil {
		return 0, err
	}
	ns := pidNamespace(sup)
	for _, pid := range pids {
		if readProcess(pid).NSPid == st.Services[i].Pid && ns != "" && pidNamespace(pid) == ns {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("%s's X server (pid %d in the run) is not in its cgroup: %w", r.Run.Name, st.Services[i].Pid, tine.ErrState)
}

// adoptedX is the host pid of r's X server when it was forked live into
// r (restored by CRIU: the supervisor did not start it) and runs, or 0.
func (m *Manager) adoptedX(r engine.Ref) int {
	for _, a := range m.adopted(r) {
		if a.Service == desktop.ServiceX {
			return a.Pid
		}
	}
	return 0
}

// pidNamespace names the pid namespace of process pid ("" when it is
// gone).
func pidNamespace(pid int) string {
	ns, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return ns
}

// heldOpen counts conn as a VNC client of r's display, which is not idle
// while it is connected, until it is closed.
func (m *Manager) heldOpen(r engine.Ref, conn net.Conn) net.Conn {
	m.vnc.add(r.Run.ID, 1)
	return &vncConn{Conn: conn, release: sync.OnceFunc(func() {
		m.vnc.add(r.Run.ID, -1)
		m.touchDisplay(r)
	})}
}

// vncConn is a connection to a display's VNC server that calls release
// once when closed.
type vncConn struct {
	net.Conn
	release func()
}

func (c *vncConn) Close() error {
	defer c.release()
	return c.Conn.Close()
}
