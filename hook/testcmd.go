package hook

import (
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// IsTestCommand reports whether a shell command line runs a test suite
// anywhere in it (go test, npm test, pytest, cargo test, make test, ...),
// also behind wrappers (time, env, npx, uv run, bundle exec) and inside
// sh -c strings.
func IsTestCommand(cmd string) bool {
	f, err := syntax.NewParser().Parse(strings.NewReader(cmd), "")
	if err != nil {
		return false
	}
	found := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok && !found {
			found = isTestCall(literals(c.Args))
		}
		return !found
	})
	return found
}

// literals returns the words' values; a word whose value the line does
// not show (a variable, a substitution) is "".
func literals(ws []*syntax.Word) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = literal(w)
	}
	return out
}

func literal(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if l, ok := q.(*syntax.Lit); ok {
					b.WriteString(l.Value)
				}
			}
		}
	}
	return b.String()
}

// testRunners are programs that only run tests.
var testRunners = []string{
	"pytest", "py.test", "jest", "vitest", "mocha", "ava", "karma", "rspec",
	"phpunit", "ctest", "tox", "nox", "nextest", "bats",
}

// testSubcommands are "PROGRAM SUBCOMMAND" pairs that run tests.
var testSubcommands = map[string][]string{
	"go": {"test"}, "cargo": {"test", "nextest"}, "npm": {"test", "t"},
	"yarn": {"test"}, "pnpm": {"test", "t"}, "bun": {"test"}, "deno": {"test"},
	"gradle": {"test", "check"}, "gradlew": {"test", "check"}, "mvn": {"test", "verify"},
	"dotnet": {"test"}, "mix": {"test"}, "swift": {"test"}, "rake": {"test", "spec"},
	"make": {"test", "check"}, "gmake": {"test", "check"}, "just": {"test"},
}

// wrappers run the rest of their arguments as a command.
var wrappers = []string{"time", "nice", "nohup", "command", "exec", "sudo", "npx", "bunx", "xargs"}

func isTestCall(args []string) bool {
	args = unwrap(args)
	if len(args) == 0 {
		return false
	}
	prog := path.Base(args[0])
	rest := args[1:]
	switch {
	case slices.Contains(testRunners, prog):
		return true
	case isShell(prog) && len(rest) >= 2 && isShellC(rest[0]):
		return IsTestCommand(rest[1])
	case strings.HasPrefix(prog, "python") && len(rest) >= 2 && rest[0] == "-m":
		return rest[1] == "pytest" || rest[1] == "unittest"
	case len(rest) == 0:
		return false
	case isRunner(prog, rest[0]):
		return isTestCall(rest[1:])
	case slices.ContainsFunc(testSubcommands[prog], func(s string) bool { return matchTarget(prog, s, rest[0]) }):
		return true
	case (prog == "npm" || prog == "yarn" || prog == "pnpm" || prog == "bun") && rest[0] == "run" && len(rest) > 1:
		return strings.HasPrefix(rest[1], "test")
	}
	return false
}

// matchTarget compares a subcommand; make-like targets match by prefix
// (test-unit, check-all).
func matchTarget(prog, want, got string) bool {
	if prog == "make" || prog == "gmake" || prog == "just" {
		return strings.HasPrefix(got, want)
	}
	return got == want
}

// unwrap drops wrappers, env and its assignments, timeout and its limit.
func unwrap(args []string) []string {
	for len(args) > 0 {
		p := path.Base(args[0])
		switch {
		case slices.Contains(wrappers, p):
			args = args[1:]
		case p == "env":
			args = args[1:]
			for len(args) > 0 && strings.Contains(args[0], "=") {
				args = args[1:]
			}
		case p == "timeout" && len(args) > 1:
			args = args[2:]
		default:
			return args
		}
	}
	return args
}

// isShellC recognises -c and combined short options such as -lc.
func isShellC(opt string) bool {
	return strings.HasPrefix(opt, "-") && !strings.HasPrefix(opt, "--") && strings.Contains(opt, "c")
}

func isShell(p string) bool { return p == "sh" || p == "bash" || p == "zsh" || p == "dash" }

// isRunner recognises "uv run", "poetry run", "pnpm exec", "bundle exec".
func isRunner(prog, sub string) bool {
	switch prog {
	case "uv", "poetry", "pipenv", "pdm", "hatch":
		return sub == "run"
	case "bundle":
		return sub == "exec"
	case "pnpm":
		return sub == "exec" || sub == "dlx"
	case "yarn":
		return sub == "dlx"
	}
	return false
}
