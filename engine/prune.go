package engine

import (
	"context"

	"github.com/tinehq/tine"
)

// pruneSealed deletes run p's background seals (versions of kind sealed)
// that a later seal superseded: every one but the last seal by copy of p's
// view while p's base is still the one it was made over (the next seal
// stacks on it), and none that anything refers to
// (a run's base or origin, a group's fork point, a version's parent). The
// layers only they had go too: a chain of incremental seals that was
// started again whole (overlay.ChainMax), or a seal by rename, would
// otherwise keep a second copy of the busy delta for ever. Metadata
// first: the layers are named in a making journal, their records deleted
// in one transaction, then moved into the trash; a crash between leaves
// the journal, and the sweeper removes what it names that the store no
// longer records. p's workspace lock is held. Failing only warns: the
// seals stay, as before.
func (e *Engine) pruneSealed(ctx context.Context, p Ref) {
	keep, _ := e.sealedNote(p)
	ctx, made := e.startMaking(ctx, p.Workspace.ID, "prune")
	defer made()
	var dropped []string
	err := e.store.Update(ctx, func(tx tine.Tx) error {
		dropped = nil
		vs, used, err := versionsInUse(tx, p.Workspace.ID)
		if err != nil {
			return err
		}
		var drop []*tine.Version
		kept := map[string]bool{}
		for _, v := range vs {
			current := v.ID == keep && v.Parent == p.Run.Base // the next seal stacks on it
			if v.Kind == tine.VersionSealed && v.Run == p.Run.ID && !current && !used[v.ID] {
				drop = append(drop, v)
				continue
			}
			for _, l := range v.Layers {
				kept[l] = true
			}
		}
		for _, v := range drop {
			if err := tx.DeleteVersion(v.ID); err != nil {
				return err
			}
			for _, l := range v.Layers {
				if kept[l] {
					continue
				}
				kept[l] = true // once
				if err := noteLayer(ctx, l); err != nil {
					return err
				}
				if err := tx.DeleteLayer(l); err != nil {
					return err
				}
				dropped = append(dropped, l)
			}
		}
		return nil
	})
	if err != nil {
		e.warn("pruning %s's background seals: %v", p.Run.Name, err)
		return
	}
	if faultPointCtx(ctx) != nil { // the records gone, the layers not moved
		return
	}
	for _, l := range dropped {
		if err := e.trash(ctx, KindLayer, p.Workspace.Backend, p.Workspace.ID, e.lay.Workspace(p.Workspace.ID).Layer(l)); err != nil {
			e.warn("pruning %s's background seals: %v (the sweeper removes it)", p.Run.Name, err)
		}
	}
}

// sealedLast reports whether p's last seal by copy was a background seal:
// only then can a fork of p leave background seals to prune, and a fork
// reads the workspace's versions for that only then.
func (e *Engine) sealedLast(ctx context.Context, p Ref) bool {
	id, _ := e.sealedNote(p)
	if id == "" {
		return false
	}
	v, err := e.version(ctx, id)
	return err == nil && v.Kind == tine.VersionSealed
}

// versionsInUse returns workspace ws's versions and those something
// refers to: a run's base or origin, a group's fork point, a version's
// parent.
func versionsInUse(tx tine.Tx, ws string) ([]*tine.Version, map[string]bool, error) {
	vs, err := tx.Versions(ws)
	if err != nil {
		return nil, nil, err
	}
	runs, err := tx.Runs(tine.RunFilter{Workspace: ws})
	if err != nil {
		return nil, nil, err
	}
	groups, err := tx.Groups(ws)
	if err != nil {
		return nil, nil, err
	}
	used := map[string]bool{}
	for _, r := range runs {
		used[r.Base], used[r.Origin] = true, true
	}
	for _, g := range groups {
		used[g.Version] = true
	}
	for _, v := range vs {
		used[v.Parent] = true
	}
	return vs, used, nil
}
