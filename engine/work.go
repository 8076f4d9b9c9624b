package engine

import (
	"context"
	"os"
	"path"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/layer"
	"github.com/tinehq/tine/merge"
)

// Work is what a run changed since its fork point, in the scope its merge
// into its parent uses: tine's one view of a fork's work. File counts,
// line counts, evidence, red flags, the judge's features, readiness,
// compare and the dashboard all read it, and the merge carries exactly
// it. In the git scope it is what git would stage (ignored files left
// out); in the filesystem scope every change; in both, less the
// byproducts of the parent's tine.toml ([merge] byproducts: caches,
// bytecode, coverage data) and less what is inside a .git directory
// (a commit's objects, refs and logs are not files of the work: the
// commits themselves travel with the merge).
type Work struct {
	Scope   string         `json:"scope"`   // the scope of the run's merge: git or filesystem
	Changes []layer.Change `json:"changes"` // sorted by path
	// Plan is the dry-run plan of the run's merge into its parent; nil
	// for a run without a live parent.
	Plan *merge.Plan `json:"-"`
	// Target is the run's parent, when it has a live one.
	Target *tine.Run `json:"-"`
}

// Files counts the changes to paths that are not directories.
func (w *Work) Files() int {
	n := 0
	for _, c := range w.Changes {
		if c.Type != "dir" {
			n++
		}
	}
	return n
}

// MergesCleanly reports whether the run's merge into its parent plans
// without a conflict.
func (w *Work) MergesCleanly() bool { return w.Plan != nil && w.Plan.Clean() }

// Work returns what run r changed since its fork point (see Work). For a
// run with a live parent it plans the merge into it, as a dry run; for
// one without, it reads the run's changes less the byproducts and .git
// internals, in the scope its merge would use.
func (e *Engine) Work(ctx context.Context, r Ref) (*Work, error) {
	dst, err := e.mergeTarget(ctx, r, "")
	if err != nil {
		return e.workAlone(ctx, r)
	}
	scratch, err := e.scratch(r)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	o := MergeOptions{}
	p, changes, err := newMergeTx(e, r, dst).planWork(ctx, &o, scratch)
	if err != nil {
		return nil, err
	}
	return newWork(o.Scope, changes, p, dst.Run), nil
}

// workAlone is Work for a run without a live parent: its changes less the
// byproducts of its source's tine.toml and the .git internals.
func (e *Engine) workAlone(ctx context.Context, r Ref) (*Work, error) {
	changes, err := e.Changes(ctx, r)
	if err != nil {
		return nil, err
	}
	scope := ScopeFilesystem
	if r.Run.GitHead != "" {
		scope = ScopeGit
	}
	src, ok := e.boundarySource(ctx, r)
	if !ok {
		src = r
	}
	return newWork(scope, dropByproducts(changes, e.byproducts(src)), nil, nil), nil
}

// newWork is the work of changes (the byproducts already left out) as
// plan p carries them: in the git scope, only the paths p has.
func newWork(scope string, changes []layer.Change, p *merge.Plan, target *tine.Run) *Work {
	w := &Work{Scope: scope, Plan: p, Target: target, Changes: []layer.Change{}}
	var planned map[string]bool
	if p != nil && scope == ScopeGit {
		planned = make(map[string]bool, len(p.Entries))
		for _, en := range p.Entries {
			planned[en.Path] = true
		}
	}
	for _, c := range changes {
		if inGitDir(c.Path) || planned != nil && !planned[c.Path] {
			continue
		}
		w.Changes = append(w.Changes, c)
	}
	return w
}

// inGitDir reports whether slash-separated path p is a .git directory or
// file, or lies in one.
func inGitDir(p string) bool {
	return p == ".git" || strings.HasPrefix(p, ".git/") || strings.Contains(p, "/.git/") || strings.HasSuffix(p, "/.git")
}

// byproducts returns the byproduct patterns of run r's tine.toml
// (config.Merge); tine's defaults when the file cannot be read.
func (e *Engine) byproducts(r Ref) []string {
	cfg, err := config.Load(e.Path(r.Workspace, r.Run))
	if err != nil {
		return config.DefaultByproducts
	}
	return cfg.Merge.ByproductList()
}

// dropByproducts returns changes less the byproducts among them and the
// directories the run added that held nothing but byproducts.
func dropByproducts(changes []layer.Change, patterns []string) []layer.Change {
	if len(patterns) == 0 {
		return changes
	}
	kept := make([]layer.Change, 0, len(changes))
	keptUnder, droppedUnder := map[string]bool{}, map[string]bool{}
	mark := func(set map[string]bool, p string) {
		for d := path.Dir(p); d != "." && !set[d]; d = path.Dir(d) {
			set[d] = true
		}
	}
	for _, c := range changes {
		if config.IsByproduct(c.Path, patterns) {
			mark(droppedUnder, c.Path)
			continue
		}
		mark(keptUnder, c.Path)
		kept = append(kept, c)
	}
	out := kept[:0]
	for _, c := range kept {
		if c.Type == "dir" && c.Kind == layer.Added && droppedUnder[c.Path] && !keptUnder[c.Path] {
			continue
		}
		out = append(out, c)
	}
	return out
}
