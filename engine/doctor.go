package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/desktop"
	"github.com/tinehq/tine/layout"
)

// Diagnosis is what Diagnose found in a state directory.
type Diagnosis struct {
	Home       string        `json:"home"`
	Store      *StoreCheck   `json:"store"`
	Unknown    []string      `json:"unknown"`    // directories the next command will move aside
	Quarantine []Quarantined `json:"quarantine"` // what was moved aside before
	Trash      []Trashed     `json:"trash"`      // what releases and discards left to delete
	TrashBytes int64         `json:"trash_bytes"`
	Leftovers  []Leftover    `json:"leftovers"` // what commands that died left in runs
	Advice     []string      `json:"advice"`    // what to do, one sentence each
	// DisplayMissing are the programs a run's display needs ([display])
	// that are not installed, with the Debian package of each.
	DisplayMissing []desktop.Program `json:"display_missing,omitempty"`
}

// Diagnose inspects state directory home without changing anything: the
// store, the directories it has no record of, and the quarantine. It
// never opens an engine, so it works when every command refuses. It needs
// WithStore.
func Diagnose(ctx context.Context, home string, opts ...Option) (*Diagnosis, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	home, err = filepath.Abs(home)
	if err != nil {
		return nil, err
	}
	st, c, err := o.checkStore(ctx, home, false, true)
	if err != nil {
		return nil, err
	}
	r := &Diagnosis{Home: home, Store: c, Unknown: []string{}}
	if st != nil {
		defer st.Close()
		if r.Unknown, err = unknownDirs(ctx, st, home); err != nil {
			return nil, err
		}
	}
	if r.Quarantine, err = ListQuarantine(home); err != nil {
		return nil, err
	}
	if r.Trash, err = ListTrash(home, true); err != nil {
		return nil, err
	}
	for _, t := range r.Trash {
		r.TrashBytes += t.Bytes
	}
	r.Leftovers = leftovers(home)
	r.DisplayMissing = desktop.Missing()
	r.Advice = advice(r)
	return r, nil
}

// unknownDirs lists the workspace, run and layer directories of home that
// st has no record of and no journal accounts for.
func unknownDirs(ctx context.Context, st tine.Store, home string) ([]string, error) {
	out := []string{}
	ents, err := os.ReadDir(layout.New(home).Workspaces())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, ent := range ents {
		dir := layout.New(home).Workspace(ent.Name()).Dir()
		if !ent.IsDir() || isInitLeftover(dir) || releaseFinished(dir) {
			continue
		}
		var runs []*tine.Run
		var layers []*tine.Layer
		err := st.View(ctx, func(tx tine.Tx) error {
			if _, err := tx.Workspace(ent.Name()); err != nil {
				return err
			}
			var err error
			if runs, err = tx.Runs(tine.RunFilter{Workspace: ent.Name()}); err != nil {
				return err
			}
			layers, err = tx.Layers(ent.Name())
			return err
		})
		if errors.Is(err, tine.ErrNotFound) {
			out = append(out, dir)
			continue
		}
		if err != nil {
			return nil, err
		}
		known := map[string]bool{}
		for _, r := range runs {
			known[layout.WorkspaceAt(dir).Run(r.ID).Dir()] = true
		}
		for _, l := range layers {
			known[filepath.Join(dir, "layers", l.ID)] = true
		}
		for _, sub := range []string{"runs", "layers"} {
			ds, _ := os.ReadDir(filepath.Join(dir, sub))
			for _, d := range ds {
				if p := filepath.Join(dir, sub, d.Name()); !known[p] {
					out = append(out, p)
				}
			}
		}
	}
	return out, nil
}

// advice says, for what Diagnose found, how to recover.
func advice(r *Diagnosis) []string {
	c := r.Store
	setAside := fmt.Sprintf("Otherwise \"tine doctor --set-aside\" moves the workspace directories the store cannot vouch for into %s (nothing is deleted) and lets tine go on with the store that is there, or a fresh one; each workspace's files are then in its layers/ (the versions) and runs/RUN/upper (overlay) or runs/RUN/view (other backends).",
		layout.New(r.Home).Quarantine())
	var out []string
	if !c.Usable() {
		n := 0
		for _, d := range c.Dirs {
			if _, err := os.Stat(layout.New(r.Home).Workspace(d).Record()); err == nil {
				n++
			}
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("\"tine doctor --rebuild\" makes the store again from the manifests of %d of the %d workspace directories (the store there, if any, is moved into %s first; the event log and approvals are not rebuilt).",
				n, len(c.Dirs), layout.New(r.Home).Quarantine()))
		}
	}
	switch c.State {
	case StoreMissing, StoreEmpty:
		out = append(out, fmt.Sprintf("If you have a copy of the store (a backup of %s), put it back there and run tine doctor again.", c.Path), setAside)
	case StoreDamaged:
		out = append(out, fmt.Sprintf("Copy %s (and %s-wal, if present) somewhere safe first. \"sqlite3 %s .recover | sqlite3 recovered.db\" may rescue its records; put the result back at %s and run tine doctor again.", c.Path, c.Path, c.Path, c.Path), setAside)
	case StoreForeign:
		out = append(out, fmt.Sprintf("Put back the store with id %s at %s (the one these workspaces were made with) and run tine doctor again.", c.Marker, c.Path), setAside)
	case StoreUnrecorded:
		out = append(out, fmt.Sprintf("If another copy of the store knows these workspaces, put it back at %s and run tine doctor again.", c.Path), setAside)
	}
	if len(r.Leftovers) > 0 {
		out = append(out, "Commands that died left what is listed as left over (a run frozen by a freezer that is gone, a fork point still mounted read-only, a merge's staging): \"tine gc\" thaws and removes them, and so does any tine command that opens the state directory while the run's workspace is free.")
	}
	if len(r.Unknown) > 0 {
		out = append(out, "The store has no record of the directories listed as unknown (a crash before a record was committed, or lost commits); the next tine command moves them into the quarantine.")
	}
	if len(r.Quarantine) > 0 {
		out = append(out, fmt.Sprintf("Each quarantined entry has a note %s/NAME.json saying where it came from; move an entry back by hand if it is yours, or delete them all with \"tine doctor --purge\".", layout.New(r.Home).Quarantine()))
	}
	if len(r.Trash) > 0 {
		out = append(out, "The trash holds what releases and discards committed to deleting; the daemon empties it (at once after its own, and every 10 minutes), and so does \"tine gc\".")
	}
	if len(r.DisplayMissing) > 0 {
		var names, pkgs []string
		for _, p := range r.DisplayMissing {
			names, pkgs = append(names, p.Name), append(pkgs, p.Package)
		}
		out = append(out, fmt.Sprintf("A run's display ([display] in tine.toml, tine start --display) needs %s: \"apt-get install %s\" installs them (Debian).",
			strings.Join(names, ", "), strings.Join(pkgs, " ")))
	}
	if len(out) == 0 {
		out = append(out, "Nothing to do.")
	}
	return out
}
