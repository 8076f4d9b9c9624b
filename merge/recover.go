package merge

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/atomicfile"
)

// States of a journal.
const (
	stateStaging    = "staging"     // staging directory being filled; target untouched
	stateApplying   = "applying"    // steps recorded; some may have run
	stateCommitted  = "committed"   // every step ran; only cleanup is left
	stateRolledBack = "rolled_back" // every step was undone; only cleanup is left
)

// Operations of a step.
const (
	opBackup = "backup" // move Path into the staging directory as Item
	opPlace  = "place"  // rename the staged Item to Path
	opMode   = "mode"   // set directory Path's mode to Mode (from Old when Existing)
	// opRmdir removes the empty directory Path; undoing it makes the
	// directory again with the recorded Mode, owner and modification time.
	// A directory is never moved as a backup: on an overlay view, renaming a
	// directory that comes from a lower layer fails (EXDEV), and an empty
	// directory is fully described by its metadata.
	opRmdir = "rmdir"
	// On a target where moving a file costs a copy of it (an overlay view
	// copies a lower file up, and syncs it, before it can be renamed), the
	// destination is instead saved while staging — copied into the staging
	// directory as Backup — and these steps replace or remove it in place.
	opReplace = "replace" // rename the staged Item over Path; undo renames Backup over it
	opUnlink  = "unlink"  // remove Path; undo renames Backup to Path
)

// journal is what Apply records, at a path outside the target, so that a
// crash can be undone (or finished) by Recover. All the steps are recorded
// before the first runs; whether one ran is read from the filesystem: a
// backup ran when its item exists in the staging directory, a placement ran
// when its staged item no longer does.
type journal struct {
	Version int      `json:"version"`
	State   string   `json:"state"`
	Target  rawPath  `json:"target"`  // absolute path of the target directory
	Staging rawPath  `json:"staging"` // staging directory, relative to Target
	Steps   []txStep `json:"steps,omitempty"`
	Plan    *Plan    `json:"plan,omitempty"` // for people; paths may be lossy here
	// Note is the caller's (ApplyOptions.Note), handed back by Recover when
	// it finishes a committed merge, so the caller's record of it can be
	// completed.
	Note json.RawMessage `json:"note,omitempty"`
}

// txStep is one step of an apply.
type txStep struct {
	Op     string  `json:"op"`
	Path   rawPath `json:"path"`             // relative to the target
	Item   string  `json:"item,omitempty"`   // relative to the staging directory
	Backup string  `json:"backup,omitempty"` // replace, unlink: the saved destination, relative to the staging directory
	// Restore is, for replace and unlink instead of Backup, the absolute
	// path of a file of the fork point's layer that the destination was
	// (the same inode): undoing copies it back.
	Restore  rawPath `json:"restore,omitempty"`
	Mode     uint32  `json:"mode,omitempty"`
	Old      uint32  `json:"old,omitempty"`
	Existing bool    `json:"existing,omitempty"` // mode: the directory was there before
	Uid      int     `json:"uid,omitempty"`      // rmdir: the directory's owner
	Gid      int     `json:"gid,omitempty"`
	Mtime    int64   `json:"mtime,omitempty"` // rmdir: modification time, ns since the epoch
}

// rawPath is a path that survives JSON byte for byte: a string when it is
// valid UTF-8, else {"base64": "..."}.
type rawPath string

// MarshalJSON encodes p without losing bytes.
func (p rawPath) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(p)) {
		return json.Marshal(string(p))
	}
	return json.Marshal(map[string]string{"base64": base64.StdEncoding.EncodeToString([]byte(p))})
}

// UnmarshalJSON decodes what MarshalJSON encodes.
func (p *rawPath) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*p = rawPath(s)
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(m["base64"])
	*p = rawPath(raw)
	return err
}

// Recover finishes or undoes a merge that a crash interrupted, as recorded
// in the journal at path journal (the path given to Apply). A missing
// journal means there is nothing to do. A journal marked committed is rolled
// forward (the merge had landed whole; its leftovers are removed); any other
// is rolled back: every destination is restored from its backup in reverse
// order, so the target is as it was before Apply. Recover is idempotent: if
// it is interrupted in turn, calling it again completes the work.
//
// When the merge had committed, onCommitted (if not nil) is called with the
// journal's note before the journal is removed, as Apply calls
// ApplyOptions.Committed: a crash between the commit mark and the caller's
// record is completed here. An error from it leaves the journal for the
// next Recover.
func Recover(ctx context.Context, journal string, onCommitted func(note json.RawMessage) error) error {
	j, err := readJournal(journal)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("merge: recover: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	tree, err := openTxTree(string(j.Target))
	if err != nil {
		return fmt.Errorf("merge: recover %s: %w", j.Target, err)
	}
	defer tree.close()
	if j.State == stateCommitted {
		if onCommitted != nil {
			if err := onCommitted(j.Note); err != nil {
				return fmt.Errorf("merge: recover %s: recording the merge: %w", j.Target, err)
			}
		}
		err = finishJournal(tree, j, journal)
	} else {
		err = rollBack(tree, j, journal)
	}
	if err != nil {
		return fmt.Errorf("merge: recover %s: %w", j.Target, err)
	}
	return nil
}

// rollBack undoes every step of j that ran, in reverse order, records that
// in the journal, and removes the staging directory and the journal.
func rollBack(tree *txTree, j *journal, jpath string) error {
	if j.State == stateApplying {
		if err := undoSteps(tree, j); err != nil {
			return err
		}
		if err := tree.sync(nil); err != nil {
			return err
		}
		j.State = stateRolledBack
		if err := writeJournal(jpath, j); err != nil {
			return err
		}
	}
	return finishJournal(tree, j, jpath)
}

// undoSteps undoes j's steps in reverse. It goes on past a failure, so that
// as much as possible is restored, and returns every error.
func undoSteps(tree *txTree, j *journal) error {
	var errs []error
	for i := len(j.Steps) - 1; i >= 0; i-- {
		if err := undoStep(tree, string(j.Staging), j.Steps[i]); err != nil {
			errs = append(errs, fmt.Errorf("undo %s %q: %w", j.Steps[i].Op, j.Steps[i].Path, err))
		}
	}
	return errors.Join(errs...)
}

// undoStep undoes step s if it ran; staging is the staging directory.
func undoStep(tree *txTree, staging string, s txStep) error {
	p, it := string(s.Path), staging+"/"+s.Item
	switch s.Op {
	case opPlace:
		if _, staged, err := tree.lstat(it); err != nil || staged {
			return err // still staged: never placed
		}
		if _, placed, err := tree.lstat(p); err != nil || !placed {
			return err
		}
		return tree.rename(p, it)
	case opBackup:
		if _, backed, err := tree.lstat(it); err != nil || !backed {
			return err // the move never happened
		}
		return tree.rename(it, p)
	case opMode:
		return undoMode(tree, s)
	case opRmdir:
		if _, there, err := tree.lstat(p); err != nil || there {
			return err // never removed, or already made again
		}
		return tree.restoreDir(p, s.dirMeta())
	case opReplace:
		if _, staged, err := tree.lstat(it); err != nil || staged {
			return err // still staged: never placed
		}
		if s.Restore != "" {
			return undoFromRestore(tree, staging, s, true)
		}
		return undoFromBackup(tree, staging+"/"+s.Backup, p, true)
	case opUnlink:
		if _, there, err := tree.lstat(p); err != nil || there {
			return err // never removed, or already restored
		}
		if s.Restore != "" {
			return undoFromRestore(tree, staging, s, false)
		}
		return undoFromBackup(tree, staging+"/"+s.Backup, p, false)
	}
	return fmt.Errorf("unknown step %q", s.Op)
}

// undoFromBackup puts the saved destination backup back at p, replacing
// what was placed there when over is set. A backup that is gone was put
// back already.
func undoFromBackup(tree *txTree, backup, p string, over bool) error {
	if _, saved, err := tree.lstat(backup); err != nil || !saved {
		return err
	}
	if over {
		return tree.renameOver(backup, p)
	}
	return tree.rename(backup, p)
}

// undoFromRestore copies the fork point's version of s.Path (s.Restore)
// into the staging directory and moves it into place, over what was placed
// there when over is set. Done again after a crash, it gives the same
// result.
func undoFromRestore(tree *txTree, staging string, s txStep, over bool) error {
	src := string(s.Restore)
	fi, err := fstree.Lstat(src)
	if err != nil {
		return fmt.Errorf("the fork point's version to restore: %w", err)
	}
	tmp := staging + "/restore-" + randomSuffix()
	if err := stageItem(src, tree.abs(tmp), fi); err != nil {
		return err
	}
	if over {
		return tree.renameOver(tmp, string(s.Path))
	}
	return tree.rename(tmp, string(s.Path))
}

// undoMode gives a directory that was there before its old mode back.
func undoMode(tree *txTree, s txStep) error {
	if !s.Existing {
		return nil // a placed directory: it goes back to staging whole
	}
	cur, ok, err := tree.lstat(string(s.Path))
	if err != nil || !ok || !cur.IsDir() {
		return err
	}
	return tree.chmod(string(s.Path), fs.FileMode(s.Old))
}

// finishJournal removes j's staging directory, then the journal.
func finishJournal(tree *txTree, j *journal, jpath string) error {
	if err := removeStaging(tree, j); err != nil {
		return err
	}
	if err := os.Remove(jpath); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(jpath))
}

// readJournal reads the journal at path.
func readJournal(path string) (*journal, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	if err := checkJournal(&j); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return &j, nil
}

// checkJournal refuses a journal that is not of this version or whose
// paths could reach outside its staging directory or target.
func checkJournal(j *journal) error {
	st := string(j.Staging)
	if j.Version != 1 || !filepath.IsAbs(string(j.Target)) || !isStagingPath(st) || strings.Contains(st, "/") {
		return errors.New("not a merge journal of version 1")
	}
	for _, s := range j.Steps {
		kind, n, _ := strings.Cut(s.Item, "/")
		_, nerr := strconv.Atoi(n)
		badItem := s.Op != opMode && s.Op != opRmdir && s.Op != opUnlink && (nerr != nil || (kind != stagedDir && kind != backupDir))
		if err := checkRel(string(s.Path)); err != nil || badItem || !goodBackup(s) {
			return fmt.Errorf("bad step %s %q %q", s.Op, s.Path, s.Item)
		}
	}
	return nil
}

// goodBackup reports whether step s names a backup exactly when its
// operation has one, and a well-formed one.
func goodBackup(s txStep) bool {
	switch {
	case s.Op != opReplace && s.Op != opUnlink:
		return s.Backup == "" && s.Restore == ""
	case s.Restore != "":
		r := string(s.Restore)
		return s.Backup == "" && filepath.IsAbs(r) && filepath.Clean(r) == r
	}
	kind, n, _ := strings.Cut(s.Backup, "/")
	_, err := strconv.Atoi(n)
	return kind == backupDir && err == nil
}

// writeJournal replaces the journal at path atomically and durably: a
// temporary file is written and synced, renamed over path, and the
// directory synced.
func writeJournal(path string, j *journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := atomicfile.Write(path, b, 0o600, atomicfile.Durable); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// dirMeta is what undoing a rmdir step gives the directory back.
type dirMeta struct {
	Mode       fs.FileMode // permission bits with setuid, setgid and sticky
	Uid, Gid   int
	MtimeNanos int64
}

// dirMeta returns the metadata an rmdir step recorded.
func (s txStep) dirMeta() dirMeta {
	return dirMeta{Mode: fs.FileMode(s.Mode), Uid: s.Uid, Gid: s.Gid, MtimeNanos: s.Mtime}
}

// rmdirStep returns the step that removes directory p, described by m.
func rmdirStep(p string, m dirMeta) txStep {
	return txStep{Op: opRmdir, Path: rawPath(p), Mode: uint32(m.Mode), Uid: m.Uid, Gid: m.Gid, Mtime: m.MtimeNanos}
}
