package classify

import "strings"

func gitTools() {
	register(map[string]handler{"git": gitTool, "hub": gitTool})
}

var gitGlobalValued = fset("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path", "--config-env")

var gitReadOnly = set("status", "diff", "log", "show", "blame", "ls-files", "ls-tree", "ls-remote",
	"rev-parse", "describe", "shortlog", "grep", "cat-file", "show-ref", "for-each-ref",
	"merge-base", "name-rev", "check-ignore", "check-attr", "help", "version", "count-objects",
	"fsck", "rev-list", "whatchanged", "var", "diff-tree", "diff-files", "diff-index", "range-diff",
	"cherry", "verify-commit", "verify-tag", "annotate", "instaweb", "archive", "bundle")

var gitHandlers map[string]handler

func gitSubcommands() {
	gitHandlers = map[string]handler{
		"push":       gitPush,
		"send-email": func(c *call) finding { return dryRun(c, ext("git send-email sends email")) },
		"clean":      gitClean,
		"reset":      gitReset,
		"checkout":   gitDiscard("checkout"),
		"restore":    gitDiscard("restore"),
		"stash":      gitStash,
		"branch":     gitListOr("branch", "-d", "-D", "-m", "-M", "-c", "-C", "--delete", "--move", "--copy", "--set-upstream-to", "-u", "--unset-upstream", "--edit-description"),
		"tag":        gitListOr("tag", "-d", "--delete", "-a", "-s", "-f", "-m", "-F"),
		"remote":     gitSubRead("remote", "", "-v", "show", "get-url"),
		"config":     gitConfig,
		"worktree":   gitSubRead("worktree", "list"),
		"reflog":     gitSubRead("reflog", "", "show"),
		"filter-branch": func(c *call) finding {
			return irr("git filter-branch rewrites all history", DestructiveCleanup)
		},
		"filter-repo": func(c *call) finding { return irr("git filter-repo rewrites all history", DestructiveCleanup) },
		"gc":          func(c *call) finding { return rev("git gc packs objects") },
		"svn":         gitSvn,
		"lfs":         gitLfs,
	}
}

// gitTool dispatches on the subcommand after git's global options.
func gitTool(c *call) finding {
	rest := dropOpts(c.args, gitGlobalValued)
	if len(rest) == 0 {
		return ro("git with no subcommand")
	}
	sub := rest[0].s
	n := *c
	n.args = rest[1:]
	if h, ok := gitHandlers[sub]; ok {
		return h(&n)
	}
	if gitReadOnly[sub] {
		return ro("git " + sub + " only reads")
	}
	return rev("git " + sub + " changes the local repository")
}

func gitPush(c *call) finding {
	if hasFlag(c.args, "-n") {
		return ro("git push -n (dry run)")
	}
	return dryRun(c, ext("git push updates a remote"))
}

func gitClean(c *call) finding {
	if hasFlag(c.args, "-n", "--dry-run") || !(hasShort(c.args, 'f') || hasFlag(c.args, "--force")) {
		return ro("git clean without -f only lists")
	}
	ops := positionals(c.args, fset("-e", "--exclude"))
	if len(ops) == 0 {
		ops = []arg{{s: "."}}
	}
	f := c.w.removal("git clean", ops, true)
	if f.deny || f.scope == ReversibleLocal {
		return f
	}
	return irr("git clean deletes untracked files in "+strings.Join(strs(ops), " "), DestructiveCleanup)
}

func gitReset(c *call) finding {
	if hasFlag(c.args, "--hard") {
		return irr("git reset --hard discards uncommitted changes", DestructiveCleanup)
	}
	return rev("git reset moves HEAD or unstages")
}

// gitDiscard: "git checkout -- ." or "git restore ." discards changes;
// one named file is small; a branch switch is reversible.
func gitDiscard(name string) handler {
	return func(c *call) finding { return discard(c, name) }
}

func discard(c *call, name string) finding {
	sub := "git " + name
	if name == "restore" && hasFlag(c.args, "--staged", "-S") && !hasFlag(c.args, "--worktree", "-W") {
		return rev("git restore --staged unstages")
	}
	ops := positionals(c.args, fset("-b", "-B", "--orphan", "-s", "--source", "--conflict"))
	dashdash := name == "restore"
	for _, a := range c.args {
		dashdash = dashdash || a.s == "--"
	}
	broad := false
	for _, o := range ops {
		if o.s == "." || o.s == ":/" || o.s == "*" || strings.HasSuffix(o.s, "/") || strings.ContainsAny(o.s, "*?") {
			broad = true
		}
	}
	switch {
	case broad || hasFlag(c.args, "-f", "--force") && len(ops) == 0:
		return irr(sub+" discards uncommitted changes across the tree", DestructiveCleanup)
	case dashdash && len(ops) > 0:
		return irr(sub + " discards uncommitted changes to " + strings.Join(strs(ops), " "))
	}
	return rev(sub + " switches branches or restores files")
}

func gitStash(c *call) finding {
	switch first(positionals(c.args, nil)) {
	case "list", "show":
		return ro("git stash " + first(positionals(c.args, nil)) + " only reads")
	case "clear":
		return irr("git stash clear drops every stash", DestructiveCleanup)
	case "drop":
		return irr("git stash drop drops one stash")
	}
	return rev("git stash saves or applies changes")
}

// gitListOr: with none of the mutating options and no operands the
// subcommand only lists.
func gitListOr(sub string, mutating ...string) handler {
	return func(c *call) finding {
		if hasFlag(c.args, mutating...) || len(positionals(c.args, fset("--contains", "--merged", "--no-merged", "--sort", "--format", "--points-at"))) > 0 && !hasFlag(c.args, "-l", "--list") {
			return rev("git " + sub + " changes refs")
		}
		return ro("git " + sub + " lists")
	}
}

// gitSubRead: the listed sub-subcommands ("" = none) only read.
func gitSubRead(sub string, reads ...string) handler {
	return func(c *call) finding {
		s := first(positionals(c.args, nil))
		if s == "" && len(c.args) > 0 {
			s = c.args[0].s
		}
		for _, r := range reads {
			if s == r {
				return ro("git " + sub + " only reads")
			}
		}
		return rev("git " + sub + " changes the local repository")
	}
}

func gitConfig(c *call) finding {
	if hasFlag(c.args, "--get", "--get-all", "--list", "-l", "--get-regexp", "--show-origin") || len(positionals(c.args, nil)) == 1 {
		return ro("git config only reads")
	}
	return rev("git config changes settings")
}

func gitSvn(c *call) finding {
	if first(positionals(c.args, nil)) == "dcommit" {
		return dryRun(c, ext("git svn dcommit updates a remote"))
	}
	return rev("git svn")
}

func gitLfs(c *call) finding {
	if first(positionals(c.args, nil)) == "push" {
		return dryRun(c, ext("git lfs push updates a remote"))
	}
	return rev("git lfs")
}
