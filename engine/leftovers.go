package engine

import (
	"errors"
	"io/fs"
	"os"

	"github.com/tinehq/tine/internal/freezerec"
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
		runs, _ := os.ReadDir(layout.New(home).Workspace(ws.Name()).Runs())
		for _, r := range runs {
			if r.IsDir() {
				out = append(out, runLeftovers(layout.New(home).Run(ws.Name(), r.Name()))...)
			}
		}
	}
	return out
}

// runLeftovers is leftovers of one run.
func runLeftovers(r layout.Run) []Leftover {
	var out []Leftover
	// A record that cannot be read is abandoned too, as ThawAbandoned
	// takes it.
	if rec, err := freezerec.Read(r.Frozen()); err == nil && !rec.Alive() || err != nil && !errors.Is(err, fs.ErrNotExist) {
		out = append(out, Leftover{Kind: "frozen", Path: r.Dir(), Pid: rec.Pid})
	}
	for _, p := range deadScratch(r.Dir()) {
		out = append(out, Leftover{Kind: "scratch", Path: p})
	}
	return out
}
