package classify

import (
	"path"
	"strings"
	"sync"
)

// handler classifies one simple command.
type handler func(c *call) finding

// tools maps a program name to its handler; filled by register
// (handlers recurse into exec, which reads tools).
var tools = map[string]handler{}

// fillTables fills the handler tables (tools, gitHandlers, wrappers) at
// the first classification instead of at every tine command's start, in
// the order the files name them (a later register of a name wins).
var fillTables = sync.OnceFunc(func() {
	cloudTools()
	dbTools()
	depTools()
	externalTools()
	fileTools()
	gitTools()
	gitSubcommands()
	migrateTools()
	refactorTools()
	shellTools()
	wrapperTable()
})

func register(m map[string]handler) {
	for k, v := range m {
		tools[k] = v
	}
}

// readOnly are programs that only read, whatever their arguments.
var readOnly = set(
	"ls", "ll", "la", "cat", "bat", "head", "tail", "less", "more", "grep", "egrep", "fgrep",
	"rg", "ag", "ack", "fd", "wc", "echo", "printf", "pwd", "which", "whereis", "type",
	"whoami", "id", "date", "printenv", "uname", "hostname", "df", "du", "stat", "file",
	"tree", "diff", "cmp", "comm", "uniq", "cut", "tr", "jq", "base64", "md5sum", "md5",
	"sha1sum", "sha256sum", "shasum", "realpath", "dirname", "basename", "true", "false",
	"test", "[", "ps", "top", "htop", "lsof", "netstat", "ss", "history", "man", "help",
	"column", "nl", "od", "xxd", "hexdump", "strings", "readlink", "seq", "sleep", "yes",
	"command", "exit", "return", "read", ":", "wait", "jobs", "uptime", "free", "env", "set", "shopt",
	"alias", "unset", "trap", "local", "declare", "export", "pgrep", "dig", "nslookup",
	"host", "ping", "traceroute", "whois", "tput", "clear", "locale", "getconf", "nproc",
	"lscpu", "sw_vers", "cal", "expr", "bc", "fold", "fmt", "rev", "tac", "paste", "join",
	"look", "zcat", "gzcat", "zgrep", "xmllint", "tldr", "info", "apropos", "cloc", "tokei",
	"scc", "nvidia-smi", "vm_stat", "sysctl", "ulimit", "umask", "hash", "set-title",
	"shellcheck", "hadolint", "actionlint", "yamllint", "markdownlint", "mypy",
	"pyright", "flake8", "pylint", "golangci-lint", "staticcheck", "pytest", "jest",
	"vitest", "mocha", "tox", "nox", "phpunit", "rspec", "ava", "playwright", "cypress",
	"delta", "difft", "glow", "open", "xdg-open", "wslview",
)

// classifyCall looks c up: exact handler, read-only set, project script,
// then unknown.
func classifyCall(c *call) finding {
	if f, ok := remoteCode(c); ok {
		return f
	}
	if h, ok := tools[c.name]; ok {
		return h(c)
	}
	if readOnly[c.name] {
		return ro(c.name + " only reads")
	}
	if strings.Contains(c.text, "/") || strings.Contains(c.name, ".") {
		if f, ok := scriptByName(c.name); ok {
			return f
		}
	}
	return rev("unknown program " + c.name + " (assumed to change only the workspace)").hints(forkWorthy...)
}

// scriptByName guesses the effect of a project script from its name
// ("./scripts/deploy.sh", "make migrate", "npm run db:reset").
func scriptByName(name string) (finding, bool) {
	n := strings.ToLower(strings.TrimSuffix(path.Base(name), path.Ext(name)))
	has := func(ws ...string) bool {
		for _, w := range ws {
			if strings.Contains(n, w) {
				return true
			}
		}
		return false
	}
	what := "script " + name
	switch {
	case has("deploy", "release", "publish", "ship", "rollout", "promote"):
		return ext(what + " deploys or publishes"), true
	case has("db:drop", "db:reset", "db-reset", "db_reset", "dropdb", "db:wipe", "db:truncate", "db:purge"):
		return irr(what+" wipes a database", DestructiveDatabase), true
	case has("migrat", "db:push", "db-push", "db:setup"):
		return irr(what+" migrates a database schema", SchemaMigration), true
	case has("upgrade", "bump", "update-deps", "deps:update", "renovate", "ncu"):
		return rev(what+" upgrades dependencies", DependencyUpgrade, LockfileRewrite), true
	case has("codemod"):
		return rev(what+" rewrites code", BroadRefactor), true
	case has("test", "lint", "check", "typecheck", "type-check", "verify", "audit", "analyze", "spec"):
		return ro(what + " checks the project"), true
	case has("fmt", "format", "prettier", "fix"):
		return rev(what+" rewrites formatting across the project", BroadRefactor), true
	case has("clean"):
		return rev(what + " removes build output"), true
	case has("build", "compile", "dev", "start", "serve", "watch", "install", "setup", "generate", "gen", "preview", "storybook"):
		return rev(what + " builds or runs the project"), true
	}
	return rev(what + " (unknown project script)").hints(forkWorthy...), false
}

// script classifies a project script by name, falling back to an unknown
// one that prompt hints may sharpen.
func script(name string) finding {
	f, _ := scriptByName(name)
	return f
}

func shellTools() {
	register(map[string]handler{
		"cd":      cdTool,
		"pushd":   cdTool,
		"sh":      shellTool,
		"bash":    shellTool,
		"zsh":     shellTool,
		"dash":    shellTool,
		"ksh":     shellTool,
		"fish":    shellTool,
		"eval":    evalTool,
		"source":  sourceTool,
		".":       sourceTool,
		"make":    makeTool,
		"gmake":   makeTool,
		"just":    makeTool,
		"task":    makeTool,
		"mage":    makeTool,
		"python":  pythonTool,
		"python3": pythonTool,
		"node":    interpTool,
		"deno":    denoTool,
		"ruby":    interpTool,
		"php":     phpTool,
		"tee":     teeTool,
		"sed":     sedTool,
		"perl":    perlTool,
		"awk":     awkTool,
		"gawk":    awkTool,
		"sort":    sortTool,
		"yq":      yqTool,
	})
}

// cdTool tracks whether the working directory leaves the workspace.
func cdTool(c *call) finding {
	ops := positionals(c.args, nil)
	t := arg{s: "~"}
	if len(ops) > 0 {
		t = ops[0]
	}
	switch {
	case t.s == "-":
	case pathClass(t, false) == pathUnbounded:
		c.w.cwdWild = true
	case strings.HasPrefix(t.s, "/") || strings.HasPrefix(t.s, "~"):
		c.w.cwdWild = false
	}
	return ro("cd changes directory")
}

var shellValued = fset("-o", "+o", "-O", "+O", "--rcfile", "--init-file")

// shellTool reads "sh -c 'code'", "bash script.sh" and "bash <<EOF".
func shellTool(c *call) finding {
	code := false
	for _, a := range c.args {
		if a.s == "--" || !strings.HasPrefix(a.s, "-") {
			break
		}
		if !strings.HasPrefix(a.s, "--") && strings.Contains(a.s, "c") {
			code = true
		}
	}
	ops := positionals(c.args, shellValued)
	switch {
	case code && len(ops) > 0:
		return nestedCode(c, ops[0])
	case len(ops) > 0:
		return script(ops[0].s)
	case c.in != nil && c.in.known:
		c.w.nested(c, c.in.text)
		return ro(c.name + " runs the code shown")
	case c.in != nil:
		return irr(c.name + " runs a script from stdin that is not shown (e.g. curl | sh)")
	}
	return rev("interactive " + c.name)
}

func nestedCode(c *call, code arg) finding {
	c.w.nested(c, code.s)
	return ro(c.name + " runs the code shown")
}

func evalTool(c *call) finding {
	return nestedCode(c, arg{s: strings.Join(strs(c.args), " ")})
}

func sourceTool(c *call) finding {
	if len(c.args) == 0 {
		return ro("source with no file")
	}
	n := path.Base(c.args[0].s)
	if strings.Contains(n, "activate") || strings.HasPrefix(n, ".env") || strings.HasSuffix(n, "rc") || strings.HasSuffix(n, "profile") {
		return ro("source loads environment from " + c.args[0].s)
	}
	return script(c.args[0].s)
}

var makeValued = fset("-C", "-f", "--file", "--directory", "-j", "--jobs", "-I", "-o", "-W", "-l", "-d", "--justfile", "--working-directory", "-t", "--taskfile", "--dir")

// makeTool classifies make/just/task targets by name.
func makeTool(c *call) finding {
	ops := positionals(c.args, makeValued)
	var worst finding
	for _, o := range ops {
		if strings.Contains(o.s, "=") && !strings.HasPrefix(o.s, "=") {
			continue
		}
		f := script(o.s)
		if worst.reason == "" || severity(f) > severity(worst) {
			worst = f
		}
	}
	if worst.reason == "" {
		return rev(c.name + " default target builds the project").hints(forkWorthy...)
	}
	return worst
}

func severity(f finding) int {
	s := scopeRank[f.scope] * 10
	if len(f.cats) > 0 {
		s += 5
	}
	if f.deny {
		s += 100
	}
	return s
}

func teeTool(c *call) finding {
	ops := positionals(c.args, nil)
	for _, o := range ops {
		if isBlockDevice(o.s) {
			return denyf("tee writes to the device " + o.s)
		}
		if outsideWorkspace(o.s) && !quietTargets[o.s] {
			return irr("tee writes " + o.s + " outside the workspace")
		}
	}
	if len(ops) == 0 {
		return ro("tee to stdout")
	}
	return rev("tee writes " + strings.Join(strs(ops), " "))
}

var interpValued = fset("-e", "-r", "--require", "-I", "--import", "--loader", "--env-file")

// interpTool classifies "node script.js" by the script's name.
func interpTool(c *call) finding {
	if hasFlag(c.args, "-e", "--eval", "-p", "--print", "-c") {
		return rev(c.name + " runs inline code")
	}
	if hasFlag(c.args, "--version", "-v", "-V", "--help") {
		return ro(c.name + " version")
	}
	ops := positionals(c.args, interpValued)
	if len(ops) == 0 {
		return rev("interactive " + c.name)
	}
	return script(ops[0].s)
}

func denoTool(c *call) finding {
	ops := positionals(c.args, nil)
	switch first(ops) {
	case "test", "lint", "check", "info", "doc":
		if first(ops) == "lint" && hasFlag(c.args, "--fix") {
			return rev("deno lint --fix rewrites the project", BroadRefactor)
		}
		return ro("deno " + first(ops) + " only reads")
	case "fmt":
		if hasFlag(c.args, "--check") {
			return ro("deno fmt --check only reads")
		}
		return refactorTargets(c, "deno fmt", tail(ops), true)
	case "run", "task":
		if len(ops) > 1 {
			return script(ops[1].s)
		}
	case "publish":
		return dryRun(c, ext("deno publish publishes a package"))
	case "add", "install", "outdated":
		if hasFlag(c.args, "--update", "--latest") || first(ops) == "add" {
			return rev("deno "+first(ops)+" changes dependencies", DependencyUpgrade, LockfileRewrite)
		}
	}
	return rev("deno " + first(ops))
}

// dryRun downgrades f to read-only when the command only pretends.
func dryRun(c *call, f finding) finding {
	if hasFlag(c.args, "--dry-run", "--dryrun", "--dry", "--simulate", "--noop") {
		return ro(f.reason + " (dry run)")
	}
	return f
}

func sortTool(c *call) finding {
	if o, ok := flagValue(c.args, "-o", "--output"); ok {
		return rev("sort writes " + o)
	}
	return ro("sort only reads")
}

func yqTool(c *call) finding {
	if hasFlag(c.args, "-i", "--inplace") {
		return rev("yq -i edits files in place")
	}
	return ro("yq only reads")
}

func awkTool(c *call) finding {
	if v, ok := flagValue(c.args, "-i"); ok && v == "inplace" {
		return inPlace(c, "awk -i inplace", tail(positionals(c.args, fset("-f", "-v", "-F", "-i"))))
	}
	return ro("awk only reads (unless its program writes files)")
}
