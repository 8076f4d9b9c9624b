package hook

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tinehq/tine/classify"
)

// phrases name each category in a sentence.
var phrases = map[classify.Category]string{
	classify.DependencyUpgrade:   "a dependency upgrade",
	classify.LockfileRewrite:     "a lockfile rewrite",
	classify.SchemaMigration:     "a schema migration",
	classify.BroadRefactor:       "a broad refactor",
	classify.DestructiveCleanup:  "a destructive cleanup",
	classify.DestructiveDatabase: "a destructive database change",
	classify.RemoteCode:          "downloaded code run unseen",
	classify.SecretUpload:        "an upload of a credential file",
	classify.ExternalMutation:    "an external change",
}

// maxQuoted bounds how much of a command a message repeats.
const maxQuoted = 120

// forkFirstMessage asks agent to request forks instead of running cmd:
// inside a run with tine fork-self, on the host (where fork-self, a
// command of runs, does not work) by asking the person for a fork-run.
func forkFirstMessage(cmd string, d classify.Decision, agent Agent, env Env) string {
	what := "fork-worthy work"
	if len(d.Categories) > 0 {
		what = phrases[d.Categories[0]]
	}
	if env.OnHost {
		return fmt.Sprintf("tine: `%s` is %s (%s); it is tried in forks first. Ask the person to run, from a terminal: "+
			"`%s` (with the task as the prompt), or call the tine MCP server's `fork_run` tool where you have it; then end your turn.",
			shorten(cmd), what, d.Reason, ForkRunCommand(env.Run, d.Approaches))
	}
	req := ForkSelfCommand(d.Approaches)
	if agent == Codex {
		req += codexSandboxed("fork")
	}
	return fmt.Sprintf("tine: `%s` is %s (%s); run it in forks first: %s — "+
		"tine forks this run once your turn has stopped, so request it, say so, and end the turn.",
		shorten(cmd), what, d.Reason, req)
}

// codexSandboxed names the tine MCP tool that does what a tine command
// would, for Codex: its sandbox refuses every socket, tine's too, so from
// there the tine command cannot reach the daemon, while Codex runs the MCP
// servers tine setup codex adds outside its sandbox.
func codexSandboxed(tool string) string {
	return " (from Codex's sandbox, which blocks tine's socket, call the tine MCP server's `" + tool + "` tool instead)"
}

// denyMessage says why cmd is refused in env's run, to agent: what it
// can do instead there, or on the host, what a person can.
func denyMessage(cmd string, d classify.Decision, agent Agent, env Env) string {
	role := env.Role
	where := "this source"
	if role == classify.Fork {
		where = "this fork"
	}
	msg := fmt.Sprintf("tine: `%s` is refused in %s: %s.", shorten(cmd), where, d.Reason)
	if slices.Contains(d.Categories, classify.ExternalMutation) {
		switch {
		case env.OnHost && role == classify.Fork:
			msg += " A fork's work leaves through a merge: finish here, and ask the person to merge it (`tine merge` from a terminal) and to do this from the source themselves."
		case env.OnHost:
			msg += " Ask the person to run it themselves, from their terminal, if they want it done; then end your turn."
		case role == classify.Fork:
			msg += " A fork's work leaves through a merge: finish here; from the source, `tine effect git-push` (or `tine effect http`, `tine effect run`) asks a person, and tine does it."
		default:
			msg += " Ask a person for it instead: `" + effectAsk(d.Commands) + "`"
			if agent == Codex {
				msg += codexSandboxed("effect")
			}
			msg += "; tine does it once approved."
		}
	}
	return msg
}

// ForkRunCommand is the command a person runs on the host to try a task
// in forks of run (workspace/run), one per approach (two when none).
func ForkRunCommand(run string, approaches []string) string {
	n := max(len(approaches), 2)
	var b strings.Builder
	fmt.Fprintf(&b, "tine fork-run %s --prompt TASK -n %d", shellQuote(run), n)
	for _, a := range approaches {
		b.WriteString(" --approach ")
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

// effectAsk is the tine effect command that asks for what cmds, the
// commands that decided, would do: for a push, the same remote and
// refspec for a plain `git push [REMOTE [REFSPEC]]` (so an agent need not
// guess them), else the form with placeholders; for anything else (npm
// publish, a deploy), tine effect run with the command.
func effectAsk(cmds []string) string {
	push := false
	for _, c := range cmds {
		push = push || strings.Contains(" "+c+" ", " push ")
	}
	if !push && len(cmds) > 0 {
		return "tine effect run -- " + shorten(cmds[0])
	}
	for _, c := range cmds {
		w := strings.Fields(c)
		if len(w) < 2 || len(w) > 4 || w[0] != "git" || w[1] != "push" {
			continue
		}
		plain := true
		for _, a := range w[2:] {
			plain = plain && !strings.HasPrefix(a, "-") && strings.Trim(a, safeWord) == "" && !strings.ContainsAny(a[:1], ":+")
		}
		if plain {
			return strings.Join(append([]string{"tine", "effect", "git-push"}, w[2:]...), " ")
		}
	}
	return "tine effect git-push [REMOTE [REFSPEC]]"
}

// safeWord are the bytes of a remote or refspec repeated as it is.
const safeWord = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/:@-"

// ForkSelfCommand is the command an agent runs to ask tine for one fork
// per approach (two when none is given).
func ForkSelfCommand(approaches []string) string {
	n := max(len(approaches), 2)
	var b strings.Builder
	fmt.Fprintf(&b, "tine fork-self -n %d", n)
	for _, a := range approaches {
		b.WriteString(" --approach ")
		b.WriteString(shellQuote(a))
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shorten keeps one line of at most maxQuoted bytes of s.
func shorten(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > maxQuoted {
		cut := maxQuoted
		for cut > 0 && s[cut]&0xC0 == 0x80 { // do not split a UTF-8 sequence
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}
