package cgroup

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Bounds on one round of the signal fallback of Kill.
const (
	killFreezeTimeout = time.Second           // a task that will not freeze is signalled anyway
	killSettle        = 50 * time.Millisecond // time for killed tasks to exit before another round
)

// killFile returns the v2 group's cgroup.kill, or "" when the kernel lacks
// it (before Linux 5.14) or there is no v2 group.
func (g *Group) killFile() string {
	if g.noV2Kill || g.v2 == "" {
		return ""
	}
	if p := filepath.Join(g.v2, "cgroup.kill"); exists(p) {
		return p
	}
	return ""
}

// Kill sends SIGKILL to every process in the group and returns once the
// group is empty, or when ctx is done. Processes forked meanwhile die too.
// It uses cgroup.kill where the kernel has it; elsewhere it freezes the
// group so that nothing can fork, signals every member and thaws, until
// no member is left. Kill leaves the group thawed.
func (g *Group) Kill(ctx context.Context) error {
	var err error
	if f := g.killFile(); f != "" {
		err = g.killV2(ctx, f)
	} else {
		err = g.killSignal(ctx)
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: kill: %w", g.name, err)
	}
	return nil
}

// killV2 writes cgroup.kill, then thaws: tasks frozen by a v1 freezer on a
// hybrid machine only act on the signal once they run.
func (g *Group) killV2(ctx context.Context, file string) error {
	if err := writeFile(file, "1"); err != nil {
		return err
	}
	if err := g.Thaw(); err != nil {
		return err
	}
	return g.waitEmpty(ctx)
}

// killSignal repeats freeze, signal, thaw until the group is empty.
func (g *Group) killSignal(ctx context.Context) error {
	return poll(ctx, func() (bool, error) {
		if pids, err := g.Procs(); err != nil || len(pids) == 0 {
			return err == nil, err
		}
		if err := g.killRound(ctx); err != nil {
			return false, err
		}
		settle, cancel := context.WithTimeout(ctx, killSettle)
		defer cancel()
		if err := g.waitEmpty(settle); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return false, err
		}
		return false, nil // poll checks emptiness again
	})
}

// killRound freezes the group, so no member can fork between listing and
// signalling, sends SIGKILL to every member and thaws so they can die. A
// group that cannot be frozen is signalled anyway; the next round gets the
// processes forked meanwhile.
func (g *Group) killRound(ctx context.Context) error {
	if g.freezer() != freezeNone {
		fctx, cancel := context.WithTimeout(ctx, killFreezeTimeout)
		err := g.Freeze(fctx)
		cancel()
		if ctx.Err() != nil {
			return errors.Join(err, g.Thaw())
		}
	}
	pids, err := g.Procs()
	if err == nil {
		err = signalAll(pids, unix.SIGKILL)
	}
	return errors.Join(err, g.Thaw())
}

// signalAll sends sig to every pid; one that has exited already is fine.
func signalAll(pids []int, sig unix.Signal) error {
	for _, pid := range pids {
		if err := unix.Kill(pid, sig); err != nil && err != unix.ESRCH {
			return fmt.Errorf("signal %d: %w", pid, err)
		}
	}
	return nil
}

// waitEmpty waits until the group has no processes.
func (g *Group) waitEmpty(ctx context.Context) error {
	return poll(ctx, func() (bool, error) {
		pids, err := g.Procs()
		return len(pids) == 0, err
	})
}
