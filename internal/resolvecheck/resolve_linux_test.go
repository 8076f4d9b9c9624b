package resolvecheck

import (
	"os"
	"testing"
	"time"
)

// budget bounds how long one backend's random cases run: the fixed seeds
// always run, fresh ones only while time remains.
func budget() time.Duration {
	if s := os.Getenv("TINE_RESOLVE_BUDGET"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			return d
		}
	}
	if testing.Short() {
		return 5 * time.Second
	}
	return 35 * time.Second
}

// TestResolve runs random cases through the engine on every backend and in
// every scope, and compares each merge with the oracles.
func TestResolve(t *testing.T) {
	fixed, fresh := 12, 200
	if testing.Short() {
		fixed, fresh = 3, 10
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			v := newEnv(t, be)
			start, ran, known := time.Now(), 0, 0
			list := seeds(t, fixed, fresh)
			for i, seed := range list {
				if i >= fixed && time.Since(start) > budget() && os.Getenv("TINE_RESOLVE_SEEDS") == "" {
					break
				}
				for _, scope := range []string{scopeFS, scopeGit, scopePaths, scopeText} {
					ran++
					if v.check(t, NewCase(seed, scope)) {
						known++
					}
				}
			}
			t.Logf("%s: %d cases (%d seeds × 4 scopes) in %v; %d failed with a known bug", be, ran, ran/4, time.Since(start).Round(time.Millisecond), known)
		})
	}
}

// check runs c; on failure it shrinks the case, prints it and fails t. It
// reports whether c failed with a known bug (then it is only logged).
func (v *env) check(t *testing.T, c *Case) bool {
	t.Helper()
	f := v.Run(c)
	if f == nil {
		return false
	}
	if reason := known(f); reason != "" {
		t.Logf("seed %d %s: %s (%s)", c.Seed, c.Scope, reason, f.Stage)
		return true
	}
	min, mf := v.shrink(c, f)
	t.Errorf("%s backend, seed %d, scope %s: %v\nminimal reproduction (TINE_RESOLVE_SEEDS=%d reruns the seed):\n%v\nfailure of the minimal case: %v",
		v.backend, c.Seed, c.Scope, f, c.Seed, min, mf)
	return false
}

// shrink makes c smaller while it fails at the same stage, without showing
// a known bug.
func (v *env) shrink(c *Case, f *Failure) (*Case, *Failure) {
	last := f
	same := func(d *Case) bool {
		g := v.Run(d)
		if g == nil || g.Stage != f.Stage || known(g) != "" {
			return false
		}
		last = g
		return true
	}
	tries := 60
	if testing.Short() {
		tries = 20
	}
	c = c.copy()
	c.Theirs = Shrink(c.Theirs, func(s Script) bool { d := c.copy(); d.Theirs = s; return same(d) }, tries)
	c.Ours = Shrink(c.Ours, func(s Script) bool { d := c.copy(); d.Ours = s; return same(d) }, tries)
	c.PreFork = Shrink(c.PreFork, func(s Script) bool { d := c.copy(); d.PreFork = s; return same(d) }, tries)
	paths := c.Base.Paths()
	kept := Shrink(paths, func(ps []string) bool { d := c.copy(); d.Base = subtree(c.Base, ps); return same(d) }, tries)
	c.Base = subtree(c.Base, kept)
	if g := v.Run(c); g != nil {
		last = g
	}
	return c, last
}

func (c *Case) copy() *Case {
	d := *c
	return &d
}

// subtree returns the entries of t at paths whose parents are all kept.
func subtree(t Tree, paths []string) Tree {
	keep := map[string]bool{}
	for _, p := range paths {
		keep[p] = true
	}
	out := Tree{}
	for _, p := range paths {
		ok := true
		for d := parent(p); d != "."; d = parent(d) {
			ok = ok && keep[d]
		}
		if ok {
			out[p] = t[p]
		}
	}
	return out
}

func parent(p string) string {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "."
}
