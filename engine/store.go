package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/layout"
)

// The store marker (layout.StoreID) names the id of the store the
// workspace directories beside it were made with. A store with another id
// (a fresh one, a restored one of another state directory) is refused.

// What CheckStore can find. Only StoreOK and StoreNew let commands run.
const (
	StoreOK         = "ok"         // the store opens, passes its integrity check, and is the workspaces' own
	StoreNew        = "new"        // no store and no workspaces: the next command creates a store
	StoreMissing    = "missing"    // no store file, but workspace directories exist
	StoreEmpty      = "empty"      // a 0-byte store file, but workspace directories exist
	StoreDamaged    = "damaged"    // the file is not a database, or fails its integrity check
	StoreForeign    = "foreign"    // the store's id is not the one the workspaces were made with
	StoreUnrecorded = "unrecorded" // workspace directories exist, and the store knows none of them
)

// StoreCheck is what CheckStore found.
type StoreCheck struct {
	Path    string    `json:"path"`
	State   string    `json:"state"`               // one of the Store* states
	ID      string    `json:"id,omitempty"`        // the store's id, if it could be read
	Created time.Time `json:"created_at,omitzero"` // when the store was created
	Marker  string    `json:"marker,omitempty"`    // the id the workspaces directory names
	Dirs    []string  `json:"workspace_dirs"`      // workspace directories, init leftovers excepted
	Problem string    `json:"problem,omitempty"`   // one line saying what is wrong
	Err     string    `json:"error,omitempty"`     // the underlying error, if any
	known   int       // how many of Dirs the store records
}

// Usable reports whether commands may use the store.
func (c *StoreCheck) Usable() bool { return c.State == StoreOK || c.State == StoreNew }

// CheckStore inspects the store of state directory home and the workspace
// directories beside it without changing anything. It needs WithStore.
func CheckStore(ctx context.Context, home string, opts ...Option) (*StoreCheck, error) {
	o, err := newOptions(opts)
	if err != nil {
		return nil, err
	}
	st, c, err := o.checkStore(ctx, home, false, true)
	if st != nil {
		st.Close()
	}
	return c, err
}

// openStore opens the store of home for a command: a fresh one is created
// only when the state directory holds no workspace, and a store that cannot
// be trusted is refused with tine.ErrStore.
func (o *options) openStore(ctx context.Context, home string) (StoreFile, error) {
	st, c, err := o.checkStore(ctx, home, true, storeCheckDue(home))
	if err != nil {
		return nil, err
	}
	if !c.Usable() {
		return nil, fmt.Errorf("%w: %s (tine doctor explains how to recover)", tine.ErrStore, c.Problem)
	}
	if c.Marker != c.ID {
		if err := writeMarker(home, c.ID); err != nil {
			st.Close()
			return nil, fmt.Errorf("state directory: %w", err)
		}
	}
	return st, nil
}

// checkStore classifies the store of home. With create, a missing store is
// created when that is safe, and the store is returned open when usable.
// With integrity, the store's file is checked whole (StoreFile.Check),
// which costs its size; without, damage shows when a query reaches it.
func (o *options) checkStore(ctx context.Context, home string, create, integrity bool) (StoreFile, *StoreCheck, error) {
	c := &StoreCheck{Path: layout.New(home).Store()}
	var err error
	if c.Dirs, err = workspaceDirs(home); err != nil {
		return nil, nil, fmt.Errorf("state directory: %w", err)
	}
	c.Marker = readMarker(home)
	if o.server != "" {
		c.Path = o.server
		return o.checkServer(ctx, c, home, integrity)
	}
	fi, err := os.Stat(c.Path)
	switch {
	case errors.Is(err, os.ErrNotExist) && len(c.Dirs) > 0:
		return nil, c.refuse(StoreMissing, fmt.Sprintf("the store %s is missing, but %s", c.Path, c.dirsLine(home)), nil), nil
	case errors.Is(err, os.ErrNotExist) && !create:
		c.State = StoreNew
		return nil, c, nil
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return nil, c.refuse(StoreDamaged, fmt.Sprintf("the store %s cannot be read", c.Path), err), nil
	case err == nil && fi.Size() == 0 && len(c.Dirs) > 0:
		return nil, c.refuse(StoreEmpty, fmt.Sprintf("the store %s is empty (0 bytes), but %s", c.Path, c.dirsLine(home)), nil), nil
	case err == nil && fi.Size() == 0 && !create:
		c.State = StoreNew
		return nil, c, nil
	}
	st, err := o.open(c.Path)
	if errors.Is(err, tine.ErrStore) {
		return nil, c.refuse(StoreDamaged, fmt.Sprintf("the store %s is damaged", c.Path), err), nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := c.identify(ctx, st, home, integrity); err != nil || !c.Usable() {
		st.Close()
		return nil, c, err
	}
	return st, c, nil
}

// checkServer classifies a store on a server (WithStoreServer). There is
// no file to find missing or empty: the server's store is opened, made if
// it is new, and identified like a store file. A server that cannot be
// reached is an error, not a verdict on the store.
func (o *options) checkServer(ctx context.Context, c *StoreCheck, home string, integrity bool) (StoreFile, *StoreCheck, error) {
	st, err := o.open("")
	if errors.Is(err, tine.ErrStore) {
		return nil, c.refuse(StoreDamaged, fmt.Sprintf("the store %s is damaged", c.Path), err), nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := c.identify(ctx, st, home, integrity); err != nil || !c.Usable() {
		st.Close()
		return nil, c, err
	}
	return st, c, nil
}

// checkIntegrity checks st whole when integrity is set.
func checkIntegrity(ctx context.Context, st StoreFile, integrity bool) error {
	if !integrity {
		return nil
	}
	return st.Check(ctx)
}

// identify checks st's integrity and that it is the workspaces' own store.
func (c *StoreCheck) identify(ctx context.Context, st StoreFile, home string, integrity bool) error {
	if err := checkIntegrity(ctx, st, integrity); err != nil {
		c.refuse(StoreDamaged, fmt.Sprintf("the store %s is damaged", c.Path), err)
		return nil
	}
	var err error
	if c.ID, c.Created, err = st.ID(ctx); err != nil {
		if errors.Is(err, tine.ErrStore) {
			c.refuse(StoreDamaged, fmt.Sprintf("the store %s is damaged", c.Path), err)
			return nil
		}
		return err
	}
	for _, d := range c.Dirs {
		if err := st.View(ctx, func(tx tine.Tx) error { _, err := tx.Workspace(d); return err }); err == nil {
			c.known++
		} else if !errors.Is(err, tine.ErrNotFound) {
			return err
		}
	}
	switch {
	case c.Marker != "" && c.Marker != c.ID && len(c.Dirs) > 0:
		c.refuse(StoreForeign, fmt.Sprintf("the store %s (id %s) is not the one the workspaces in %s were made with (id %s)",
			c.Path, c.ID, layout.New(home).Workspaces(), c.Marker), nil)
	case c.Marker == "" && len(c.Dirs) > 0 && c.known == 0:
		c.refuse(StoreUnrecorded, fmt.Sprintf("the store %s records none of the workspaces in %s", c.Path, c.dirsLine(home)), nil)
	default:
		c.State = StoreOK
	}
	return nil
}

func (c *StoreCheck) refuse(state, problem string, err error) *StoreCheck {
	c.State, c.Problem = state, problem
	if err != nil {
		c.Err = err.Error()
		c.Problem += ": " + firstLine(err.Error())
	}
	return c
}

func (c *StoreCheck) dirsLine(home string) string {
	return fmt.Sprintf("%s holds %d workspace(s) (%s); tine will not start a fresh store over them",
		layout.New(home).Workspaces(), len(c.Dirs), strings.Join(c.Dirs, ", "))
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// workspaceDirs lists the workspace directories of home, leaving out what
// an interrupted init left (its journal alone says where the user's files
// go, so the sweeper can undo it with any store).
func workspaceDirs(home string) ([]string, error) {
	ents, err := os.ReadDir(layout.New(home).Workspaces())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, ent := range ents {
		if ent.IsDir() && !isInitLeftover(filepath.Join(home, "workspaces", ent.Name())) {
			out = append(out, ent.Name())
		}
	}
	return out, nil
}

// isInitLeftover reports whether dir is what an interrupted init leaves: an
// init journal, at most the base layer and at most the source run.
func isInitLeftover(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "init.json")); err != nil {
		return false
	}
	layers, _ := os.ReadDir(filepath.Join(dir, "layers"))
	runs, _ := os.ReadDir(layout.WorkspaceAt(dir).Runs())
	return len(layers) <= 1 && len(runs) <= 1
}

func readMarker(home string) string {
	b, err := os.ReadFile(layout.New(home).StoreID())
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// writeMarker records, durably, that the workspaces of home belong to store id.
func writeMarker(home, id string) error {
	return atomicfile.Write(layout.New(home).StoreID(), []byte(id+"\n"), 0o600, atomicfile.Durable)
}
