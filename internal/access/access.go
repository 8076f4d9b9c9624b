// Package access decides what a person's request may see and act on: root
// and the daemon's own user everything, anyone else the workspaces they own
// and those granted to one of their groups (tine init --group). The API and
// the dashboard ask it the same questions.
package access

import (
	"context"
	"errors"
	"fmt"
	"os/user"
	"strconv"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// Caller is a person limited to their own workspaces. A nil *Caller may
// use every workspace (root, the daemon's own user, the holder of the
// daemon's bearer token).
type Caller struct {
	UID, GID int
	Groups   map[int]bool // the primary group and the supplementary ones
}

// New returns the caller uid with primary group gid and the other groups.
func New(uid, gid int, groups ...int) *Caller {
	c := &Caller{UID: uid, GID: gid, Groups: map[int]bool{gid: true}}
	for _, g := range groups {
		c.Groups[g] = true
	}
	return c
}

// ErrNoUser is a user the account database has no entry for.
var ErrNoUser = errors.New("no such user in this machine's account database")

// Of returns the caller uid as the account database describes them (their
// primary and supplementary groups), or an error when it has no entry.
func Of(uid int) (*Caller, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, fmt.Errorf("user %d: %w", uid, noUser(err))
	}
	return callerOf(u)
}

// Named returns the caller whose user name is name, as Of does; the error
// wraps ErrNoUser when the account database has no such name. Uids are
// per machine and names are what machines' databases share: a fleet node
// serves a user another node forwarded as its own user of that name.
func Named(name string) (*Caller, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("user %q: %w", name, noUser(err))
	}
	return callerOf(u)
}

// Name returns c's user name in the account database; the error wraps
// ErrNoUser when c's uid has no entry.
func (c *Caller) Name() (string, error) {
	u, err := user.LookupId(strconv.Itoa(c.UID))
	if err != nil {
		return "", fmt.Errorf("user %d: %w", c.UID, noUser(err))
	}
	return u.Username, nil
}

// noUser is err, made ErrNoUser when it says the database has no entry.
func noUser(err error) error {
	var uid user.UnknownUserIdError
	var name user.UnknownUserError
	if errors.As(err, &uid) || errors.As(err, &name) {
		return fmt.Errorf("%v: %w", err, ErrNoUser)
	}
	return err
}

// callerOf is the caller of account u.
func callerOf(u *user.User) (*Caller, error) {
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("user %s: uid %q: %w", u.Username, u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("user %s: primary group %q: %w", u.Username, u.Gid, err)
	}
	c := New(uid, gid)
	ids, _ := u.GroupIds()
	for _, s := range ids {
		if g, err := strconv.Atoi(s); err == nil {
			c.Groups[g] = true
		}
	}
	return c, nil
}

type ctxKey struct{}

// With returns ctx carrying c, the person a request acts for.
func With(ctx context.Context, c *Caller) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From is the caller ctx carries, or nil.
func From(ctx context.Context) *Caller {
	c, _ := ctx.Value(ctxKey{}).(*Caller)
	return c
}

// MayUse reports whether c may see and act on w (a nil caller may use all).
func (c *Caller) MayUse(w *tine.Workspace) bool {
	if c == nil || w.UID == c.UID {
		return true
	}
	for _, g := range w.Groups {
		if c.Groups[g] {
			return true
		}
	}
	return false
}

// Records keeps the workspaces' states c may use (never nil).
func (c *Caller) Records(states []engine.WorkspaceRecords) []engine.WorkspaceRecords {
	out := []engine.WorkspaceRecords{}
	for _, st := range states {
		if c.MayUse(st.Workspace) {
			out = append(out, st)
		}
	}
	return out
}

// Usable returns the ids of the workspaces c may use, or nil when it may
// use all.
func (c *Caller) Usable(ctx context.Context, s tine.Store) map[string]bool {
	if c == nil {
		return nil
	}
	out := map[string]bool{}
	s.View(ctx, func(tx tine.Tx) error {
		all, err := tx.Workspaces()
		for _, w := range all {
			if c.MayUse(w) {
				out[w.ID] = true
			}
		}
		return err
	})
	return out
}

// Events keeps the events of the workspaces c may use (never nil).
func (c *Caller) Events(ctx context.Context, s tine.Store, evs []*tine.Event) []*tine.Event {
	mine := c.Usable(ctx, s)
	out := []*tine.Event{}
	for _, ev := range evs {
		if mine == nil || mine[ev.Workspace] {
			out = append(out, ev)
		}
	}
	return out
}

// Approvals keeps the approvals of the workspaces c may use (never nil).
func (c *Caller) Approvals(ctx context.Context, s tine.Store, list []*tine.Approval) []*tine.Approval {
	mine := c.Usable(ctx, s)
	out := []*tine.Approval{}
	for _, a := range list {
		if mine == nil || mine[a.Workspace] {
			out = append(out, a)
		}
	}
	return out
}

// Run finds run ref for c: a run of a workspace c may not use is not
// found, with the same error as one that does not exist.
func (c *Caller) Run(ctx context.Context, e *engine.Engine, ref string) (engine.Ref, error) {
	r, err := e.FindRun(ctx, ref)
	if err != nil || !c.MayUse(r.Workspace) {
		return engine.Ref{}, fmt.Errorf("no run %q: %w", ref, tine.ErrNotFound)
	}
	return r, nil
}

// Workspace is the workspace id for c (not found when c may not use it).
func (c *Caller) Workspace(ctx context.Context, s tine.Store, id string) (*tine.Workspace, error) {
	var w *tine.Workspace
	err := s.View(ctx, func(tx tine.Tx) error {
		var err error
		w, err = tx.Workspace(id)
		return err
	})
	if err != nil || !c.MayUse(w) {
		return nil, fmt.Errorf("no workspace %q (see tine ls): %w", id, tine.ErrNotFound)
	}
	return w, nil
}
