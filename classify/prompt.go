package classify

import (
	"regexp"
	"sync"
)

// promptRule maps phrases in a user's prompt to the category they hint.
type promptRule struct {
	re  *regexp.Regexp
	cat Category
}

// promptRules are compiled on first use: their bounded repeats make
// them slow to compile (0.7 ms), which every tine command would pay at
// start otherwise, most of them never reading a prompt.
var promptRules = sync.OnceValue(func() []promptRule {
	return []promptRule{
		{regexp.MustCompile(`\b(upgrade|bump|update)\b.{0,40}\b(deps|dependenc\w*|packages?|librar\w*|versions?|to v?\d|to (the )?latest|framework|react|next|django|rails|go version|node)\b|\b(upgrade|bump)\s+\S+\s+to\b|\bdependabot\b|\brenovate\b`), DependencyUpgrade},
		{regexp.MustCompile(`\block ?files?\b|\bpackage-lock\b|\byarn\.lock\b|\bpnpm-lock\b|\bgo\.sum\b|\bcargo\.lock\b|\bpoetry\.lock\b|\buv\.lock\b|\bgemfile\.lock\b|\bregenerate the lock\b`), LockfileRewrite},
		{regexp.MustCompile(`\bmigrat\w*\b.{0,40}\b(schema|database|db|tables?|columns?|models?)\b|\b(schema|database|db)\b.{0,30}\bmigrat\w*|\b(add|drop|rename) (a |the )?(column|table|index)\b|\balembic\b|\bprisma migrate\b|\bmakemigrations\b`), SchemaMigration},
		{regexp.MustCompile(`\brefactor\w*\b.{0,30}\b(all|every|entire|whole|across|codebase|everywhere|project)\b|\b(rename|replace)\b.{0,40}\b(everywhere|across|throughout|all files|codebase)\b|\bcodemod\b|\b(reformat|format) (the )?(whole|entire|all)\b`), BroadRefactor},
		{regexp.MustCompile(`\b(clean ?up|delete|remove|wipe|purge|nuke)\b.{0,30}\b(all|every|untracked|everything|old files|the (repo|directory|folder)|build artifacts)\b|\bstart (over|from scratch)\b|\breset (the )?(repo|branch|working tree)\b`), DestructiveCleanup},
		{regexp.MustCompile(`\b(drop|truncate|wipe|reset|empty|clear)\b.{0,20}\b(tables?|database|db|rows|records|data)\b|\bdelete (all|every) (rows|records|users|data)\b`), DestructiveDatabase},
		{regexp.MustCompile(`\b(deploy|publish|release|ship)\b|\bpush (it|to (origin|remote|main|prod\w*|github))\b|\b(open|create|merge) (a |the )?(pr|pull request|mr)\b|\bsend (an? )?(email|e-mail|message|notification)\b`), ExternalMutation},
	}
})

// Prompt returns cheap hints from a user's prompt ("upgrade react to 19",
// "migrate the schema", "refactor all handlers"), in report order. Hints
// never decide alone: [Command] uses them (via Context.Prompt) only for
// commands whose effect the command line does not show.
func Prompt(prompt string) []Category {
	p := []byte(lower(prompt))
	var out []Category
	for _, r := range promptRules() {
		if r.re.Match(p) {
			out = append(out, r.cat)
		}
	}
	sortCategories(out)
	return out
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
