package engine

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
	"github.com/tinehq/tine/netns"
	"github.com/tinehq/tine/supervisor"
)

// Every state directory on a host shares the tine bridge, so addresses are
// claimed host-wide: a file per address under AddrDir names the supervisor
// directory of the run using it. A claim is live while that supervisor is,
// or for claimFresh after it was made (the supervisor is being launched).
// The directory is on tmpfs, like the namespaces it describes.
var AddrDir = "/run/tine/addrs"

const claimFresh = 30 * time.Second

// claimAddr returns the address r's network namespace gets: the one the
// store records for it when nobody else holds it, else a new one, which the
// caller records.
func (e *Engine) claimAddr(ctx context.Context, r Ref) (netip.Addr, error) {
	if err := os.MkdirAll(AddrDir, 0o700); err != nil {
		return netip.Addr{}, err
	}
	unlock, err := lock(filepath.Join(filepath.Dir(AddrDir), "addrs.lock"))
	if err != nil {
		return netip.Addr{}, err
	}
	defer unlock()
	used, err := e.usedAddrs(ctx, r)
	if err != nil {
		return netip.Addr{}, err
	}
	a, err := netip.ParseAddr(r.Run.Addr)
	if err != nil || used[a] || !NetConfig.Defaults().Subnet.Contains(a) {
		list := make([]netip.Addr, 0, len(used))
		for u := range used {
			list = append(list, u)
		}
		if a, err = netns.Allocate(NetConfig, list); err != nil {
			return a, err
		}
		r.Run.Addr = a.String() // recorded with the run's start; the claim guards it until then
	}
	return a, os.WriteFile(filepath.Join(AddrDir, a.String()), []byte(e.supDir(r)), 0o600)
}

// usedAddrs are the addresses r may not take: those of this state
// directory's other live runs, and live claims of anyone else's.
func (e *Engine) usedAddrs(ctx context.Context, r Ref) (map[netip.Addr]bool, error) {
	used := map[netip.Addr]bool{}
	err := e.store.View(ctx, func(tx tine.Tx) error {
		runs, err := tx.Runs(tine.RunFilter{State: tine.StateActive})
		for _, run := range runs {
			if a, err := netip.ParseAddr(run.Addr); err == nil && run.ID != r.Run.ID {
				used[a] = true
			}
		}
		return err
	})
	ents, rerr := os.ReadDir(AddrDir)
	if rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		return nil, rerr
	}
	for _, ent := range ents {
		a, perr := netip.ParseAddr(ent.Name())
		if perr != nil {
			continue
		}
		owner, _ := os.ReadFile(filepath.Join(AddrDir, ent.Name()))
		if string(owner) == e.supDir(r) {
			continue
		}
		if claimLive(filepath.Join(AddrDir, ent.Name()), string(owner)) {
			used[a] = true
		}
	}
	return used, err
}

func claimLive(path, owner string) bool {
	if _, alive, _ := supervisor.Pid(strings.TrimSpace(owner)); alive {
		return true
	}
	st, err := os.Stat(path)
	return err == nil && time.Since(st.ModTime()) < claimFresh
}

// releaseAddr drops r's claim on its address, if it holds one.
func (e *Engine) releaseAddr(r Ref) {
	if r.Run.Addr == "" {
		return
	}
	p := filepath.Join(AddrDir, r.Run.Addr)
	if owner, err := os.ReadFile(p); err == nil && string(owner) == e.supDir(r) {
		os.Remove(p)
	}
}
