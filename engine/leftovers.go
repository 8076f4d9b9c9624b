package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/flock"
	"github.com/tinehq/tine/internal/procfs"
	"github.com/tinehq/tine/layout"
)

// Leftover is what a command that died left in a run's directory: a
// freeze record naming a freezer that is gone (the run may still be
// frozen), or a scratch directory (a fork point mounted read-only, a
// merge's staging) that no live command holds.
type Leftover struct {
	Kind string `json:"kind"` // "frozen" or "scratch"
	Path string `json:"path"`
	Pid  int    `json:"pid,omitempty"` // the freezer that died
}

// leftovers lists what dead commands left in the runs of state directory
// home, without changing anything: every command removes them when it
// opens the state directory (the run's workspace free), and tine gc does.
func leftovers(home string) []Leftover {
	out := []Leftover{}
	wss, _ := os.ReadDir(layout.New(home).Workspaces())
	for _, ws := range wss {
		runs := layout.New(home).Workspace(ws.Name()).Runs()
		ents, _ := os.ReadDir(runs)
		for _, r := range ents {
			if r.IsDir() {
				out = append(out, runLeftovers(filepath.Join(runs, r.Name()))...)
			}
		}
	}
	return out
}

// runLeftovers is leftovers of one run directory.
func runLeftovers(dir string) []Leftover {
	var out []Leftover
	if b, err := os.ReadFile(filepath.Join(dir, "frozen.json")); err == nil {
		var rec struct {
			Pid   int    `json:"pid"`
			Start string `json:"start"`
		}
		if json.Unmarshal(b, &rec) != nil || !procfs.Alive("", rec.Pid, rec.Start) {
			out = append(out, Leftover{Kind: "frozen", Path: dir, Pid: rec.Pid})
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, ent := range ents {
		_, id, ok := strings.Cut(ent.Name(), "-")
		if !ok || !ent.IsDir() || !tine.LooksLikeID("", id) {
			continue
		}
		p := filepath.Join(dir, ent.Name())
		if unlock, free := flock.Try(p + ".lock"); free {
			unlock()
			out = append(out, Leftover{Kind: "scratch", Path: p})
		}
	}
	return out
}
