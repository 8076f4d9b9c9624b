package classify

import (
	"path"
	"strings"
)

// fixer describes a formatter, linter or codemod that can rewrite files.
type fixer struct {
	write  []string // options that make it write; nil: writes by default
	check  []string // options that make it only check
	valued flags
	cwd    bool // with no targets it rewrites the whole project
}

var fixers = map[string]fixer{
	"prettier":      {write: []string{"--write", "-w"}, check: []string{"--check", "-c", "--list-different", "-l"}, valued: fset("--config", "--ignore-path", "--parser", "--plugin", "--log-level")},
	"eslint":        {write: []string{"--fix"}, check: []string{"--fix-dry-run"}, valued: fset("-c", "--config", "--ext", "--rule", "-f", "--format", "-o", "--output-file", "--ignore-path", "--max-warnings", "--fix-type"), cwd: true},
	"stylelint":     {write: []string{"--fix"}, valued: fset("-c", "--config", "-f", "--formatter")},
	"black":         {check: []string{"--check", "--diff"}, valued: fset("-l", "--line-length", "-t", "--target-version", "--config", "--include", "--exclude", "--extend-exclude")},
	"isort":         {check: []string{"--check-only", "--check", "-c", "--diff"}, valued: fset("--settings-path", "--profile", "-l", "--line-length")},
	"autopep8":      {write: []string{"-i", "--in-place"}},
	"autoflake":     {write: []string{"-i", "--in-place"}},
	"yapf":          {write: []string{"-i", "--in-place"}},
	"pyupgrade":     {},
	"2to3":          {write: []string{"-w", "--write"}},
	"gofmt":         {write: []string{"-w"}, valued: fset("-r")},
	"goimports":     {write: []string{"-w"}, valued: fset("-local")},
	"gofumpt":       {write: []string{"-w"}},
	"golines":       {write: []string{"-w", "--write-output"}, valued: fset("-m", "--max-len")},
	"rustfmt":       {check: []string{"--check"}, valued: fset("--edition", "--config-path")},
	"rubocop":       {write: []string{"-a", "-A", "--auto-correct", "--autocorrect", "--auto-correct-all", "--autocorrect-all"}, cwd: true},
	"standardrb":    {write: []string{"--fix"}, cwd: true},
	"clang-format":  {write: []string{"-i"}, valued: fset("--style", "-style")},
	"jscodeshift":   {check: []string{"-d", "--dry"}, valued: fset("-t", "--transform", "--parser", "--extensions", "--ignore-pattern"), cwd: true},
	"comby":         {write: []string{"-in-place", "-i"}, valued: fset("-matcher", "-f", "-d", "-directory", "-extensions", "-exclude", "-templates", "-rule"), cwd: true},
	"sg":            {write: []string{"-U", "--update-all"}, valued: fset("-p", "--pattern", "-r", "--rewrite", "-l", "--lang", "-c", "--config", "--rule"), cwd: true},
	"ast-grep":      {write: []string{"-U", "--update-all"}, valued: fset("-p", "--pattern", "-r", "--rewrite", "-l", "--lang", "-c", "--config", "--rule"), cwd: true},
	"semgrep":       {write: []string{"--autofix"}, valued: fset("-e", "--pattern", "-l", "--lang", "--config", "-f", "--include", "--exclude"), cwd: true},
	"codemod":       {cwd: true, valued: fset("-m", "-d", "--extensions")},
	"react-codemod": {cwd: true},
	"php-cs-fixer":  {check: []string{"--dry-run"}, cwd: true},
	"rector":        {check: []string{"--dry-run"}, cwd: true},
	"dprint":        {write: []string{"fmt"}, check: []string{"check"}, cwd: true},
	"shfmt":         {write: []string{"-w", "--write"}},
	"swiftformat":   {check: []string{"--lint", "--dryrun"}},
	"ktlint":        {write: []string{"-F", "--format"}, cwd: true},
	"taplo":         {write: []string{"fmt", "format"}, check: []string{"--check"}, cwd: true},
	"gomvpkg":       {cwd: true},
	"gorename":      {cwd: true},
	"biome":         {write: []string{"--write", "--apply", "--apply-unsafe", "--fix"}, cwd: true},
	"ruff":          {},
}

func refactorTools() {
	for name := range fixers {
		tools[name] = fixerTool
	}
	tools["@next/codemod"] = fixerTool
	tools["ruff"] = ruffTool
}

// fixerTool: a fixer that writes over broad targets is a broad refactor.
func fixerTool(c *call) finding {
	fx, ok := fixers[c.name]
	if !ok {
		fx = fixer{cwd: true}
	}
	switch {
	case len(fx.check) > 0 && hasFlag(c.args, fx.check...):
		return ro(c.name + " only checks")
	case len(fx.write) > 0 && !hasFlag(c.args, fx.write...) && !writesBySub(c, fx):
		return ro(c.name + " only reports")
	}
	return refactorTargets(c, c.name, fixerTargets(c, fx), fx.cwd)
}

// writesBySub covers tools whose write switch is a subcommand (dprint fmt).
func writesBySub(c *call, fx fixer) bool {
	for _, w := range fx.write {
		if !strings.HasPrefix(w, "-") && first(positionals(c.args, fx.valued)) == w {
			return true
		}
	}
	return false
}

func fixerTargets(c *call, fx fixer) []arg {
	ops := positionals(c.args, fx.valued)
	switch c.name {
	case "comby":
		ops = nil // templates, then file filters; it walks the whole directory
	case "dprint", "taplo", "biome", "codemod", "react-codemod", "@next/codemod":
		ops = tail(ops)
	}
	return ops
}

func ruffTool(c *call) finding {
	ops := positionals(c.args, fset("--config", "--select", "--ignore", "--extend-select", "--target-version", "--line-length"))
	switch first(ops) {
	case "format":
		if hasFlag(c.args, "--check", "--diff") {
			return ro("ruff format --check only checks")
		}
		return refactorTargets(c, "ruff format", tail(ops), true)
	case "check", "":
		if hasFlag(c.args, "--fix", "--unsafe-fixes") && !hasFlag(c.args, "--diff") {
			return refactorTargets(c, "ruff check --fix", tail(ops), true)
		}
	}
	return ro("ruff " + first(ops) + " only reports")
}

// refactorTargets: many files, directories, globs or the whole project
// make a rewrite broad; one or two named files do not.
func refactorTargets(c *call, what string, targets []arg, cwd bool) finding {
	broad := c.many || len(targets) > 2 || len(targets) == 0 && cwd
	for _, t := range targets {
		broad = broad || broadTarget(t.s)
	}
	if broad {
		return rev(what+" rewrites many files", BroadRefactor)
	}
	return rev(what + " rewrites " + strings.Join(strs(targets), " "))
}

func broadTarget(s string) bool {
	if s == "." || s == "./" || strings.HasSuffix(s, "...") || strings.HasSuffix(s, "/") || strings.ContainsAny(s, "*?{") {
		return true
	}
	base := path.Base(s)
	return !strings.Contains(base, ".") && !knownFile[base]
}

var knownFile = set("Makefile", "Dockerfile", "Gemfile", "Rakefile", "Procfile", "Justfile", "LICENSE", "README", "Vagrantfile", "Brewfile", "Jenkinsfile", "Caddyfile")

// inPlace judges a stream editor run with -i over files.
func inPlace(c *call, what string, files []arg) finding {
	if len(files) == 0 && !c.xargs {
		return ro(what + " with no files reads stdin")
	}
	return refactorTargets(c, what, files, false)
}

var sedValued = fset("-e", "--expression", "-f", "--file", "-l", "--line-length")

// sedTool: sed without -i only prints.
func sedTool(c *call) finding {
	inplace, args := false, c.args
	for i := 0; i < len(args); i++ {
		s := args[i].s
		if s == "-i" || s == "--in-place" || strings.HasPrefix(s, "--in-place=") || (strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "--") && strings.Contains(s, "i") && !sedValued[s]) {
			inplace = true
			if s == "-i" && i+1 < len(args) && args[i+1].s == "" {
				args = append(args[:i+1:i+1], args[i+2:]...)
			}
		}
	}
	if !inplace {
		return ro("sed without -i only prints")
	}
	ops := positionals(args, sedValued)
	if !hasFlag(args, "-e", "--expression", "-f", "--file") {
		ops = tail(ops)
	}
	return inPlace(c, "sed -i", ops)
}

// perlTool: "perl -pi -e 's/a/b/' files" edits in place.
func perlTool(c *call) finding {
	inplace := false
	for _, a := range c.args {
		if a.s == "--" || !strings.HasPrefix(a.s, "-") || a.s == "-e" || a.s == "-E" {
			continue
		}
		if i := strings.IndexByte(a.s, 'i'); i > 0 && !strings.ContainsAny(a.s[1:i], "eE") {
			inplace = true
		}
	}
	ops := positionals(c.args, fset("-e", "-E", "-I", "-M", "-m"))
	if !inplace {
		if hasShort(c.args, 'e') || hasShort(c.args, 'E') || len(ops) == 0 {
			return rev("perl runs inline code")
		}
		return script(ops[0].s)
	}
	if !hasFlag(c.args, "-e", "-E") {
		ops = tail(ops)
	}
	return inPlace(c, "perl -i", ops)
}
