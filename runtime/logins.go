package runtime

import (
	"context"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/tick"
)

// SyncLogins carries the agents' sign-ins (agent.LoginFiles) between each
// fork's own home and its owner's real one, the newer over the older
// (syncLogins), and says what it carried ("~/.claude/.credentials.json
// from app/source-1"). A fork's home is a layer of its own over the
// owner's, so a sign-in refreshed there (Claude Code's and codex's refresh
// tokens rotate at each use) left the real home with a retired token: the
// person was signed out at their next refresh.
func (m *Manager) SyncLogins(ctx context.Context) []string {
	var forks []engine.Ref
	m.eng.Store().View(ctx, func(tx tine.Tx) error {
		wss, err := tx.Workspaces()
		for _, w := range wss {
			runs, _ := tx.Runs(tine.RunFilter{Workspace: w.ID})
			for _, r := range runs {
				if r.Role == tine.RoleFork && r.Active() {
					forks = append(forks, engine.Ref{Workspace: w, Run: r})
				}
			}
		}
		return err
	})
	var out []string
	for _, r := range forks {
		out = append(out, m.syncLogins(r)...)
	}
	return out
}

// SyncLoginsOf is SyncLogins for the one fork ref (after its agent ended).
func (m *Manager) SyncLoginsOf(ctx context.Context, ref string) []string {
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil || r.Run.Role != tine.RoleFork {
		return nil
	}
	return m.syncLogins(r)
}

// SyncForkLogins is SyncLogins for fork r, found already. It reads no
// store, so tine exec calls it after the command, once the engine it
// came from is closed, without opening one again (about 10 ms).
func (m *Manager) SyncForkLogins(r engine.Ref) []string { return m.syncLogins(r) }

// WatchLogins runs SyncLogins every period until ctx ends, saying what it
// carried.
func (m *Manager) WatchLogins(ctx context.Context, every time.Duration, say func(format string, args ...any)) {
	tick.Every(ctx, every, func() {
		if got := m.SyncLogins(ctx); len(got) > 0 && say != nil {
			say("carried newer sign-ins to their owners' homes: %s", strings.Join(got, ", "))
		}
	})
}
