package classify

import (
	"path"
	"strings"
)

func ro(reason string) finding { return finding{scope: ReadOnly, reason: reason} }

func rev(reason string, cats ...Category) finding {
	return finding{scope: ReversibleLocal, reason: reason, cats: cats}
}

func irr(reason string, cats ...Category) finding {
	return finding{scope: IrreversibleLocal, reason: reason, cats: cats}
}

func ext(reason string) finding {
	return finding{scope: External, reason: reason, cats: []Category{ExternalMutation}}
}

func denyf(reason string) finding {
	return finding{scope: IrreversibleLocal, reason: reason, deny: true, cats: []Category{DestructiveCleanup}}
}

// hints lets a prompt add categories to f (see Context.Prompt).
func (f finding) hints(cs ...Category) finding {
	f.hint = cs
	return f
}

// flags is a set of option names that take a separate value.
type flags map[string]bool

func fset(names ...string) flags {
	f := make(flags, len(names))
	for _, n := range names {
		f[n] = true
	}
	return f
}

// positionals returns the operands of args, skipping options and the
// values of the options in valued.
func positionals(args []arg, valued flags) []arg {
	var out []arg
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case s == "--":
			return append(out, args[i+1:]...)
		case len(s) > 1 && s[0] == '-':
			if valued[s] {
				i++
			}
		default:
			out = append(out, args[i])
		}
	}
	return out
}

// restFrom returns args from the k-th operand on, options included, so a
// wrapped program keeps its own options ("uv run ruff check --fix .").
func restFrom(args []arg, valued flags, k int) []arg {
	n := 0
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case s == "--":
			rest := args[i+1:]
			return rest[min(k-n, len(rest)):]
		case len(s) > 1 && s[0] == '-':
			if valued[s] {
				i++
			}
		default:
			if n == k {
				return args[i:]
			}
			n++
		}
	}
	return nil
}

// hasFlag reports whether any of names occurs as an option, alone or as
// "--name=value".
func hasFlag(args []arg, names ...string) bool {
	for _, a := range args {
		if a.s == "--" {
			return false
		}
		for _, n := range names {
			if a.s == n || (len(n) > 2 && n[0] == '-' && strings.HasPrefix(a.s, n+"=")) {
				return true
			}
		}
	}
	return false
}

// flagValue returns the value of the first of names ("-X V", "--x=V", "-XV").
func flagValue(args []arg, names ...string) (string, bool) {
	for i, a := range args {
		for _, n := range names {
			switch {
			case a.s == n && i+1 < len(args):
				return args[i+1].s, true
			case len(n) > 2 && n[0] == '-' && strings.HasPrefix(a.s, n+"="):
				return a.s[len(n)+1:], true
			case len(n) == 2 && n[0] == '-' && strings.HasPrefix(a.s, n) && len(a.s) > 2 && a.s[1] != '-':
				return a.s[2:], true
			}
		}
	}
	return "", false
}

// flagValues returns the values of every occurrence of names.
func flagValues(args []arg, names ...string) []string {
	var out []string
	for i, a := range args {
		for _, n := range names {
			switch {
			case a.s == n && i+1 < len(args):
				out = append(out, args[i+1].s)
			case strings.HasPrefix(a.s, n+"="):
				out = append(out, a.s[len(n)+1:])
			}
		}
	}
	return out
}

// hasShort reports whether a short option cluster ("-rf") contains ch.
func hasShort(args []arg, ch byte) bool {
	for _, a := range args {
		if a.s == "--" {
			return false
		}
		if len(a.s) > 1 && a.s[0] == '-' && a.s[1] != '-' && strings.IndexByte(a.s[1:], ch) >= 0 {
			return true
		}
	}
	return false
}

func strs(args []arg) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.s
	}
	return out
}

// first returns the first operand, or "".
func first(ops []arg) string {
	if len(ops) == 0 {
		return ""
	}
	return ops[0].s
}

func set(names ...string) map[string]bool { return fset(names...) }

// Path classes for removal targets.
const (
	pathNormal = iota
	pathRegenerable
	pathWorkspace // the whole working directory: ".", "*"
	pathUnbounded // "/", "~", "$VAR/", "..": scope nobody can bound
)

var regenerable = set(
	"node_modules", "dist", "build", "out", "target", ".next", ".nuxt", ".turbo",
	".cache", ".parcel-cache", "coverage", ".nyc_output", "htmlcov", ".pytest_cache",
	"__pycache__", ".mypy_cache", ".ruff_cache", ".tox", ".nox", ".venv", "venv",
	".gradle", ".svelte-kit", ".angular", ".expo", "storybook-static", ".eggs",
	"tmp", ".tmp", "obj", ".DS_Store", "*.pyc", "*.pyo", "*.o", "*.class", "*.log",
	"*.orig", "*.rej", "*.tmp", "*~", ".npm", ".yarn-cache", ".pnpm-store", "go-build",
)

var systemDirs = set("bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32",
	"opt", "proc", "root", "sbin", "srv", "sys", "usr", "var", "System", "Library",
	"Applications", "private", "snap", "nix")

var tempPrefixes = []string{"/tmp/", "/var/tmp/", "/private/tmp/", "/var/folders/", "/private/var/folders/"}

func pathClass(a arg, cwdWild bool) int {
	if a.lead {
		return pathUnbounded
	}
	s := a.s
	switch {
	case s == "":
		return pathNormal
	case s == "~" || strings.HasPrefix(s, "~"):
		return homeClass(s)
	case strings.HasPrefix(s, "/"):
		return absClass(s)
	}
	return relClass(path.Clean(s), cwdWild)
}

func homeClass(s string) int {
	rest := strings.TrimPrefix(strings.TrimPrefix(s, "~"), "/")
	if i := strings.IndexByte(s, '/'); i < 0 && s != "~" {
		return pathUnbounded // ~user
	}
	c := path.Clean(rest)
	comps := strings.Split(c, "/")
	switch {
	case rest == "" || c == "." || c == "*" || c == ".*" || strings.HasPrefix(c, ".."):
		return pathUnbounded
	case isRegenerable(c):
		return pathRegenerable
	case len(comps) == 1:
		return pathUnbounded
	}
	return pathNormal
}

func absClass(s string) int {
	c := path.Clean(s)
	comps := strings.Split(strings.TrimPrefix(c, "/"), "/")
	for _, t := range tempPrefixes {
		if strings.HasPrefix(c+"/", t) && len(c) >= len(t) {
			if isRegenerable(c) {
				return pathRegenerable
			}
			return pathNormal
		}
	}
	switch {
	case c == "/" || len(comps) <= 1:
		return pathUnbounded
	case systemDirs[comps[0]]:
		return pathUnbounded
	case (comps[0] == "home" || comps[0] == "Users") && len(comps) <= 2:
		return pathUnbounded
	case isRegenerable(c):
		return pathRegenerable
	}
	return pathNormal
}

func relClass(c string, cwdWild bool) int {
	switch {
	case c == ".." || strings.HasPrefix(c, "../..") || c == "../*" || c == ".*" || c == "../.*":
		return pathUnbounded
	case c == "." || c == "*" || c == "./*":
		if cwdWild {
			return pathUnbounded
		}
		return pathWorkspace
	case isRegenerable(c):
		return pathRegenerable
	}
	return pathNormal
}

func isRegenerable(p string) bool {
	for _, comp := range strings.Split(p, "/") {
		if regenerable[comp] || strings.HasSuffix(comp, ".egg-info") {
			return true
		}
	}
	return false
}

// outsideWorkspace reports whether a written path lies outside any
// workspace (home, system directories), temp directories excepted.
func outsideWorkspace(p string) bool {
	if strings.HasPrefix(p, "~") {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, t := range tempPrefixes {
		if strings.HasPrefix(p, t) {
			return false
		}
	}
	return true
}

// removal judges deleting (or truncating) targets. destructive marks
// bounded, non-regenerable targets as destructive cleanup; otherwise only
// whole-workspace targets are.
func (w *walker) removal(verb string, targets []arg, destructive bool) finding {
	all := true
	for _, t := range targets {
		switch pathClass(t, w.cwdWild) {
		case pathUnbounded:
			return denyf(verb + " targets " + quoteArg(t.s))
		case pathWorkspace:
			destructive = true
			all = false
		case pathNormal:
			all = false
		}
	}
	what := verb + " " + strings.Join(strs(targets), " ")
	switch {
	case all:
		return rev(what + " (regenerable)")
	case destructive:
		return irr(what, DestructiveCleanup)
	}
	return irr(what + " (small, explicit targets)")
}

func quoteArg(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// tail drops the first operand (usually a subcommand).
func tail(ops []arg) []arg {
	if len(ops) == 0 {
		return nil
	}
	return ops[1:]
}
