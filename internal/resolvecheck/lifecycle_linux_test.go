package resolvecheck

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
)

// TestLifecycle takes random forks through rollback (back to the fork
// point and forward again), promote and release on every backend, and
// checks each result bit for bit against the version chosen: content,
// modes, symlinks and the holes of sparse files.
func TestLifecycle(t *testing.T) {
	fixed, fresh := 6, 100
	if testing.Short() {
		fixed, fresh = 2, 2
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			v := newEnv(t, be)
			start, ran := time.Now(), 0
			for i, seed := range seeds(t, fixed, fresh) {
				if i >= fixed && time.Since(start) > budget()/3 {
					break
				}
				ran++
				c := NewCase(seed, scopeFS)
				c.Base["sparse.bin"] = &Node{Type: File, Perm: 0o640, Data: NewGen(seed).sparse(), Sparse: true}
				if f := v.lifecycle(c); f != nil {
					if reason := known(f); reason != "" {
						t.Logf("seed %d: %s (%s)", seed, reason, f.Stage)
						continue
					}
					t.Errorf("%s backend, seed %d: %v\ncase:\n%v", be, seed, f, c)
				}
			}
			t.Logf("%s: %d lifecycle cases in %v", be, ran, time.Since(start).Round(time.Millisecond))
		})
	}
}

// version is a tree and the holes its sparse files had on disk.
type version struct {
	tree  Tree
	holes map[string][]int64
}

// snapshot reads dir as the version a later result must equal.
func snapshot(stage, dir string) (version, *Failure) {
	t, err := Read(dir)
	if err != nil {
		return version{}, &Failure{Stage: stage, Msg: err.Error()}
	}
	h, err := Holes(dir, sparseOf(t))
	if err != nil {
		return version{}, &Failure{Stage: stage, Msg: err.Error()}
	}
	return version{t, h}, nil
}

// sparseOf marks sparse every file of t with a zero block, so that Holes
// looks at it.
func sparseOf(t Tree) Tree {
	out := Tree{}
	zero := make([]byte, holeBlock)
	for p, n := range t {
		if n.Type == File && len(n.Data) >= holeBlock && strings.Contains(string(n.Data), string(zero)) {
			m := n.Clone()
			m.Sparse = true
			out[p] = m
		}
	}
	return out
}

// bitEqual checks that dir holds exactly version want: the same tree, and
// every hole want's sparse files had still a hole.
func bitEqual(stage, dir string, want version) *Failure {
	if f := checkTree(stage, dir, want.tree); f != nil {
		return f
	}
	got, err := Holes(dir, sparseOf(want.tree))
	if err != nil {
		return &Failure{Stage: stage, Msg: err.Error()}
	}
	var msgs []string
	for p, hs := range want.holes {
		for _, h := range hs {
			if !slices.Contains(got[p], h) {
				msgs = append(msgs, fmt.Sprintf("%q: the hole at %d is data now (%d holes, want %d)", p, h, len(got[p]), len(hs)))
				break
			}
		}
	}
	if len(msgs) > 0 {
		return &Failure{Stage: stage, Msg: strings.Join(msgs, "\n"), Features: []string{"sparse"}}
	}
	return nil
}

// lifecycle runs c's edits and then rollback, promote and release.
func (v *env) lifecycle(c *Case) *Failure {
	ref, ws, point, cleanup, err := v.workspace(c.Base, nil, false)
	defer cleanup()
	if err != nil {
		return asFailure("setup", err)
	}
	fr, err := v.e.Fork(v.ctx, ref.Run.ID, engine.ForkOptions{Copies: 1})
	if err != nil {
		return &Failure{Stage: "fork", Msg: err.Error()}
	}
	fork := fr.Forks[0]
	view := v.e.Path(ref.Workspace, fork)
	origin, f := snapshot("fork view", view)
	if f != nil {
		return f
	}
	if len(origin.holes["sparse.bin"]) == 0 {
		return &Failure{Stage: "fork view", Msg: "sparse.bin has no hole: the hole checks would check nothing"}
	}
	if d := Diff(point, origin.tree, nil); len(d) > 0 {
		return &Failure{Stage: "fork view", Msg: strings.Join(d, "\n")}
	}
	if _, err := c.Theirs.Do(view, point); err != nil {
		return &Failure{Stage: "fork edits", Msg: err.Error()}
	}
	if _, err := c.Ours.Do(ws, point); err != nil {
		return &Failure{Stage: "source edits", Msg: err.Error()}
	}
	edited, f := snapshot("fork after edits", view)
	if f != nil {
		return f
	}
	rb, err := v.e.Rollback(v.ctx, fork.ID, fork.Origin)
	if err != nil {
		return &Failure{Stage: "rollback to the fork point", Msg: err.Error()}
	}
	if f := bitEqual("rollback to the fork point", view, origin); f != nil {
		return f
	}
	if _, err := v.e.Rollback(v.ctx, fork.ID, rb.Saved.ID); err != nil {
		return &Failure{Stage: "rollback forward", Msg: err.Error()}
	}
	if f := bitEqual("rollback forward to the saved version", view, edited); f != nil {
		return f
	}
	if _, err := v.e.Promote(v.ctx, fork.ID, true); err != nil {
		return &Failure{Stage: "promote", Msg: err.Error()}
	}
	if f := bitEqual("promote", ws, edited); f != nil {
		return f
	}
	if _, err := v.e.Release(v.ctx, ws, true); err != nil {
		return &Failure{Stage: "release", Msg: err.Error()}
	}
	return bitEqual("release", ws, edited)
}
