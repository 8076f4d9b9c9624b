package control

import (
	"context"
	"fmt"
	"os"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/capability"
	"github.com/tinehq/tine/engine"
)

// Code inside a run reaches the host through tine serve with its run's
// capability (a token in its cap directory, seen inside at
// /run/tine/cap/token). Capabilities are issued when a supervisor starts
// and rotated on every fork: the parent's is revoked before its files are
// cloned, and fresh ones are issued to it and to each fork after, so a copy
// of the parent's token inside a fork is worthless (the engine's Fork calls
// RevokeCap and IssueCaps, as engine.ControlPlane). A resolution asked for
// from inside a run is recorded as a pending approval and runs only when a
// person approves it (Approve).

// capPath is run r's token file.
func (p *Plane) capPath(r engine.Ref) string {
	return p.e.Layout().Run(r.Workspace.ID, r.Run.ID).CapToken()
}

// IssueCaps gives each run a fresh capability and writes its token file.
func (p *Plane) IssueCaps(ctx context.Context, w *tine.Workspace, runs ...*tine.Run) error {
	caps := map[string]capability.Capability{}
	err := p.e.Store().Update(ctx, func(tx tine.Tx) error {
		for _, r := range runs {
			c, err := capability.Issue(tx, r.ID)
			if err != nil {
				return err
			}
			caps[r.ID] = c
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range runs {
		dir := p.e.Layout().Run(w.ID, r.ID).Cap()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		// The run's processes run as the owner and read it: theirs before
		// it replaces the old one.
		if err := engine.GiveToOwner(w, dir); err != nil {
			return fmt.Errorf("giving %s's capability to its owner: %w", r.Name, err)
		}
		uid, gid := engine.OwnerIDs(w)
		if err := capability.WriteFile(p.capPath(engine.Ref{Workspace: w, Run: r}), caps[r.ID], uid, gid); err != nil {
			return fmt.Errorf("writing %s's capability: %w", r.Name, err)
		}
	}
	return nil
}

// RevokeCap revokes run r's capability (before its files are cloned).
func (p *Plane) RevokeCap(ctx context.Context, r *tine.Run) error {
	return p.e.Store().Update(ctx, func(tx tine.Tx) error { return capability.Revoke(tx, r.ID) })
}

// Verifier checks requests signed with runs' capabilities against the store.
func (p *Plane) Verifier() *capability.Verifier {
	k := capability.Keyring{Store: p.e.Store()}
	return capability.NewVerifier(k, k)
}
