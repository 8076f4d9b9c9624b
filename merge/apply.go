package merge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/fstree"
	"github.com/tinehq/tine/internal/progress"
	"github.com/tinehq/tine/internal/testhook"
	"github.com/tinehq/tine/merge/internal/plan"
)

// applyHook, when set (by tests), is called at each step of Apply: after
// "staged", "journaled", "backup:PATH", "rmdir:PATH", "unlinked:PATH",
// "replaced:PATH", "placed:PATH" and "mode:PATH", just before "committed"
// (the commit mark), and at "cleanup" after it. An error makes Apply fail
// there.
var applyHook func(step string) error

// Names inside the staging directory.
const (
	stagedDir = "new"    // staged upserts, one per plan entry index
	backupDir = "backup" // destinations moved away, one per plan entry index
)

// Apply applies the clean plan p to directory target as a transaction:
// either all of it lands or none of it, even across a crash.
//
// Every upsert is first staged in a directory inside target
// (".tine-merge-*", on the same filesystem). Then the journal, a
// file at path journal outside target, records the plan and every step. The
// steps run in order: deletions deepest first, directories shallowest first,
// then files and symlinks; each destination that exists is moved into the
// staging directory as a backup before the staged item is renamed into
// place, never replacing anything. Directory modes are set last. Only when
// every step ran, and the target's filesystem is synced (staged data
// included), is the journal marked committed and the backups removed. On any
// error the backups are moved back in reverse order and target is as it
// was; after a crash, Recover does the same from the journal. Paths are
// resolved beneath target without following any symlink.
//
// A plan with conflicts is refused with an error wrapping ErrConflict; an
// unfinished journal at journal with one wrapping tine.ErrState.
func Apply(ctx context.Context, p *Plan, target, journal string, o ApplyOptions) error {
	if err := checkApplicable(p, journal); err != nil {
		return err
	}
	tx, err := beginTx(target, journal, p)
	if err != nil {
		return fmt.Errorf("merge: apply to %s: %w", target, err)
	}
	defer tx.tree.close()
	tx.opt = o
	if err := tx.run(ctx); err != nil {
		return fmt.Errorf("merge: apply to %s: %w", target, tx.abort(err))
	}
	if err := tx.finish(); err != nil {
		return fmt.Errorf("merge: applied to %s, but finishing failed (Recover finishes it): %w", target, err)
	}
	return nil
}

// ApplyOptions are what a caller adds to an apply.
type ApplyOptions struct {
	// Note is kept in the journal and handed to Recover's onCommitted.
	Note json.RawMessage
	// Committed, if set, is called once the merge has committed (every
	// step ran, the journal says so) and before its leftovers are removed:
	// the place to record the merge, as after a crash Recover calls its
	// onCommitted there with Note. An error leaves the journal committed.
	Committed func() error
}

// checkApplicable refuses a plan with conflicts or bad paths, and a journal
// path where a merge is unfinished.
func checkApplicable(p *Plan, journal string) error {
	if c := p.Conflicts(); len(c) > 0 {
		return fmt.Errorf("merge: %d paths in conflict (first %q: %s): %w", len(c), c[0].Path, c[0].Reason, ErrConflict)
	}
	for _, e := range p.Entries {
		if err := checkRel(e.Path); err != nil {
			return fmt.Errorf("merge: plan entry %q: %w", e.Path, err)
		}
	}
	if _, err := os.Lstat(journal); err == nil {
		return fmt.Errorf("merge: journal %s exists: an earlier merge is unfinished, recover it first: %w", journal, tine.ErrState)
	}
	return nil
}

// applyTx is one Apply in progress.
type applyTx struct {
	tree    *txTree
	plan    *Plan
	jpath   string
	j       *journal
	staging string // slash path of the staging directory, relative to target
	save    bool   // file destinations are saved while staging, not moved (see opReplace)
	opt     ApplyOptions
	linkTo  map[int]int // entry → the entry whose staged file it is a hard link of
	// stagedAt is, per entry, where its upsert is staged (relative to the
	// staging directory): new/INDEX, or, for an entry below a directory
	// the target does not have (newDirs), its path inside that
	// directory's staged copy, placed with it by one rename.
	stagedAt []string
	newDirs  map[int]bool // entries staged as directories the target does not have
	nested   map[int]bool // entries staged inside a new directory's staged copy
	src      sources      // while staging, the run views entries are read from
	lowers   []string     // with save, the overlay view's lower layers (keepDest)
}

// hardLinks finds the upserts whose sources are hard links of one file:
// each maps to the first of its group, whose staged copy the others link
// to, so that a merge keeps the run's hard links instead of splitting them.
func hardLinks(entries []Entry, src sources) map[int]int {
	first := map[[2]uint64]int{}
	out := map[int]int{}
	for i, e := range entries {
		if (e.Action != Take && e.Action != TextMerged) || e.Source == "" {
			continue
		}
		id, ok := linkIDOf(e, src)
		if !ok {
			continue
		}
		if f, seen := first[id]; seen {
			out[i] = f
			continue
		}
		first[id] = i
	}
	return out
}

// linkIDOf is linkID of e's Source, read beneath its view.
func linkIDOf(e Entry, src sources) ([2]uint64, bool) {
	p, release, err := src.pin(e)
	if err != nil {
		return [2]uint64{}, false
	}
	defer release()
	return linkID(p)
}

// linkStaged makes each linked entry's staged item a hard link of its
// group's first.
func (tx *applyTx) linkStaged() error {
	for i, f := range tx.linkTo {
		from := tx.tree.abs(tx.stagingRel(tx.stagedAt[f]))
		if err := os.Link(from, tx.tree.abs(tx.stagingRel(tx.stagedAt[i]))); err != nil {
			return fmt.Errorf("stage %q as a hard link: %w", tx.plan.Entries[i].Path, err)
		}
	}
	return nil
}

// beginTx opens target, records the staging directory in a new journal and
// creates it.
func beginTx(target, jpath string, p *Plan) (*applyTx, error) {
	abs, err := filepath.Abs(target)
	if err != nil {
		return nil, err
	}
	tree, err := openTxTree(abs)
	if err != nil {
		return nil, err
	}
	tx := &applyTx{tree: tree, plan: p, jpath: jpath, save: tree.movesCopy()}
	if tx.save {
		tx.lowers = tree.lowerDirs()
	}
	tx.staging = stagingPrefix + randomSuffix()
	tx.j = &journal{Version: 1, State: stateStaging, Target: rawPath(abs), Staging: rawPath(tx.staging)}
	if err := writeJournal(jpath, tx.j); err != nil {
		tree.close()
		return nil, err
	}
	return tx, nil
}

// randomSuffix returns 16 random hex digits.
func randomSuffix() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// run stages, journals and applies every step.
func (tx *applyTx) run(ctx context.Context) error {
	if err := tx.stage(ctx); err != nil {
		return err
	}
	if err := callHook("staged"); err != nil {
		return err
	}
	tx.j.State, tx.j.Plan, tx.j.Note = stateApplying, tx.plan, tx.opt.Note
	if err := writeJournal(tx.jpath, tx.j); err != nil {
		return err
	}
	if err := callHook("journaled"); err != nil {
		return err
	}
	for i, s := range tx.j.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := tx.do(s); err != nil {
			return err
		}
		progress.Report(ctx, "applying", i+1, len(tx.j.Steps))
	}
	if err := tx.tree.sync(tx.touchedDirs()); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil { // the last point before the commit
		return err
	}
	return callHook("committed")
}

// callHook calls applyHook, if set, at step, and the end-to-end tests'
// interrupt point "merge:KIND" (step up to its first colon: "merge:placed").
func callHook(step string) error {
	kind, _, _ := strings.Cut(step, ":")
	testhook.Interrupt("merge:" + kind)
	if applyHook == nil {
		return nil
	}
	if err := applyHook(step); err != nil {
		return fmt.Errorf("at %s: %w", step, err)
	}
	return nil
}

// finish marks the journal committed, then removes the staging directory
// (backups included) and the journal.
func (tx *applyTx) finish() error {
	tx.j.State = stateCommitted
	if err := writeJournal(tx.jpath, tx.j); err != nil {
		return err
	}
	if tx.opt.Committed != nil {
		if err := tx.opt.Committed(); err != nil {
			return fmt.Errorf("recording the merge: %w", err)
		}
	}
	if err := callHook("cleanup"); err != nil {
		return err
	}
	return finishJournal(tx.tree, tx.j, tx.jpath)
}

// abort undoes whatever ran after err, leaving target as it was.
func (tx *applyTx) abort(err error) error {
	if uerr := rollBack(tx.tree, tx.j, tx.jpath); uerr != nil {
		return errors.Join(err, fmt.Errorf("rolling back (Recover retries): %w", uerr))
	}
	return err
}

// stage copies every upsert of the plan into the staging directory and
// builds the list of steps.
func (tx *applyTx) stage(ctx context.Context) error {
	for _, d := range []string{tx.staging, tx.stagingRel(stagedDir), tx.stagingRel(backupDir)} {
		if err := tx.tree.mkdir(d); err != nil {
			return err
		}
	}
	var err error
	if tx.src, err = openSources(tx.plan.Entries); err != nil {
		return err
	}
	defer tx.src.close()
	tx.linkTo = hardLinks(tx.plan.Entries, tx.src)
	if err := tx.nestNew(); err != nil {
		return err
	}
	preps := make([]entryPrep, len(tx.plan.Entries))
	var staged atomic.Int64
	err = plan.InParallel(ctx, len(preps), func(i int) (err error) {
		preps[i], err = tx.prepare(i, tx.plan.Entries[i])
		if err != nil {
			return fmt.Errorf("stage %q: %w", tx.plan.Entries[i].Path, err)
		}
		progress.Report(ctx, "staging", int(staged.Add(1)), len(preps))
		return nil
	})
	if err != nil {
		return err
	}
	if err := tx.linkStaged(); err != nil {
		return err
	}
	if err := tx.finishNewDirs(); err != nil {
		return err
	}
	var dels, dirs, files, modes []txStep
	for _, pr := range preps {
		switch pr.kind {
		case prepDelete:
			dels = append(dels, pr.steps...)
		case prepDir:
			dirs = append(dirs, pr.steps...)
		case prepFile:
			files = append(files, pr.steps...)
		}
		modes = append(modes, pr.mode...)
	}
	slices.SortStableFunc(dels, func(a, b txStep) int { return depth(b.Path) - depth(a.Path) })
	slices.SortStableFunc(modes, func(a, b txStep) int { return depth(b.Path) - depth(a.Path) })
	tx.j.Steps = slices.Concat(dels, dirs, files, modes)
	return nil
}

// entryPrep is what staging made of one plan entry: its steps, the mode
// step to run last if any, and which phase the steps belong to.
type entryPrep struct {
	kind        int
	steps, mode []txStep
}

// Phases of an entry's steps.
const (
	prepNone   = iota // nothing to do
	prepDelete        // deletions run first, deepest first
	prepDir           // then directories, shallowest first
	prepFile          // then files and symlinks
)

// prepare stages entry i, if it writes anything, and returns its steps.
func (tx *applyTx) prepare(i int, e Entry) (entryPrep, error) {
	switch {
	case e.Action != Take && e.Action != TextMerged:
		return entryPrep{}, nil
	case e.Source == "":
		steps, err := tx.deletion(i, e)
		return entryPrep{kind: prepDelete, steps: steps}, err
	}
	return tx.upsert(i, e)
}

// nestNew chooses where each upsert is staged (stagedAt). A directory the
// run added and the target does not have is staged whole: what the plan
// puts below it is staged inside its staged copy, and one rename places
// all of it, where staging each entry apart cost a rename and a journal
// step per file (issue 24: a merge of 40,000 new files). The new
// directories are made here, parents first, owner-only; their metadata
// comes in finishNewDirs, once they are filled.
func (tx *applyTx) nestNew() error {
	entries := tx.plan.Entries
	tx.stagedAt = make([]string, len(entries))
	tx.newDirs, tx.nested = map[int]bool{}, map[int]bool{}
	order := make([]int, len(entries))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return depth(rawPath(entries[a].Path)) - depth(rawPath(entries[b].Path))
	})
	dirAt := map[string]int{}
	for _, i := range order {
		e := entries[i]
		tx.stagedAt[i] = item(stagedDir, i)
		if !isUpsert(e) {
			continue
		}
		if k, ok := dirAt[path.Dir(e.Path)]; ok {
			// Staged inside its new parent, unless that path grows too
			// long to be named in one call: then staged and placed on
			// its own, after its parent.
			if at := tx.stagedAt[k] + "/" + path.Base(e.Path); len(tx.tree.abs(tx.stagingRel(at))) < maxNested {
				tx.stagedAt[i], tx.nested[i] = at, true
			}
		}
		if e.Type != "dir" {
			continue
		}
		if !tx.nested[i] {
			if _, exists, err := tx.tree.lstat(e.Path); err != nil || exists {
				if err != nil {
					return err
				}
				continue
			}
		}
		if err := tx.tree.mkdir(tx.stagingRel(tx.stagedAt[i])); err != nil {
			return err
		}
		tx.newDirs[i], dirAt[e.Path] = true, i
	}
	return nil
}

// maxNested bounds the staged path of an entry staged inside a new
// directory: it is named whole by the calls that stage it.
const maxNested = 2048

// isUpsert reports whether e writes content to its path.
func isUpsert(e Entry) bool {
	return (e.Action == Take || e.Action == TextMerged) && e.Source != ""
}

// stageUpsert stages entry i's source (source, described by src) at its
// stagedAt, unless nestNew made it (a new directory) or linkStaged makes
// it (a hard link of another entry's staged file).
func (tx *applyTx) stageUpsert(i int, source string, src fs.FileInfo) error {
	if tx.newDirs[i] {
		if !src.IsDir() {
			return fmt.Errorf("no longer a directory in the run since planning: %w", tine.ErrState)
		}
		return nil
	}
	if _, linked := tx.linkTo[i]; linked {
		return nil
	}
	return stageItem(source, tx.tree.abs(tx.stagingRel(tx.stagedAt[i])), src)
}

// finishNewDirs gives the staged new directories, deepest first, the
// metadata of their sources (stageItem's for a directory): times last,
// now that nothing more is staged in them.
func (tx *applyTx) finishNewDirs() error {
	var dirs []int
	for i := range tx.newDirs {
		dirs = append(dirs, i)
	}
	slices.SortFunc(dirs, func(a, b int) int {
		return depth(rawPath(tx.plan.Entries[b].Path)) - depth(rawPath(tx.plan.Entries[a].Path))
	})
	for _, i := range dirs {
		if err := tx.finishNewDir(i); err != nil {
			return fmt.Errorf("stage %q: %w", tx.plan.Entries[i].Path, err)
		}
	}
	return nil
}

// finishNewDir gives new directory i's staged copy its source's metadata,
// writable by its owner until its mode step.
func (tx *applyTx) finishNewDir(i int) error {
	source, release, err := tx.src.pin(tx.plan.Entries[i])
	if err != nil {
		return err
	}
	defer release()
	fi, err := fstree.Lstat(source)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("no longer a directory in the run since planning: %w", tine.ErrState)
	}
	dst := tx.tree.abs(tx.stagingRel(tx.stagedAt[i]))
	if err := stageMeta(source, dst, fi); err != nil {
		return err
	}
	return os.Chmod(dst, plan.Perm(fi)|0o700)
}

// depth counts the components of slash path p.
func depth(p rawPath) int { return strings.Count(string(p), "/") + 1 }

// stagingRel returns the target-relative path of name in the staging directory.
func (tx *applyTx) stagingRel(name string) string { return tx.staging + "/" + name }

// item returns the staging name of entry i's staged upsert or backup.
func item(kind string, i int) string { return kind + "/" + strconv.Itoa(i) }

// deletion plans removing entry i's path: a backup, or nothing when the
// target no longer has it.
func (tx *applyTx) deletion(i int, e Entry) ([]txStep, error) {
	cur, ok, err := tx.tree.lstat(e.Path)
	if err != nil || !ok {
		return nil, err
	}
	if tx.save && !cur.IsDir() {
		s := txStep{Op: opUnlink, Path: rawPath(e.Path)}
		err := tx.keepDest(&s, i, e)
		return []txStep{s}, err
	}
	s, err := tx.backupStep(i, e.Path, cur)
	return []txStep{s}, err
}

// keepDest makes the destination of entry i, which step s replaces or
// removes in place on an overlay view, restorable: from the file of a
// lower layer that it still is (a destination the target has not touched
// since its layers were sealed; layers are never written), else from a copy
// saved now into the staging directory.
func (tx *applyTx) keepDest(s *txStep, i int, e Entry) error {
	if lower := tx.lowerOf(e.Path); lower != "" {
		s.Restore = rawPath(lower)
		return nil
	}
	s.Backup = item(backupDir, i)
	return tx.saveDest(e.Path, s.Backup)
}

// lowerOf returns the file of one of the view's lower layers that the
// target's p is (plan.SameInode: an overlay view shows a lower file it has not
// copied up under the layer's inode number), or "".
func (tx *applyTx) lowerOf(p string) string {
	if len(tx.lowers) == 0 {
		return ""
	}
	f, err := tx.tree.openFile(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	cur, err := f.Stat()
	if err != nil || !cur.Mode().IsRegular() {
		return ""
	}
	for _, l := range tx.lowers {
		cand := filepath.Join(l, filepath.FromSlash(p))
		if fi, err := fstree.Lstat(cand); err == nil && plan.SameInode(cur, fi, true) {
			return cand
		}
	}
	return ""
}

// saveDest copies destination p, not a directory, into the staging
// directory as backup, by the same copy that stages content.
func (tx *applyTx) saveDest(p, backup string) error {
	src, err := tx.tree.openFile(p)
	if err != nil {
		return err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return err
	}
	return stageItem(src.Name(), tx.tree.abs(tx.stagingRel(backup)), fi)
}

// backupStep returns the step that clears destination p (of mode cur) out
// of the way of entry i: a directory is removed (it must be empty by then)
// with its metadata recorded, anything else moved into the staging
// directory.
func (tx *applyTx) backupStep(i int, p string, cur fs.FileMode) (txStep, error) {
	if !cur.IsDir() {
		return txStep{Op: opBackup, Path: rawPath(p), Item: item(backupDir, i)}, nil
	}
	m, err := tx.tree.statDir(p)
	if err != nil {
		return txStep{}, err
	}
	return rmdirStep(p, m), nil
}

// upsert stages entry i's source and returns the steps that put it in place.
func (tx *applyTx) upsert(i int, e Entry) (entryPrep, error) {
	source, release, err := tx.src.pin(e)
	if err != nil {
		return entryPrep{}, err
	}
	defer release()
	src, err := fstree.Lstat(source)
	if err != nil {
		return entryPrep{}, err
	}
	cur, exists, err := tx.tree.lstat(e.Path)
	if err != nil {
		return entryPrep{}, err
	}
	if exists && (tx.newDirs[i] || tx.nested[i]) {
		return entryPrep{}, fmt.Errorf("appeared in the target since planning: %w", tine.ErrState)
	}
	pr, want := entryPrep{kind: prepFile}, plan.Perm(src)
	if src.IsDir() {
		pr.kind = prepDir
	}
	if src.IsDir() && exists && cur.IsDir() {
		if cur&permMask != want {
			pr.mode = []txStep{{Op: opMode, Path: rawPath(e.Path), Mode: uint32(want), Old: uint32(cur & permMask), Existing: true}}
		}
		return pr, nil
	}
	staged := tx.stagedAt[i]
	if err := tx.stageUpsert(i, source, src); err != nil {
		return entryPrep{}, err
	}
	if tx.nested[i] { // placed with the new directory it is staged in
		if src.IsDir() && want != want|0o700 {
			pr.mode = []txStep{{Op: opMode, Path: rawPath(e.Path), Mode: uint32(want)}}
		}
		return pr, nil
	}
	switch {
	case exists && tx.save && !cur.IsDir() && !src.IsDir():
		s := txStep{Op: opReplace, Path: rawPath(e.Path), Item: staged}
		err := tx.keepDest(&s, i, e)
		pr.steps = append(pr.steps, s)
		return pr, err
	case exists && tx.save && !cur.IsDir():
		s := txStep{Op: opUnlink, Path: rawPath(e.Path)}
		if err := tx.keepDest(&s, i, e); err != nil {
			return entryPrep{}, err
		}
		pr.steps = append(pr.steps, s)
	case exists:
		s, err := tx.backupStep(i, e.Path, cur)
		if err != nil {
			return entryPrep{}, err
		}
		pr.steps = append(pr.steps, s)
	}
	pr.steps = append(pr.steps, txStep{Op: opPlace, Path: rawPath(e.Path), Item: staged})
	if src.IsDir() && want != want|0o700 {
		pr.mode = []txStep{{Op: opMode, Path: rawPath(e.Path), Mode: uint32(want)}}
	}
	return pr, nil
}

// permMask selects permission bits with setuid, setgid and sticky.
const permMask = fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// do runs one step, then calls the hook.
func (tx *applyTx) do(s txStep) error {
	p := string(s.Path)
	var err error
	var step string
	switch s.Op {
	case opBackup:
		err, step = tx.backup(p, s.Item), "backup:"+p
	case opPlace:
		err, step = tx.tree.rename(tx.stagingRel(s.Item), p), "placed:"+p
	case opMode:
		err, step = tx.tree.chmod(p, fs.FileMode(s.Mode)), "mode:"+p
	case opRmdir:
		err, step = tx.rmdir(p), "rmdir:"+p
	case opReplace:
		err, step = tx.replace(p, s.Item), "replaced:"+p
	case opUnlink:
		err, step = tx.unlink(p), "unlinked:"+p
	default:
		err = fmt.Errorf("unknown step %q", s.Op)
	}
	if err != nil {
		return err
	}
	return callHook(step)
}

// backup moves the destination p, not a directory, into the staging
// directory.
func (tx *applyTx) backup(p, backup string) error {
	if err := tx.still(p, false); err != nil {
		return err
	}
	return tx.tree.rename(p, tx.stagingRel(backup))
}

// replace renames the staged item over destination p, which must still be
// what was saved: a file or symlink, not a directory.
func (tx *applyTx) replace(p, staged string) error {
	if err := tx.still(p, false); err != nil {
		return err
	}
	return tx.tree.renameOver(tx.stagingRel(staged), p)
}

// unlink removes destination p, saved while staging.
func (tx *applyTx) unlink(p string) error {
	if err := tx.still(p, false); err != nil {
		return err
	}
	return tx.tree.unlink(p)
}

// still checks that destination p is there, and a directory exactly when
// dir is set, as it was when the steps were made.
func (tx *applyTx) still(p string, dir bool) error {
	cur, ok, err := tx.tree.lstat(p)
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("%q vanished from the target since planning: %w", p, tine.ErrState)
	case cur.IsDir() && !dir:
		return fmt.Errorf("%q became a directory since planning: %w", p, tine.ErrState)
	case !cur.IsDir() && dir:
		return fmt.Errorf("%q is no longer a directory since planning: %w", p, tine.ErrState)
	}
	return nil
}

// rmdir removes the destination directory p, which must be empty by now
// (what it held was planned away first): anything left is content the plan
// does not know of, and is not risked.
func (tx *applyTx) rmdir(p string) error {
	if err := tx.still(p, true); err != nil {
		return err
	}
	empty, err := tx.tree.isEmptyDir(p)
	if err != nil {
		return err
	}
	if !empty {
		return fmt.Errorf("directory %q gained entries since planning: %w", p, tine.ErrState)
	}
	return tx.tree.rmdir(p)
}

// touchedDirs returns the directories whose entries the steps changed.
func (tx *applyTx) touchedDirs() []string {
	seen := map[string]bool{tx.staging + "/" + stagedDir: true, tx.staging + "/" + backupDir: true}
	for _, s := range tx.j.Steps {
		seen[path.Dir(string(s.Path))] = true
	}
	out := make([]string, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	return out
}

// stageItem copies src (described by fi) to the new path dst with the
// metadata a copy into a user's tree keeps (stageMeta): a file with its
// bytes; a symlink with its target, never followed; an empty directory
// that the owner can write into until its mode step. src's last component
// is never followed (sources.pin).
func stageItem(src, dst string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		if err := os.Mkdir(dst, 0o700); err != nil {
			return err
		}
		if err := stageMeta(src, dst, fi); err != nil {
			return err
		}
		return os.Chmod(dst, plan.Perm(fi)|0o700)
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := fstree.Readlink(src)
		if err != nil {
			return err
		}
		if err := os.Symlink(target, dst); err != nil {
			return err
		}
		return stageMeta(src, dst, fi)
	case fi.Mode().IsRegular():
		return stageFile(src, dst, fi)
	}
	return fmt.Errorf("cannot stage %s: unsupported file type %v", src, fi.Mode().Type())
}

// stageMeta gives dst the metadata of src (described by fi) as fstree
// copies it into a user's tree: owner (when root), permission bits,
// extended attributes (trusted.* included, overlayfs' own never) and times.
func stageMeta(src, dst string, fi fs.FileInfo) error {
	return fstree.CopyMeta(src, dst, fi, fstree.MetaOptions{UserTree: true})
}

// stageFile copies the regular file src (described by fi) to the new file
// dst, holes kept as holes, with its metadata (stageMeta).
func stageFile(src, dst string, fi fs.FileInfo) error {
	in, err := fstree.OpenFile(src, os.O_RDONLY|oNoFollow|syscall.O_NONBLOCK, 0)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = fstree.CopyContents(out, in)
	if err == nil {
		err = stageMeta(src, dst, fi)
	}
	if err == nil {
		err = syncStaged(out)
	}
	if err != nil {
		out.Close()
		return fmt.Errorf("stage %s: %w", src, err)
	}
	return out.Close()
}

// removeStaging removes the staging directory of j from tree, emptying
// its two big directories on several goroutines first.
func removeStaging(tree *txTree, j *journal) error {
	st := string(j.Staging)
	if _, ok, err := tree.lstat(st); err != nil || !ok {
		return err
	}
	for _, sub := range []string{stagedDir, backupDir} {
		dir := tree.abs(st + "/" + sub)
		names, err := plan.ReadDirNames(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		err = plan.InParallel(context.Background(), len(names), func(i int) error {
			return fstree.RemoveAll(filepath.Join(dir, names[i]))
		})
		if err != nil {
			return err
		}
	}
	return fstree.RemoveAll(tree.abs(st))
}
