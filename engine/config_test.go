package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/engine/enginetest"
)

// A fork's boundary is its source's tine.toml, whatever the fork wrote
// into its own; its services are its own. A fork of a fork is held by the
// source too, and a fork left behind by a promotion by the new source.
func TestConfig_AForksBoundaryIsItsSources(t *testing.T) {
	w := enginetest.New(t, enginetest.Options{Files: map[string]string{
		"tine.toml": "[network]\negress = [\"example.com:443\"]\n[confine]\nwritable = [\"/srv/cache\"]\n"}})
	ctx := context.Background()
	fork := func(ref string) engine.Ref {
		t.Helper()
		res, err := w.Engine.Fork(ctx, ref, engine.ForkOptions{Copies: 1})
		if err != nil {
			t.Fatal(err)
		}
		r, err := w.Engine.FindRun(ctx, res.Forks[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	f := fork(w.Source.Run.ID)
	loosened := "[network]\nfork_egress = \"open\"\negress = [\"0.0.0.0/0\"]\n[confine]\noff = true\n[secrets]\ndefaults = false\n" +
		"[limits]\npids = 100000\n[effects]\nfrom_forks = \"after_promotion\"\ncommands = [\"curl\"]\n" +
		"[[service]]\nname = \"web\"\ncommand = \"sleep 1000\"\n"
	if err := os.WriteFile(filepath.Join(w.Engine.Path(f.Workspace, f.Run), "tine.toml"), []byte(loosened), 0o644); err != nil {
		t.Fatal(err)
	}
	ff := fork(f.Run.ID)
	for _, r := range []engine.Ref{f, ff} {
		cfg, err := w.Engine.Config(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Confine.Off || len(cfg.Confine.Writable) != 1 || !cfg.Network.ConfinesForks() || len(cfg.Network.Egress) != 1 ||
			cfg.Network.Egress[0] != "example.com:443" || cfg.Limits.Pids != 0 || cfg.Effects.FromForks != "" || len(cfg.Effects.Commands) != 0 ||
			(cfg.Secrets.Defaults != nil && !*cfg.Secrets.Defaults) {
			t.Errorf("%s's boundary is what it wrote, not its source's: %+v %+v %+v %+v %+v", r.Run.Name, cfg.Network, cfg.Confine, cfg.Secrets, cfg.Limits, cfg.Effects)
		}
		if len(cfg.Services) != 1 || cfg.Services[0].Name != "web" {
			t.Errorf("%s's services are not its own: %+v", r.Run.Name, cfg.Services)
		}
	}
	// The source's own file is its own.
	if cfg, err := w.Engine.Config(ctx, w.Source); err != nil || len(cfg.Network.Egress) != 1 {
		t.Errorf("the source's config: %+v, %v", cfg, err)
	}
	// Promote a sibling: f no longer descends from the current source, and
	// the new source's file (the source's, carried) holds it.
	g := fork(w.Source.Run.ID)
	if _, err := w.Engine.Promote(ctx, g.Run.ID, false); err != nil {
		t.Fatal(err)
	}
	if cfg, err := w.Engine.Config(ctx, f); err != nil || cfg.Confine.Off || len(cfg.Network.Egress) != 1 {
		t.Errorf("after a promotion, %s's boundary: %+v %+v, %v", f.Run.Name, cfg.Network, cfg.Confine, err)
	}
}
