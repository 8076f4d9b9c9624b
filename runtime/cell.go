package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/confine"
	"github.com/tinehq/tine/egress"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/supervisor"
)

// CellOptions is a fresh capability cell: exactly one command, run in a new
// short-lived fork made from a recorded version (or the parent's files
// now), writable only at Write (paths in the workspace), with no network
// but Net ("host:port", "a.b.c.d/n:port"), no secrets, confined as every
// fork, and killed after TTL.
type CellOptions struct {
	From  string        `json:"from,omitempty"` // a version of the workspace; "" the parent's files now
	Write []string      `json:"write"`
	Net   []string      `json:"net,omitempty"`
	TTL   time.Duration `json:"ttl"`
	Args  []string      `json:"args"`
}

// Cell is a cell's record, kept in its run's directory (cell.json): what
// it was asked to do and what it did.
type Cell struct {
	Run      string          `json:"run"`
	Name     string          `json:"name"` // the run's name, as it is now
	Parent   string          `json:"parent"`
	Options  CellOptions     `json:"options"`
	Base     string          `json:"base"` // the version its files came from
	Exit     int             `json:"exit"`
	TimedOut bool            `json:"timed_out,omitempty"`
	Stdout   string          `json:"stdout,omitempty"`
	Stderr   string          `json:"stderr,omitempty"`
	Changes  []layer.Change  `json:"changes"`
	Refused  []egress.Record `json:"refused,omitempty"`
	Outside  []string        `json:"outside,omitempty"` // changed paths not under Write (refused by Landlock, so none unless confinement is off)
	Started  time.Time       `json:"started"`
	Seconds  float64         `json:"seconds"`
}

// DefaultCellTTL bounds a cell's command when no TTL is given.
const DefaultCellTTL = 10 * time.Minute

func (o *CellOptions) check() error {
	switch {
	case len(o.Args) == 0:
		return fmt.Errorf("a cell needs a command: %w", tine.ErrInvalid)
	case len(o.Write) == 0:
		return tine.Optionf("a cell needs at least one %s path (it may write nothing else): %w", tine.Opt("write"), tine.ErrInvalid)
	}
	for _, p := range o.Write {
		if !filepath.IsLocal(filepath.Clean(p)) {
			return tine.Optionf("%s %q: a path inside the workspace, relative to it: %w", tine.Opt("write"), p, tine.ErrInvalid)
		}
	}
	if _, err := egress.ParseRules(o.Net); err != nil {
		return tine.Optionf("%s: %v: %w", tine.Opt("net"), err, tine.ErrInvalid)
	}
	if o.TTL <= 0 {
		o.TTL = DefaultCellTTL
	}
	return nil
}

// RunCell makes a cell of run ref as o says, runs its command, stops it
// and records what it did: its exit status, the paths it changed, the
// connections and names refused. The cell's files stay for inspection and
// promotion (PromoteCell) until it is discarded.
func (m *Manager) RunCell(ctx context.Context, ref string, o CellOptions) (*Cell, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := m.canConfine(ctx, ref); err != nil {
		return nil, err
	}
	res, err := m.eng.Fork(ctx, ref, engine.ForkOptions{Copies: 1, Name: "", Live: engine.LiveNone, Approaches: []string{"cell"}})
	if err != nil {
		return nil, err
	}
	f := res.Forks[0]
	c := &Cell{Run: f.ID, Name: f.Name, Parent: res.Parent.ID, Options: o, Base: res.Version.ID}
	if o.From != "" {
		rb, err := m.eng.Rollback(ctx, f.ID, o.From)
		if err != nil {
			m.eng.Discard(ctx, f.ID, true)
			return nil, fmt.Errorf("the cell's files from %s: %w", o.From, err)
		}
		c.Base = rb.To.ID
	}
	r, err := m.eng.FindRun(ctx, f.ID)
	if err != nil {
		return nil, err
	}
	if err := writeCell(m.cellPath(r), c); err != nil { // the spec first: launch reads it
		return nil, err
	}
	made, err := m.makeOutputs(r, o.Write)
	if err != nil {
		return nil, err
	}
	tmp := m.cellTmp(r)
	if err := os.MkdirAll(tmp, 0o1777); err != nil {
		return nil, err
	}
	os.Chmod(tmp, 0o1777|os.ModeSticky)
	c.Started = time.Now().UTC()
	x, err := m.ExecWith(ctx, f.ID, ExecOptions{Args: o.Args, Timeout: o.TTL, Env: []string{"TMPDIR=" + tmp}})
	m.StopIdle(ctx, f.ID)
	dropUnused(made)
	if err != nil {
		return c, err
	}
	c.Exit, c.TimedOut, c.Stdout, c.Stderr = x.Exit, x.TimedOut, x.Stdout, x.Stderr
	c.Seconds = time.Since(c.Started).Seconds()
	if c.Changes, err = m.eng.Changes(ctx, r); err != nil {
		return c, err
	}
	c.Outside = outsideWrite(c.Changes, o.Write)
	c.Refused, _ = egress.Read(supervisor.EgressPath(m.supDir(r)))
	if err := writeCell(m.cellPath(r), c); err != nil {
		return c, err
	}
	err = m.eng.Store().Update(ctx, func(tx tine.Tx) error {
		return tx.AppendEvent(tine.NewEvent(time.Now(), r.Workspace.ID, r.Run.ID, tine.EventCell, map[string]any{"args": o.Args, "exit": c.Exit,
			"changed": len(c.Changes), "refused": len(c.Refused), "base": c.Base}))
	})
	return c, err
}

// canConfine refuses a cell of ref that tine could not confine: Landlock
// is what holds it to its paths.
func (m *Manager) canConfine(ctx context.Context, ref string) error {
	p, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return err
	}
	cfg, err := m.eng.Config(ctx, p)
	if err != nil {
		return err
	}
	if cfg.Confine.Off {
		return fmt.Errorf("a cell is confined to its paths, and [confine] off = true in %s's tine.toml: %w", p.Run.Name, tine.ErrUnsupported)
	}
	if confine.Probe(confine.Spec{Writable: []string{"/"}}).Landlock == 0 {
		return fmt.Errorf("a cell is confined to its paths by Landlock, which this kernel lacks: %w", tine.ErrUnsupported)
	}
	return nil
}

// CellOf returns the record of cell ref; an error wrapping
// tine.ErrNotFound when ref is not a cell.
func (m *Manager) CellOf(ctx context.Context, ref string) (*Cell, error) {
	r, err := m.eng.FindRun(ctx, ref)
	if err != nil {
		return nil, err
	}
	c, err := readCell(m.cellPath(r))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a cell: %w", r.Run.Name, tine.ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	c.Name = r.Run.Name
	return c, nil
}

// PromoteCell carries paths of cell ref into its parent through a merge
// of those paths (DryRun: the plan only).
func (m *Manager) PromoteCell(ctx context.Context, ref string, paths []string, dryRun bool) (*engine.MergeResult, error) {
	if _, err := m.CellOf(ctx, ref); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, tine.Optionf("say which outputs to promote (%s): %w", tine.Opt("path"), tine.ErrInvalid)
	}
	return m.eng.Merge(ctx, ref, engine.MergeOptions{Scope: "paths", Paths: paths, DryRun: dryRun})
}

// ReplayCell runs cell ref's command again in a new cell, only if its
// inputs are as they were: a cell made from a version always (versions do
// not change); one made from its parent's files only while the parent's
// files are still those the cell was made from.
func (m *Manager) ReplayCell(ctx context.Context, ref string) (*Cell, error) {
	c, err := m.CellOf(ctx, ref)
	if err != nil {
		return nil, err
	}
	if c.Options.From == "" {
		cell, err := m.eng.FindRun(ctx, c.Run)
		if err != nil {
			return nil, err
		}
		parent, err := m.eng.FindRun(ctx, c.Parent)
		if err != nil {
			return nil, err
		}
		var changed []layer.Change
		err = m.eng.ForkPoint(ctx, cell, func(base string) error {
			changed, err = fstree.Diff(ctx, base, m.eng.Path(parent.Workspace, parent.Run))
			return err
		})
		if err != nil {
			return nil, err
		}
		if len(changed) > 0 {
			return nil, fmt.Errorf("the inputs of %s changed: %s differs from the files it was made from in %d path(s) (first %s); make a new cell: %w",
				cell.Run.Name, parent.Run.Name, len(changed), changed[0].Path, tine.ErrState)
		}
	}
	return m.RunCell(ctx, c.Parent, c.Options)
}

// cellConfinement narrows a cell's confinement: writes only to its Write
// paths, /dev and its temporary directory (TMPDIR; not /tmp, below which a
// workspace may lie), and an egress policy of its Net alone.
func cellConfinement(c *Cell, r engine.Ref, cfg *config.Config, tmp string) ([]string, *egress.Policy) {
	out := []string{tmp, "/dev"}
	for _, w := range c.Options.Write {
		out = append(out, filepath.Join(r.Workspace.Path, w))
	}
	rules, _ := egress.ParseRules(c.Options.Net)
	return out, &egress.Policy{Rules: rules, Upstream: upstream(cfg)}
}

func outsideWrite(changes []layer.Change, write []string) []string {
	var out []string
	for _, ch := range changes {
		in := false
		for _, w := range write {
			w = filepath.ToSlash(filepath.Clean(w))
			if ch.Path == w || strings.HasPrefix(ch.Path, w+"/") || strings.HasPrefix(w, ch.Path+"/") {
				in = true
			}
		}
		if !in {
			out = append(out, ch.Path)
		}
	}
	return out
}

// makeOutputs makes each --write path of cell r that does not exist yet
// (Landlock lets a process write a path, not create it in a directory it
// may not write): a directory for a path ending in "/" or without an
// extension, else an empty file, owned by the workspace's owner. It
// returns what it made.
func (m *Manager) makeOutputs(r engine.Ref, write []string) ([]string, error) {
	root := m.eng.Path(r.Workspace, r.Run)
	var made []string
	for _, w := range write {
		p := filepath.Join(root, filepath.Clean(w))
		if _, err := os.Lstat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return made, err
		}
		var err error
		if strings.HasSuffix(w, "/") || filepath.Ext(w) == "" {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil {
			return made, tine.Optionf("%s %s: %w", tine.Opt("write"), w, err)
		}
		made = append(made, p)
		if err := engine.GiveToOwner(r.Workspace, p); err != nil {
			return made, err
		}
	}
	return made, nil
}

// dropUnused removes what makeOutputs made and the command left empty, so
// the cell's changes are what the command did.
func dropUnused(made []string) {
	for i := len(made) - 1; i >= 0; i-- {
		fi, err := os.Lstat(made[i])
		if err != nil {
			continue
		}
		if fi.IsDir() {
			os.Remove(made[i]) // fails unless empty
		} else if fi.Size() == 0 {
			os.Remove(made[i])
		}
	}
}

// cellTmp is a cell's temporary directory, the only one it may write.
func (m *Manager) cellTmp(r engine.Ref) string { return filepath.Join(m.ScratchDir(r), "tmp") }

func (m *Manager) cellPath(r engine.Ref) string {
	return m.lay.Run(r.Workspace.ID, r.Run.ID).Cell()
}

func writeCell(path string, c *Cell) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o644)
}

func readCell(path string) (*Cell, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Cell
	return &c, json.Unmarshal(b, &c)
}
