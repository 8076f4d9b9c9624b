package main

import (
	"context"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/layout"
)

// Dynamic completion (tine completion bash|zsh|fish; the shells call
// tine __complete): the names of runs, groups, versions and workspaces the
// caller may see, read from the state directory when it exists (never made
// by a completion) or through the daemon for a normal user, and the values
// of flags that take one of a few words.

// completeKind is what a command's positional arguments name.
type completeKind int

const (
	completeRuns completeKind = iota
	completeRunsOrGroups
	completeGroups
	completeWorkspaces
)

// argKinds are the commands whose arguments complete, by their path below
// tine; only the first argument completes unless the command takes many.
var argKinds = map[string]completeKind{
	"fork": completeRuns, "exec": completeRuns, "shell": completeRuns, "path": completeRuns, "log": completeRuns,
	"diff": completeRuns, "checkpoint": completeRuns, "rollback": completeRuns, "merge": completeRuns,
	"promote": completeRuns, "start": completeRuns, "stop": completeRuns, "ps": completeRuns, "stats": completeRuns,
	"port": completeRuns, "logs": completeRuns, "summary": completeRuns, "fork-run": completeRuns, "cell run": completeRuns,
	"discard": completeRunsOrGroups, "cost": completeRunsOrGroups,
	"compare": completeGroups, "choose": completeGroups, "combine": completeGroups, "export": completeGroups,
	"ls": completeWorkspaces, "tree": completeWorkspaces, "release": completeWorkspaces, "pending": completeWorkspaces,
	"events": completeWorkspaces, "judge reset-weights": completeWorkspaces,
}

// manyArgs are the commands whose every argument completes.
var manyArgs = map[string]bool{"discard": true}

// flagWords are the values of flags that take one of a few words.
var flagWords = map[string][]string{
	"backend":    {"auto", "overlay", "btrfs", "reflink", "copy"},
	"merge-mode": {"auto", "auto_with_fallback", "vote", "manual"},
	"agent":      {"claude", "codex", "command"},
	"live":       {"none", "rerun", "ptrace", "criu", "auto"},
	"judge":      {"heuristic", "llm"},
	"format":     {"md", "json"},
}

// registerCompletions gives root's commands their completion functions.
func registerCompletions(root *cobra.Command, a *app) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, sub := range c.Commands() {
			walk(sub)
		}
		path := cmdPath(c)
		if k, ok := argKinds[path]; ok {
			c.ValidArgsFunction = a.completeArgs(k, manyArgs[path])
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if words, ok := flagWords[f.Name]; ok {
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(words, cobra.ShellCompDirectiveNoFileComp))
			}
		})
		if path == "rollback" {
			_ = c.RegisterFlagCompletionFunc("to", a.completeVersions)
		}
	}
	walk(root)
}

// completeArgs completes a command's arguments of kind k.
func (a *app) completeArgs(k completeKind, many bool) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 && !many {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, w := range a.completionRecords(c) {
			if k == completeWorkspaces {
				out = append(out, w.Workspace.Name)
				continue
			}
			if k != completeGroups {
				for _, r := range w.Runs {
					if r.Active() {
						out = append(out, w.Workspace.Name+"/"+r.Name)
					}
				}
			}
			if k != completeRuns {
				for _, g := range w.Groups {
					out = append(out, g.ID)
				}
			}
		}
		return matching(out, prefix), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeVersions completes rollback's --to: the versions (ids and
// labels) of the run named by the first argument's workspace.
func (a *app) completeVersions(c *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
	var out []string
	ws, _, _ := strings.Cut(firstArg(args), "/")
	for _, w := range a.completionRecords(c) {
		if ws != "" && w.Workspace.Name != ws {
			continue
		}
		for _, v := range w.Versions {
			out = append(out, v.ID)
			if v.Label != "" {
				out = append(out, v.Label)
			}
		}
	}
	return matching(out, prefix), cobra.ShellCompDirectiveNoFileComp
}

// completionRecords are the workspaces and runs the caller may see:
// through the daemon for a normal user, else from a state directory that
// exists (a completion never makes one); nothing when neither answers.
func (a *app) completionRecords(c *cobra.Command) []engine.WorkspaceRecords {
	a.homeSet, a.cmd, a.stderr = c.Flags().Changed("home"), cmdPath(c), io.Discard
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if a.remote() {
		recs, err := a.daemon().Workspaces(ctx)
		if err != nil {
			return nil
		}
		return recs
	}
	if _, err := os.Stat(layout.New(a.home).Store()); err != nil {
		return nil
	}
	var recs []engine.WorkspaceRecords
	_ = a.withEngine(ctx, func(e *engine.Engine) (err error) {
		recs, err = e.Records(ctx, "")
		return err
	})
	return recs
}

// matching are the words of all that start with prefix.
func matching(all []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	seen := map[string]bool{}
	for _, s := range all {
		if strings.HasPrefix(s, prefix) && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
