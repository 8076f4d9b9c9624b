package runtime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tinehq/tine/cgroup"
	"github.com/tinehq/tine/desktop"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/livefork"
)

// A display is forked live as one group: its X server and the clients
// drawing on it (the window manager, the services with display = true)
// are separate trees under the supervisor, joined by unix connections
// that criu refuses to cut ("External socket is used"). So the source is
// frozen while each tree is dumped (criu seizes it in the frozen cgroup,
// --freeze-cgroup, and leaves it frozen), every connection between them
// is dumped as external at both ends, and each fork gets a socket pair per
// connection, one end restored into the X server, the other into its
// client: both ends as they were at one instant. A client criu cannot
// carry (or a VNC client of the daemon's, outside the group) gets a socket
// whose other end is closed: the X server sees it hang up, and a restarted
// client opens its windows afresh. Without its X server restored, no
// client is.

// displayGroup splits the CRIU candidates of p into its display's (the X
// server first) and the rest. A display client goes with the others'
// fate: without the X server among the candidates, it is refused.
func (m *Manager) displayGroup(ctx context.Context, p engine.Ref, cands []candidate) (screen, rest []candidate) {
	cfg, err := m.eng.Config(ctx, p)
	if err != nil {
		return nil, cands
	}
	names := displayServices(cfg)
	for _, c := range cands {
		if c.Service != "" && slices.Contains(names, c.Service) {
			screen = append(screen, c)
		} else {
			rest = append(rest, c)
		}
	}
	slices.SortStableFunc(screen, func(a, b candidate) int {
		return boolInt(b.Service == desktop.ServiceX) - boolInt(a.Service == desktop.ServiceX)
	})
	return screen, rest
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// criuDisplay checkpoints the display group of p (X server first) at one
// instant and restores it into each fork, reporting each member's outcome
// to done.
func (m *Manager) criuDisplay(ctx context.Context, p engine.Ref, forks []launched, group []candidate, done func(launched, candidate, liveOutcome)) {
	fail := func(c candidate, err error) {
		for _, f := range forks {
			if f.pid != 0 {
				done(f, c, liveOutcome{err: err})
			}
		}
	}
	if group[0].Service != desktop.ServiceX {
		for _, c := range group {
			fail(c, fmt.Errorf("the display's X server (%s) is not forked live, and a client of it is only with it", desktop.ServiceX))
		}
		return
	}
	dumps, links, cleanup, err := m.dumpDisplay(ctx, p, group)
	defer cleanup()
	if err != nil {
		for _, c := range group {
			fail(c, err)
		}
		return
	}
	for i, c := range group {
		if dumps[i].err != nil {
			fail(c, dumps[i].err)
		}
	}
	var wg sync.WaitGroup
	for _, f := range forks {
		if f.pid == 0 {
			continue
		}
		wg.Go(func() {
			for i, o := range m.restoreDisplay(ctx, f, group, dumps, links) {
				if dumps[i].err == nil {
					done(f, group[i], o)
				}
			}
		})
	}
	wg.Wait()
}

// displayDump is one member's checkpoint, or why it has none.
type displayDump struct {
	d   *livefork.Dump
	err error
}

// dumpDisplay checkpoints each tree of group, p's cgroup frozen the while,
// each with its connections outside its tree as external sockets. The
// X server's failure fails all. cleanup removes the images.
func (m *Manager) dumpDisplay(ctx context.Context, p engine.Ref, group []candidate) ([]displayDump, [][]livefork.UnixLink, func(), error) {
	var removes []func()
	cleanup := func() {
		for _, r := range removes {
			r()
		}
	}
	pids := make([]int, len(group))
	for i, c := range group {
		pids[i] = c.Pid
	}
	cg, err := cgroup.Load(p.Run.ID)
	if err != nil {
		return nil, nil, cleanup, err
	}
	if cg.FreezerDir() == "" {
		return nil, nil, cleanup, fmt.Errorf("%s's cgroup has no freezer, which a display forked live needs (its X server and clients dumped at one instant)", p.Run.Name)
	}
	start := time.Now()
	frozen, err := m.freeze(ctx, p)
	if err != nil {
		return nil, nil, cleanup, err
	}
	thaw := sync.OnceFunc(frozen)
	defer thaw()
	links, err := livefork.UnixLinks(m.supervised(p), pids)
	if err != nil {
		return nil, nil, cleanup, err
	}
	out := make([]displayDump, len(group))
	for i, c := range group {
		dir, remove, err := livefork.ImagesDir(filepath.Join(m.supDir(p), fmt.Sprintf("criu-%d", c.Pid)))
		if err == nil {
			removes = append(removes, remove)
			out[i].d, err = livefork.CRIUDump(ctx, livefork.DumpSpec{Pid: c.Pid, Namespaces: m.supervised(p), Dir: dir,
				Hidden: m.hiddenIn(p), Sockets: inodes(links[i]), FrozenCgroup: cg.FreezerDir()})
		}
		if out[i].err = err; err != nil && i == 0 {
			return nil, nil, cleanup, fmt.Errorf("the display's X server: %w", err)
		}
	}
	thaw()
	pause := time.Since(start) // the source's pause: every dump, frozen
	for _, o := range out {
		if o.d != nil {
			o.d.Pause = pause
		}
	}
	return out, links, cleanup, nil
}

func inodes(links []livefork.UnixLink) []uint64 {
	out := make([]uint64, len(links))
	for i, l := range links {
		out[i] = l.Ino
	}
	return out
}

// restoreDisplay restores the dumped members of group into fork f, the X
// server first, each connection between two of them a new socket pair
// there. A member not restored has its ends closed, which its peers read
// as a hang-up. It returns each member's outcome.
func (m *Manager) restoreDisplay(ctx context.Context, f launched, group []candidate, dumps []displayDump, links [][]livefork.UnixLink) []liveOutcome {
	ends, err := socketEnds(dumps, links)
	defer func() {
		for _, e := range ends {
			for _, s := range e {
				s.Close()
			}
		}
	}()
	out := make([]liveOutcome, len(group))
	for i, c := range group {
		switch {
		case dumps[i].err != nil:
			continue
		case err != nil:
			out[i].err = err
		case i > 0 && out[0].err != nil:
			out[i].err = fmt.Errorf("the display's X server was not restored in %s, so no client of it is", f.ref.Run.Name)
		default:
			out[i] = m.restoreInto(ctx, dumps[i].d, f, c, ends[i])
		}
		for _, s := range ends[i] { // the restored tree has its own; a member not restored hangs up
			s.Close()
		}
		ends[i] = nil
	}
	return out
}

// socketEnds makes, for one fork, the sockets each dumped member is given
// for its external unix sockets: a socket pair per connection between two
// dumped members, an end whose peer is closed for any other.
func socketEnds(dumps []displayDump, links [][]livefork.UnixLink) ([]map[uint64]*os.File, error) {
	owner := map[uint64]int{}
	for i, ls := range links {
		if dumps[i].err == nil {
			for _, l := range ls {
				owner[l.Ino] = i
			}
		}
	}
	ends := make([]map[uint64]*os.File, len(links))
	for i := range ends {
		ends[i] = map[uint64]*os.File{}
	}
	for i, ls := range links {
		if dumps[i].err != nil {
			continue
		}
		for _, l := range ls {
			if ends[i][l.Ino] != nil {
				continue // made with its peer's
			}
			a, b, err := socketPair(l.Ino)
			if err != nil {
				return ends, err
			}
			ends[i][l.Ino] = a
			if j, ok := owner[l.Peer]; ok {
				ends[j][l.Peer] = b
			} else {
				b.Close()
			}
		}
	}
	return ends, nil
}

// socketPair makes a connected pair of stream unix sockets standing for
// the socket ino.
func socketPair(ino uint64) (*os.File, *os.File, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, fmt.Errorf("a socket pair for the unix socket %d: %w", ino, err)
	}
	name := fmt.Sprintf("socket:[%d]", ino)
	return os.NewFile(uintptr(fds[0]), name), os.NewFile(uintptr(fds[1]), name), nil
}
