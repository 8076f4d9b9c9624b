package classify

import (
	"slices"
	"strings"
)

// Scope is how far the effect of a command reaches.
type Scope string

// The scopes, from harmless to most far-reaching.
const (
	// ReadOnly commands change nothing (ls, git diff, go test).
	ReadOnly Scope = "read_only"
	// ReversibleLocal commands change the workspace in ways a fork,
	// version control or a rebuild can undo (edits, builds, installs).
	ReversibleLocal Scope = "reversible_local"
	// IrreversibleLocal commands destroy local state that nothing here
	// can bring back (rm, git clean, a local database).
	IrreversibleLocal Scope = "irreversible_local"
	// External commands change something outside the machine (a remote,
	// a cloud account, a registry, a mailbox).
	External Scope = "external"
)

var scopeRank = map[Scope]int{ReadOnly: 0, ReversibleLocal: 1, IrreversibleLocal: 2, External: 3}

// Valid reports whether s is one of the four scopes.
func (s Scope) Valid() bool { _, ok := scopeRank[s]; return ok }

// Category names the kind of fork-worthy or external work a command does.
type Category string

// The categories. Every one but ExternalMutation is fork-worthy: from the
// source it is answered with [ForkFirst].
const (
	// DependencyUpgrade adds, removes or upgrades dependencies (npm update, go get -u).
	DependencyUpgrade Category = "dependency_upgrade"
	// LockfileRewrite regenerates a lockfile (go mod tidy, poetry lock).
	LockfileRewrite Category = "lockfile_rewrite"
	// SchemaMigration writes or applies a schema migration (alembic, prisma, rails).
	SchemaMigration Category = "schema_migration"
	// BroadRefactor rewrites many files (sed -i over a tree, codemods, formatters).
	BroadRefactor Category = "broad_refactor"
	// DestructiveCleanup deletes or discards work (rm -rf src, git clean -fdx, > file).
	DestructiveCleanup Category = "destructive_cleanup"
	// DestructiveDatabase drops or wipes data (DROP, TRUNCATE, DELETE without WHERE).
	DestructiveDatabase Category = "destructive_database"
	// RemoteCode runs code downloaded by the same line (curl … | sh,
	// bash <(curl …)): what it does is not shown anywhere.
	RemoteCode Category = "remote_code"
	// SecretUpload sends a credential file over HTTP (curl -d @.npmrc), to
	// any host, this machine's included.
	SecretUpload Category = "secret_upload"
	// ExternalMutation changes the outside world (git push, deploys, POSTs, email).
	ExternalMutation Category = "external_mutation"
)

// categoryOrder is the order categories are reported in.
var categoryOrder = []Category{
	DependencyUpgrade, LockfileRewrite, SchemaMigration, BroadRefactor,
	DestructiveCleanup, DestructiveDatabase, RemoteCode, SecretUpload, ExternalMutation,
}

// forkWorthy lists the categories that a fork can contain, in the order
// their approaches are preferred.
var forkWorthy = []Category{
	SchemaMigration, DependencyUpgrade, LockfileRewrite, DestructiveDatabase,
	BroadRefactor, DestructiveCleanup, RemoteCode, SecretUpload,
}

// approaches is the suggested group of two competing approaches for each
// fork-worthy category.
var approaches = map[Category][]string{
	DependencyUpgrade:   {"upgrade in place and fix breakages", "pin current versions and patch minimally"},
	LockfileRewrite:     {"regenerate the lockfile and keep the result", "keep the current lockfile and change only what is needed"},
	SchemaMigration:     {"write the migration forward-only", "write it with a reversible down migration"},
	BroadRefactor:       {"apply the rewrite across the codebase at once", "apply it only to the modules the task touches"},
	DestructiveCleanup:  {"delete as asked", "move the files aside (or stash them) instead of deleting"},
	DestructiveDatabase: {"run the destructive statement as given", "back up or rename the data first and keep a way back"},
	RemoteCode:          {"run the downloaded script as given", "install from the package manager or a pinned release instead"},
	SecretUpload:        {"send the request as given", "send it without the credential file"},
}

// Verdict is the answer to "may this command run here?".
type Verdict string

// The verdicts, from most to least permissive.
const (
	// Allow runs the command where it was issued.
	Allow Verdict = "allow"
	// ForkFirst asks for the work to be tried in parallel forks before it
	// touches the source.
	ForkFirst Verdict = "fork_first"
	// Deny refuses the command.
	Deny Verdict = "deny"
)

var verdictRank = map[Verdict]int{Allow: 0, ForkFirst: 1, Deny: 2}

// Valid reports whether v is one of the three verdicts.
func (v Verdict) Valid() bool { _, ok := verdictRank[v]; return ok }

// Role says which kind of run a command was issued in.
type Role string

// The roles. The zero Role is treated as [Source], the stricter one.
const (
	// Source is the run that forks start from; it is what a person keeps.
	Source Role = "source"
	// Fork is a competing branch of the source.
	Fork Role = "fork"
)

// Context is where a command runs and, optionally, what the user asked for.
type Context struct {
	// Role is the run's role; empty means [Source].
	Role Role `json:"role"`
	// Prompt is the user's latest prompt, if known. Its hints (see
	// [Prompt]) only sharpen commands whose effect cannot be seen from the
	// command line itself: project scripts, unknown programs, bare installs.
	Prompt string `json:"prompt,omitempty"`
}

// Decision is the classifier's answer for one command line.
type Decision struct {
	// Scope is the widest scope of any part of the command.
	Scope Scope `json:"scope"`
	// Categories are all categories found, in a fixed order.
	Categories []Category `json:"categories,omitempty"`
	// Verdict is what the hook should do.
	Verdict Verdict `json:"verdict"`
	// Reason is one line for a person or an agent.
	Reason string `json:"reason"`
	// Approaches is a suggested group of forks when Verdict is ForkFirst.
	Approaches []string `json:"approaches,omitempty"`
	// Commands are the simple commands that decided the verdict.
	Commands []string `json:"commands,omitempty"`
}

// Command classifies a shell command line as issued in ctx. It never
// panics; unparseable input is denied with a reason.
func Command(cmd string, ctx Context) Decision {
	fillTables()
	if strings.TrimSpace(cmd) == "" {
		return Decision{Scope: ReadOnly, Verdict: Allow, Reason: "empty command"}
	}
	res, err := analyze(cmd)
	if err != nil {
		return unparseable(err)
	}
	if ctx.Prompt != "" {
		applyHints(res, Prompt(ctx.Prompt))
	}
	return decide(res, ctx.Role)
}

func unparseable(err error) Decision {
	msg := strings.SplitN(err.Error(), "\n", 2)[0]
	return Decision{
		Scope:   IrreversibleLocal,
		Verdict: Deny,
		Reason:  "could not parse the command (" + msg + "); rewrite it in plain bash",
	}
}

// applyHints adds the prompt's categories to findings that accept hints.
func applyHints(res []result, hints []Category) {
	for i := range res {
		for _, h := range hints {
			if slices.Contains(res[i].hint, h) && !slices.Contains(res[i].cats, h) {
				res[i].cats = append(res[i].cats, h)
				res[i].reason += " (the prompt suggests " + string(h) + ")"
			}
		}
	}
}

// decide folds the findings of all parts: the most severe part wins.
func decide(res []result, role Role) Decision {
	if len(res) == 0 {
		return Decision{Scope: ReadOnly, Verdict: Allow, Reason: "nothing runs"}
	}
	d := Decision{Scope: ReadOnly, Verdict: Allow}
	best := -1
	var bestKey int
	for i, r := range res {
		d.Scope = maxScope(d.Scope, r.scope)
		for _, c := range r.cats {
			if !slices.Contains(d.Categories, c) {
				d.Categories = append(d.Categories, c)
			}
		}
		v, _ := verdictOf(r.finding, role)
		if key := verdictRank[v]*10 + scopeRank[r.scope]; best < 0 || key > bestKey {
			best, bestKey = i, key
		}
	}
	sortCategories(d.Categories)
	d.Verdict, d.Reason = verdictOf(res[best].finding, role)
	d.Commands = decidingCommands(res, role, bestKey)
	if d.Verdict == ForkFirst {
		d.Approaches = pickApproaches(d.Categories)
	}
	return d
}

func decidingCommands(res []result, role Role, key int) []string {
	var out []string
	for _, r := range res {
		v, _ := verdictOf(r.finding, role)
		if verdictRank[v]*10+scopeRank[r.scope] == key && r.cmd != "" && !slices.Contains(out, r.cmd) {
			out = append(out, r.cmd)
		}
	}
	return out
}

// verdictOf turns one finding into a verdict and a reason for role.
func verdictOf(f finding, role Role) (Verdict, string) {
	switch {
	case f.deny:
		return Deny, f.reason + ": unbounded scope, refused everywhere"
	case f.scope == External && role == Fork:
		return Deny, f.reason + ": external effect from a fork; forks never touch the outside world — select or merge the fork, then run it from the source with a person's approval"
	case f.scope == External:
		return Deny, f.reason + ": external effect; needs a person's approval"
	case !hasForkWorthy(f.cats):
		return Allow, f.reason
	case role == Fork:
		return Allow, f.reason + "; already in a fork"
	default:
		return ForkFirst, f.reason + "; try it in forks before touching the source"
	}
}

func hasForkWorthy(cats []Category) bool {
	for _, c := range cats {
		if c != ExternalMutation {
			return true
		}
	}
	return false
}

func pickApproaches(cats []Category) []string {
	for _, c := range forkWorthy {
		if slices.Contains(cats, c) {
			return slices.Clone(approaches[c])
		}
	}
	return nil
}

func maxScope(a, b Scope) Scope {
	if scopeRank[b] > scopeRank[a] {
		return b
	}
	return a
}

func sortCategories(cs []Category) {
	slices.SortFunc(cs, func(a, b Category) int {
		return slices.Index(categoryOrder, a) - slices.Index(categoryOrder, b)
	})
}
