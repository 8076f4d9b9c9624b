package runtime

import (
	"context"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/netns"
	"github.com/tinehq/tine/supervisor"
)

const claimFresh = 30 * time.Second

// claimAddr returns the address r's network namespace gets: the one the
// store records for it when nobody else holds it, else a new one, which the
// caller records.
func (m *Manager) claimAddr(ctx context.Context, r engine.Ref) (netip.Addr, error) {
	if err := os.MkdirAll(m.addrDir, 0o700); err != nil {
		return netip.Addr{}, err
	}
	unlock, err := flock.Lock(filepath.Join(filepath.Dir(m.addrDir), "addrs.lock"))
	if err != nil {
		return netip.Addr{}, err
	}
	defer unlock()
	used, err := m.usedAddrs(ctx, r)
	if err != nil {
		return netip.Addr{}, err
	}
	a, err := netip.ParseAddr(r.Run.Addr)
	if err != nil || used[a] || !m.net.Defaults().Subnet.Contains(a) {
		list := make([]netip.Addr, 0, len(used))
		for u := range used {
			list = append(list, u)
		}
		if a, err = netns.Allocate(m.net, list); err != nil {
			return a, err
		}
		r.Run.Addr = a.String() // recorded with the run's start; the claim guards it until then
	}
	return a, os.WriteFile(filepath.Join(m.addrDir, a.String()), []byte(m.supDir(r)), 0o600)
}

// usedAddrs are the addresses r may not take: those of this state
// directory's other live runs, and live claims of anyone else's.
func (m *Manager) usedAddrs(ctx context.Context, r engine.Ref) (map[netip.Addr]bool, error) {
	used := map[netip.Addr]bool{}
	err := m.eng.Store().View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{State: tine.StateActive})
		for _, run := range runs {
			if a, err := netip.ParseAddr(run.Addr); err == nil && run.ID != r.Run.ID {
				used[a] = true
			}
		}
		return err
	})
	ents, rerr := os.ReadDir(m.addrDir)
	if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return nil, rerr
	}
	for _, ent := range ents {
		a, perr := netip.ParseAddr(ent.Name())
		if perr != nil {
			continue
		}
		owner, _ := os.ReadFile(filepath.Join(m.addrDir, ent.Name()))
		if string(owner) == m.supDir(r) {
			continue
		}
		if claimAlive(filepath.Join(m.addrDir, ent.Name()), string(owner)) {
			used[a] = true
		}
	}
	return used, err
}

func claimAlive(path, owner string) bool {
	if _, alive, _ := supervisor.Pid(strings.TrimSpace(owner)); alive {
		return true
	}
	st, err := os.Stat(path)
	return err == nil && time.Since(st.ModTime()) < claimFresh
}

// releaseAddr drops r's claim on its address, if it holds one.
func (m *Manager) releaseAddr(r engine.Ref) {
	if r.Run.Addr == "" {
		return
	}
	p := filepath.Join(m.addrDir, r.Run.Addr)
	if owner, err := os.ReadFile(p); err == nil && string(owner) == m.supDir(r) {
		os.Remove(p)
	}
}
