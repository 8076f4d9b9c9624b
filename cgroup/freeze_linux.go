package cgroup

import (
	"context"
	"fmt"
	"path/filepath"
)

// Freezing mechanisms, as Info.Freeze names them.
const (
	freezeV2   = "v2"
	freezeV1   = "v1"
	freezeNone = "none"
)

// freezer returns the mechanism Freeze uses: the v2 group's cgroup.freeze
// when the kernel has it, else the v1 freezer.
func (g *Group) freezer() string {
	if !g.noV2Freeze && g.v2 != "" && exists(filepath.Join(g.v2, "cgroup.freeze")) {
		return freezeV2
	}
	if _, ok := g.v1["freezer"]; ok {
		return freezeV1
	}
	return freezeNone
}

// FreezerDir is the directory whose freezer Freeze writes (cgroup.freeze
// of the v2 group, else the v1 freezer's freezer.state), or "" when the
// group has none: what criu's --freeze-cgroup is given to find the group
// as tine froze it.
func (g *Group) FreezerDir() string {
	switch g.freezer() {
	case freezeV2:
		return g.v2
	case freezeV1:
		return g.v1["freezer"]
	}
	return ""
}

// Freeze stops every task in the group and returns once all of them are
// frozen, or when ctx is done; the group may then be left partly frozen,
// and Thaw undoes that. Freezing a frozen group does nothing.
func (g *Group) Freeze(ctx context.Context) error {
	var err error
	switch g.freezer() {
	case freezeV2:
		err = g.freezeV2(ctx)
	case freezeV1:
		err = g.freezeV1(ctx)
	default:
		err = fmt.Errorf("no freezer: %w", ErrUnsupported)
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: freeze: %w", g.name, err)
	}
	return nil
}

// freezeV2 writes 1 to cgroup.freeze and waits for cgroup.events to say
// "frozen 1".
func (g *Group) freezeV2(ctx context.Context) error {
	if err := writeFile(filepath.Join(g.v2, "cgroup.freeze"), "1"); err != nil {
		return err
	}
	return poll(ctx, g.frozenV2)
}

// freezeV1 writes FROZEN to freezer.state until it reads FROZEN: a state
// of FREEZING means some task has not stopped yet, and writing FROZEN again
// makes the kernel retry it.
func (g *Group) freezeV1(ctx context.Context) error {
	return poll(ctx, func() (bool, error) {
		if ok, err := g.frozenV1(); ok || err != nil {
			return ok, err
		}
		if err := writeFile(filepath.Join(g.v1["freezer"], "freezer.state"), "FROZEN"); err != nil {
			return false, err
		}
		return g.frozenV1()
	})
}

func (g *Group) frozenV2() (bool, error) {
	n, err := readKey(filepath.Join(g.v2, "cgroup.events"), "frozen")
	return n == 1, err
}

func (g *Group) frozenV1() (bool, error) {
	s, err := readString(filepath.Join(g.v1["freezer"], "freezer.state"))
	return s == "FROZEN", err
}

// Thaw lets the group's tasks run again, undoing Freeze through whichever
// mechanism froze them. Thawing a group that is not frozen does nothing.
func (g *Group) Thaw() error {
	if g.v2 != "" && exists(filepath.Join(g.v2, "cgroup.freeze")) {
		if err := writeFile(filepath.Join(g.v2, "cgroup.freeze"), "0"); err != nil {
			return fmt.Errorf("cgroup %s: thaw: %w", g.name, err)
		}
	}
	if err := g.thawV1(); err != nil {
		return fmt.Errorf("cgroup %s: thaw: %w", g.name, err)
	}
	return nil
}

// thawV1 writes THAWED to the v1 freezer unless it reads THAWED already:
// the write costs milliseconds even when there is nothing to thaw.
func (g *Group) thawV1() error {
	d, ok := g.v1["freezer"]
	if !ok {
		return nil
	}
	state := filepath.Join(d, "freezer.state")
	if s, err := readString(state); err == nil && s == "THAWED" {
		return nil
	}
	return writeFile(state, "THAWED")
}

// Frozen reports whether every task of the group is frozen by either
// mechanism. A group that is still freezing is not frozen.
func (g *Group) Frozen() (bool, error) {
	if g.v2 != "" && exists(filepath.Join(g.v2, "cgroup.freeze")) {
		if ok, err := g.frozenV2(); ok || err != nil {
			return ok, wrapf(err, "cgroup %s: frozen", g.name)
		}
	}
	if _, ok := g.v1["freezer"]; ok {
		ok, err := g.frozenV1()
		return ok, wrapf(err, "cgroup %s: frozen", g.name)
	}
	return false, nil
}

// Freezing reports whether the group was asked to freeze and has not been
// thawed since, whether or not every task has stopped yet: a group whose
// freezer died midway is frozen in part, and needs Thaw all the same.
func (g *Group) Freezing() (bool, error) {
	if g.v2 != "" && exists(filepath.Join(g.v2, "cgroup.freeze")) {
		s, err := readString(filepath.Join(g.v2, "cgroup.freeze"))
		if s == "1" || err != nil {
			return s == "1", wrapf(err, "cgroup %s: freezing", g.name)
		}
	}
	if d, ok := g.v1["freezer"]; ok {
		s, err := readString(filepath.Join(d, "freezer.state"))
		return err == nil && s != "THAWED", wrapf(err, "cgroup %s: freezing", g.name)
	}
	return false, nil
}

// wrapf wraps err with a formatted prefix; a nil err stays nil.
func wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf(format+": %w", append(args, err)...)
}
