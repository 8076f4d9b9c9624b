package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/display"
	"github.com/tinehq/tine/merge"
)

func newMerge(a *app) *cobra.Command {
	var o engine.MergeOptions
	var git, fsys, commits, force, asJSON, verbose bool
	c := &cobra.Command{
		Use:   "merge RUN [--into TARGET] [--git | --filesystem | --paths P...]",
		Short: "Carry RUN's changes into another run (its parent by default)",
		Long: `Plans a merge of what RUN changed since its fork point into TARGET (default:
RUN's parent), prints the plan, and applies it as a transaction: all of it
lands or none of it, even across a crash.

  --git         the patch from the fork point's files to RUN's working tree
                as git sees them (commits, staged, unstaged, untracked,
                deletions, renames, modes, symlinks, binaries; ignored files
                left out); default for git workspaces. RUN's commits since
                the fork point land in TARGET's history too: replayed onto
                its HEAD with their messages and authors (or fast-forwarded
                to), a conflict when one does not apply; --no-commits
                squashes them into TARGET's working tree instead
  --filesystem  three-way at path granularity over every file: a path the
                target changed too is a conflict unless both agree
  --paths P...  the filesystem merge narrowed to these paths

The plan is printed as a summary: how many paths each action has, the
first 10 paths of each and every conflict; --verbose lists every path,
--json prints everything. A plan with a conflict is printed and nothing is
written (exit status 9).
--dry-run only plans and checks. --text-merge merges text files both sides
changed line-wise (diff3); overlapping edits still conflict.

--filesystem and --paths leave out what RUN changed in the internals of
any .git directory of the workspace (hooks, config, info/attributes and
everything else but objects, refs, logs and the index): git would run it
on your side at your next git command. The plan lists each path left out;
--include-git-internals carries them too, after you have read them.`,
		Example: `  tine merge source-2 --dry-run
  tine merge source-2 --filesystem --text-merge
  tine merge source-2 --paths src/api --paths go.mod --json`,
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			switch {
			case git && fsys:
				return usageErr(c, "--git and --filesystem exclude each other")
			case commits && o.NoCommits:
				return usageErr(c, "--commits and --no-commits exclude each other")
			case git:
				o.Scope = engine.ScopeGit
			case fsys:
				o.Scope = engine.ScopeFilesystem
			}
			o.Force = o.Force || force
			ctx, stop := interruptible(c.Context())
			defer stop()
			return a.withOps(ctx, func(op ops, e *engine.Engine) error {
				res, err := op.Merge(a.progress(ctx, "merging "+args[0], asJSON), args[0], o)
				a.progressDone()
				if res != nil {
					if perr := a.printMerge(res, asJSON, verbose); perr != nil {
						return perr
					}
				}
				return interrupted(ctx, err, res != nil && res.Applied, mergeOutcome(args[0], res))
			})
		},
	}
	c.Flags().StringVar(&o.Into, "into", "", "target run (default: RUN's parent)")
	c.Flags().BoolVar(&git, "git", false, "merge the git patch since the fork-point commit")
	c.Flags().BoolVar(&fsys, "filesystem", false, "three-way merge over every path")
	c.Flags().StringArrayVar(&o.Paths, "paths", nil, "merge only these workspace-relative paths (repeatable)")
	c.Flags().BoolVar(&o.DryRun, "dry-run", false, "plan and check only; write nothing")
	c.Flags().BoolVar(&o.TextMerge, "text-merge", false, "merge text files both sides changed, line by line")
	c.Flags().BoolVar(&o.Force, "while-running", false, "apply even while tine exec commands run in the target (no supervisor)")
	deprecatedForce(c, &force, "--while-running")
	c.Flags().BoolVar(&o.NoCommits, "no-commits", false, "leave RUN's commits out of TARGET's history: their changes land uncommitted (git scope)")
	c.Flags().BoolVar(&commits, "commits", false, "carry RUN's commits (the default)")
	deprecate(c, "commits", "commits are carried by default; --no-commits squashes them")
	c.Flags().BoolVar(&o.IncludeGitInternals, "include-git-internals", false, "carry RUN's changes to .git hooks, config and other internals too (--filesystem, --paths)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the plan and outcome as JSON")
	c.Flags().BoolVar(&verbose, "verbose", false, "list every path of the plan, not a summary")
	return c
}

// mergeOutcome says what an interrupted merge of run ref did.
func mergeOutcome(ref string, res *engine.MergeResult) outcome {
	o := outcome{before: "nothing was merged", after: "the merge was applied: " + ref + " is merged",
		watch: "tine log " + ref + " shows whether it merged"}
	if res != nil && res.Target != nil {
		o.after += " into " + res.Target.Name
	}
	return o
}

// converged counts the entries of p whose path the target has as the run
// does already: a merge writes nothing there.
func converged(p *merge.Plan) int {
	n := 0
	for _, en := range p.Entries {
		if en.Action == merge.Converged {
			n++
		}
	}
	return n
}

// nothingChanged says why a merge's plan is empty: the run changed nothing
// under the paths it was narrowed to, nothing git sees (ignored files are
// left out of the git scope), or nothing at all.
func nothingChanged(res *engine.MergeResult) string {
	switch {
	case res.Plan.Scope == engine.ScopePaths && len(res.Paths) > 0:
		quoted := make([]string, len(res.Paths))
		for i, p := range res.Paths {
			quoted[i] = display.Path(p)
		}
		return fmt.Sprintf("%s changed nothing under %s since its fork point", res.Run.Name, strings.Join(quoted, ", "))
	case res.Plan.Scope == engine.ScopeGit:
		return fmt.Sprintf("%s changed nothing git sees since its fork point (files git ignores are left out of the git scope; --filesystem merges them)", res.Run.Name)
	}
	return fmt.Sprintf("%s changed nothing since its fork point", res.Run.Name)
}

// alreadyThere says how many paths a merge found the same on both sides.
func alreadyThere(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d more already the same there", n)
}

// printMerge prints a merge's result: as JSON (everything), or its plan
// (every path when verbose, else a summary) and what became of it.
func (a *app) printMerge(res *engine.MergeResult, asJSON, verbose bool) error {
	if asJSON {
		return a.printJSON(res)
	}
	if err := writePlan(a.stdout, res.Plan, verbose); err != nil {
		return err
	}
	n, same := len(res.Plan.Entries), converged(res.Plan)
	switch {
	case !res.Plan.Clean():
		fmt.Fprintf(a.stdout, "%s scope: %d path(s), %d in conflict; nothing written\n", res.Plan.Scope, n, len(res.Plan.Conflicts()))
	case n == 0 && len(res.Plan.LeftOut) > 0 && (res.Applied || res.DryRun):
		fmt.Fprintf(a.stdout, "%s scope: nothing to merge but the repository internals left out\n", res.Plan.Scope)
	case n == 0 && (res.Applied || res.DryRun):
		fmt.Fprintf(a.stdout, "%s scope: nothing to merge: %s\n", res.Plan.Scope, nothingChanged(res))
	case same == n && (res.Applied || res.DryRun):
		fmt.Fprintf(a.stdout, "%s scope: nothing to merge: %s has all %d path(s) of %s already\n", res.Plan.Scope, res.Target.Name, n, res.Run.Name)
	case res.Applied:
		fmt.Fprintf(a.stdout, "%s scope: merged %d path(s) from %s into %s%s\n", res.Plan.Scope, n-same, res.Run.Name, res.Target.Name, alreadyThere(same))
	case res.DryRun:
		fmt.Fprintf(a.stdout, "%s scope: %d path(s) would merge cleanly into %s (dry run)%s\n", res.Plan.Scope, n-same, res.Target.Name, alreadyThere(same))
	}
	printLeftOut(a.stdout, res.Plan, "--include-git-internals")
	if c := res.Commits; c != nil {
		how := "replayed onto"
		if c.FastForward {
			how = "fast-forwarded from"
		}
		fmt.Fprintf(a.stdout, "commits: %d %s %s's HEAD %.12s -> %.12s\n", len(c.Carried), how, res.Target.Name, c.Target, c.Head)
	}
	return nil
}

// printLeftOut says, after a plan, how many of the run's changes it left
// out and what carries them.
func printLeftOut(w io.Writer, p *merge.Plan, carry string) {
	if n := len(p.LeftOut); n > 0 {
		fmt.Fprintf(w, "left out %d path(s) of .git internals (hooks, config) that git would run on your side; %s carries them\n", n, carry)
	}
}
