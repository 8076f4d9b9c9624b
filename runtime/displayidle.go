package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/desktop"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/tick"
	"github.com/tinehq/tine/supervisor"
)

// A fork's display that nobody watches or drives for [display]
// idle_timeout is stopped, with the services that draw on it, by the
// daemon's watcher (WatchDisplays); a screenshot, input or a VNC client
// starts it again from the fork's files. Its use is kept in two files of
// the run's directory: DisplayActive, whose modification time is the last
// use (and which holds the timeout), and DisplayIdle, while it is stopped.
// A VNC client counts as use for as long as it is connected: the bridges
// are the daemon's, so it counts them in memory (vncClients).

// IdleDisplay says that a fork's display was stopped for being idle.
type IdleDisplay struct {
	Stopped  time.Time `json:"stopped"`
	After    string    `json:"after"`    // the idle timeout
	Services []string  `json:"services"` // what was stopped
}

// vncClients counts the VNC clients each run's display has in this
// process (the daemon's bridges).
type vncClients struct {
	mu   sync.Mutex
	open map[string]int
}

func (v *vncClients) add(run string, n int) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.open == nil {
		v.open = map[string]int{}
	}
	if v.open[run] += n; v.open[run] <= 0 {
		delete(v.open, run)
	}
}

func (v *vncClients) count(run string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.open[run]
}

// armIdle records, as r's display starts, that it is used now and may be
// stopped once idle: a fork's with a timeout, never a source's.
func (m *Manager) armIdle(r engine.Ref, cfg *config.Config) {
	rd := m.lay.Run(r.Workspace.ID, r.Run.ID)
	os.Remove(rd.DisplayIdle())
	if r.Run.Role != tine.RoleFork || cfg.Display.Idle() <= 0 {
		os.Remove(rd.DisplayActive())
		return
	}
	if err := atomicfile.Write(rd.DisplayActive(), []byte(cfg.Display.Idle().String()+"\n"), 0o644); err != nil {
		m.warn("recording the use of %s's display: %v", r.Run.Name, err)
	}
}

// touchDisplay records a use of r's display now.
func (m *Manager) touchDisplay(r engine.Ref) {
	now := time.Now()
	os.Chtimes(m.lay.Run(r.Workspace.ID, r.Run.ID).DisplayActive(), now, now)
}

// idleTimeout returns how long r's display has been unused and its idle
// timeout; 0, 0 when it is never stopped for that.
func (m *Manager) idleTimeout(r engine.Ref) (idle, timeout time.Duration) {
	p := m.lay.Run(r.Workspace.ID, r.Run.ID).DisplayActive()
	st, err := os.Stat(p)
	if err != nil {
		return 0, 0
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return 0, 0
	}
	if timeout, err = time.ParseDuration(strings.TrimSpace(string(b))); err != nil || timeout <= 0 {
		return 0, 0
	}
	return time.Since(st.ModTime()), timeout
}

// IdleDisplayOf returns how r's display was stopped for being idle, or
// nil when it was not.
func (m *Manager) IdleDisplayOf(r engine.Ref) *IdleDisplay {
	b, err := os.ReadFile(m.lay.Run(r.Workspace.ID, r.Run.ID).DisplayIdle())
	if err != nil {
		return nil
	}
	var d IdleDisplay
	if json.Unmarshal(b, &d) != nil {
		return nil
	}
	return &d
}

// displayServices are the names of r's display stack and of the services
// of cfg that draw on it.
func displayServices(cfg *config.Config) []string {
	names := []string{desktop.ServiceX, desktop.ServiceWM}
	for _, s := range cfg.Services {
		if s.Display {
			names = append(names, s.Name)
		}
	}
	return names
}

// StopIdleDisplays stops the display of every running fork that has had
// no VNC client, screenshot or input for its idle timeout, and returns
// their names.
func (m *Manager) StopIdleDisplays(ctx context.Context) []string {
	var names []string
	for _, f := range m.activeForks(ctx) {
		if m.stopIfIdle(ctx, f) {
			names = append(names, f.Run.Name)
		}
	}
	return names
}

// WatchDisplays runs StopIdleDisplays every interval until ctx ends; tine
// serve runs it.
func (m *Manager) WatchDisplays(ctx context.Context, every time.Duration, say func(format string, args ...any)) {
	tick.Every(ctx, every, func() {
		if names := m.StopIdleDisplays(ctx); len(names) > 0 && say != nil {
			say("stopped the idle display of %s", strings.Join(names, ", "))
		}
	})
}

// stopIfIdle stops fork f's display and the services that draw on it when
// it is idle, and records it; it reports whether it did.
func (m *Manager) stopIfIdle(ctx context.Context, f engine.Ref) bool {
	idle, timeout := m.idleTimeout(f)
	if timeout == 0 || idle < timeout || m.vnc.count(f.Run.ID) > 0 || m.supervised(f) == 0 {
		return false
	}
	// Under the run's lock, as the watcher that revives ended copies
	// (reviveEnded) holds it: else it may find the display's copy ended
	// by this stop and start the display again beside it.
	f, unlock, err := m.eng.LockRun(ctx, f.Run.ID)
	if err != nil {
		return false
	}
	defer unlock()
	if m.supervised(f) == 0 {
		return false
	}
	cfg, err := m.eng.Config(ctx, f)
	if err != nil {
		m.warn("stopping %s's idle display: %v", f.Run.Name, err)
		return false
	}
	names := displayServices(cfg)
	if _, err := supervisor.NewClient(m.supDir(f)).StopServices(ctx, names, m.stopGrace); err != nil {
		m.warn("stopping %s's idle display: %v", f.Run.Name, err)
		return false
	}
	m.endAdopted(f, names)
	rd := m.lay.Run(f.Workspace.ID, f.Run.ID)
	d := IdleDisplay{Stopped: time.Now().UTC(), After: timeout.String(), Services: names}
	b, _ := json.Marshal(d)
	if err := atomicfile.Write(rd.DisplayIdle(), b, 0o644); err != nil {
		m.warn("recording %s's idle display: %v", f.Run.Name, err)
	}
	os.Remove(rd.DisplayActive())
	m.appendEvent(ctx, f, tine.EventDisplayIdle, d)
	return true
}

// endAdopted forgets the copies of services names forked live into r (a
// display restored by CRIU, which its supervisor did not start and
// cannot stop), then ends them, so that r's supervisor starts them
// afresh when asked. Forgotten first: a copy seen ended while still
// recorded is one its origin took along, which is started again.
func (m *Manager) endAdopted(r engine.Ref, names []string) {
	var ended, keep []Adopted
	for _, a := range m.readAdopted(r) {
		if slices.Contains(names, a.Service) {
			ended = append(ended, a)
		} else {
			keep = append(keep, a)
		}
	}
	if len(ended) == 0 {
		return
	}
	if err := m.writeAdopted(r, keep); err != nil {
		m.warn("updating %s's live-forked processes: %v", r.Run.Name, err)
		return
	}
	for _, a := range ended {
		if a.alive() {
			syscall.Kill(a.Pid, syscall.SIGKILL)
		}
	}
	endedCopies(ended)
	m.forgetChoices(r, names)
}

// wakeDisplay starts again r's display when it was stopped for being idle,
// with the services that draw on it, from r's files, and records that by
// (screen, input, vnc) woke it. Of callers at the same time, one starts
// it; the others wait until it is up.
func (m *Manager) wakeDisplay(ctx context.Context, r engine.Ref, by string) error {
	rd := m.lay.Run(r.Workspace.ID, r.Run.ID)
	d := m.IdleDisplayOf(r)
	if err := os.Remove(rd.DisplayIdle()); errors.Is(err, fs.ErrNotExist) {
		return m.waitDisplay(ctx, r)
	}
	cfg, err := m.eng.Config(ctx, r)
	if err == nil {
		err = m.startDisplayServices(ctx, r, cfg)
	}
	if err != nil {
		if d != nil { // still stopped: the next use tries again
			b, _ := json.Marshal(d)
			atomicfile.Write(rd.DisplayIdle(), b, 0o644)
		}
		return err
	}
	m.appendEvent(ctx, r, tine.EventDisplayWake, map[string]any{"by": by})
	return nil
}

// startDisplayServices starts r's display stack and then the services of
// cfg that draw on it, waiting until they are ready.
func (m *Manager) startDisplayServices(ctx context.Context, r engine.Ref, cfg *config.Config) error {
	if _, err := m.startDisplay(ctx, r, cfg, nil); err != nil {
		return err
	}
	svcs := slices.DeleteFunc(m.services(r, cfg, nil), func(s supervisor.Service) bool {
		return !slices.Contains(displayServices(cfg), s.Name)
	})
	if len(svcs) == 0 {
		return nil
	}
	_, err := supervisor.NewClient(m.supDir(r)).StartServices(ctx, svcs, false)
	return err
}

// waitDisplay waits while r's X server is starting (another caller woke
// it).
func (m *Manager) waitDisplay(ctx context.Context, r engine.Ref) error {
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		st, err := supervisor.NewClient(m.supDir(r)).Status(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(st.Services, func(s supervisor.ServiceStatus) bool { return s.Name == desktop.ServiceX })
		if i < 0 || st.Services[i].State != supervisor.StateStarting {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// appendEvent records an event of kind on r, warning when it cannot.
func (m *Manager) appendEvent(ctx context.Context, r engine.Ref, kind tine.EventKind, detail any) {
	err := m.eng.Store().Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(tine.NewEvent(time.Now(), r.Workspace.ID, r.Run.ID, kind, detail))
	})
	if err != nil {
		m.warn("recording %s on %s: %v", kind, r.Run.Name, err)
	}
}
