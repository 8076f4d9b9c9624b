package classify

import "strings"

func depTools() {
	register(map[string]handler{
		"npm":               npmTool,
		"pnpm":              pnpmTool,
		"yarn":              yarnTool,
		"bun":               bunTool,
		"pip":               pipTool,
		"pip3":              pipTool,
		"uv":                uvTool,
		"poetry":            poetryTool,
		"pipenv":            pipenvTool,
		"pip-compile":       pipCompileTool,
		"pip-sync":          func(c *call) finding { return rev("pip-sync installs the pinned requirements") },
		"cargo":             cargoTool,
		"go":                goTool,
		"bundle":            bundleTool,
		"gem":               gemTool,
		"composer":          composerTool,
		"ncu":               ncuTool,
		"npm-check-updates": ncuTool,
		"pod":               podTool,
		"swift":             swiftTool,
		"flutter":           dartTool,
		"dart":              dartTool,
		"mix":               mixTool,
		"dotnet":            dotnetTool,
		"mvn":               mvnTool,
		"mvnw":              mvnTool,
		"gradle":            gradleTool,
		"gradlew":           gradleTool,
	})
	for _, n := range []string{"brew", "apt", "apt-get", "yum", "dnf", "apk", "port", "pacman", "zypper", "snap", "choco", "winget", "scoop", "nix-env"} {
		tools[n] = sysPkgTool
	}
}

// depChange is a change of the dependency set; adding, removing and
// upgrading are all treated as an upgrade, since each can move versions.
func depChange(what string) finding {
	return rev(what+" changes dependency versions", DependencyUpgrade, LockfileRewrite)
}

func lockfile(what string) finding {
	return rev(what+" rewrites the lockfile", LockfileRewrite)
}

// bareInstall installs what the lockfile pins; it rewrites the lockfile
// only to match manifest edits already made, so it runs anywhere.
func bareInstall(what string) finding {
	return rev(what+" installs the locked dependencies").hints(DependencyUpgrade, LockfileRewrite)
}

var npmValued = fset("--prefix", "-w", "--workspace", "--registry", "--tag", "--otp", "--access",
	"--cache", "--userconfig", "--loglevel", "-C", "--omit", "--include", "--install-strategy")

var npmRead = set("outdated", "ls", "list", "ll", "la", "view", "info", "show", "v", "search",
	"why", "explain", "doctor", "whoami", "help", "prefix", "root", "bin", "fund", "query", "sbom",
	"ping", "docs", "repo", "bugs", "home", "find-dupes", "diff", "help-search")

var npmInstall = set("install", "i", "in", "ins", "inst", "insta", "instal", "isnt", "isnta", "isntal", "isntall", "add")

var npmExternal = set("unpublish", "deprecate", "dist-tag", "owner", "access", "team", "org", "star", "unstar", "hook")

func npmTool(c *call) finding {
	ops := positionals(c.args, npmValued)
	sub, rest := first(ops), tail(ops)
	switch {
	case npmInstall[sub]:
		return installLike(c, "npm install", rest)
	case sub == "ci" || sub == "clean-install" || sub == "install-clean" || sub == "ic":
		return rev("npm ci installs exactly the lockfile")
	case sub == "update" || sub == "up" || sub == "upgrade" || sub == "udpate":
		return depChange("npm update")
	case sub == "uninstall" || sub == "un" || sub == "remove" || sub == "rm" || sub == "r":
		return depChange("npm uninstall")
	case sub == "dedupe" || sub == "ddp":
		return lockfile("npm dedupe")
	case sub == "audit":
		return auditFix(c, "npm audit", rest)
	case sub == "run" || sub == "run-script" || sub == "rum" || sub == "urn":
		return runScript(c, rest)
	case sub == "test" || sub == "t" || sub == "tst":
		return ro("npm test runs the tests")
	case sub == "exec" || sub == "x":
		return execIn(c, "npm exec", npmValued, 1)
	case sub == "publish":
		return dryRun(c, ext("npm publish publishes a package"))
	case npmExternal[sub]:
		return ext("npm " + sub + " changes the registry")
	case npmRead[sub] || sub == "" || sub == "config" && first(rest) != "set" && first(rest) != "delete":
		return ro("npm " + sub + " only reads")
	}
	return rev("npm " + sub)
}

// installLike judges "npm install [pkgs]" and its cousins.
func installLike(c *call, what string, pkgs []arg) finding {
	switch {
	case hasFlag(c.args, "-g", "--global", "--location=global"):
		return rev(what + " -g installs a global tool")
	case hasFlag(c.args, "--package-lock-only", "--lockfile-only", "--fix-lockfile", "--mode=update-lockfile"):
		return lockfile(what)
	case hasFlag(c.args, "--no-save", "--no-lockfile", "--frozen-lockfile", "--immutable", "--ci"):
		return rev(what + " leaves the manifest and lockfile alone")
	case len(pkgs) == 0:
		return bareInstall(what)
	}
	return depChange(what + " " + strings.Join(strs(pkgs), " "))
}

func auditFix(c *call, what string, rest []arg) finding {
	if first(rest) == "fix" || hasFlag(c.args, "--fix") {
		return dryRun(c, depChange(what+" fix"))
	}
	return ro(what + " only reads")
}

// runScript classifies "npm run NAME": by name, or by the program when a
// tool of that name is known (yarn eslint --fix .).
func runScript(c *call, rest []arg) finding {
	if len(rest) == 0 {
		return ro("lists scripts")
	}
	return script(rest[0].s)
}

// execIn classifies the program that a package manager runs: the
// arguments from the k-th operand on.
func execIn(c *call, what string, valued flags, k int) finding {
	rest := restFrom(c.args, valued, k)
	if len(rest) == 0 {
		return ro(what + " with nothing to run")
	}
	c.sub(rest)
	return ro(what + " runs a program")
}

// binOrScript: "yarn NAME args" runs a script or a dependency's binary.
func binOrScript(c *call, ops []arg) finding {
	if len(ops) == 0 {
		return ro("nothing to run")
	}
	if _, ok := tools[ops[0].s]; ok || readOnly[ops[0].s] {
		c.sub(c.args[indexOf(c.args, ops[0].s):])
		return ro("runs " + ops[0].s)
	}
	return script(ops[0].s)
}

var pnpmDlxValued = fset("--filter", "-F", "-C", "--dir", "--package", "-c", "--shell-mode")

var pnpmValued = fset("--filter", "-F", "-C", "--dir", "--reporter", "--loglevel", "--workspace-root")

func pnpmTool(c *call) finding {
	ops := positionals(c.args, pnpmValued)
	sub, rest := first(ops), tail(ops)
	switch sub {
	case "install", "i":
		return installLike(c, "pnpm install", nil)
	case "add":
		return installLike(c, "pnpm add", rest)
	case "update", "up", "upgrade":
		return depChange("pnpm update")
	case "remove", "rm", "uninstall", "un":
		return depChange("pnpm remove")
	case "dedupe", "import":
		return lockfile("pnpm " + sub)
	case "audit":
		return auditFix(c, "pnpm audit", rest)
	case "run", "run-script":
		return runScript(c, rest)
	case "test", "t":
		return ro("pnpm test runs the tests")
	case "exec", "dlx":
		return execIn(c, "pnpm "+sub, pnpmDlxValued, 1)
	case "publish":
		return dryRun(c, ext("pnpm publish publishes a package"))
	case "outdated", "ls", "list", "why", "licenses", "root", "bin", "":
		return ro("pnpm " + sub + " only reads")
	case "store", "create", "init", "setup", "link", "unlink", "prune", "rebuild", "fetch", "env", "patch", "patch-commit", "deploy":
		return rev("pnpm " + sub)
	}
	return binOrScript(c, ops)
}

var yarnValued = fset("--cwd", "--modules-folder", "--cache-folder", "--registry", "--network-timeout")

func yarnTool(c *call) finding {
	ops := positionals(c.args, yarnValued)
	sub, rest := first(ops), tail(ops)
	switch sub {
	case "", "install":
		return installLike(c, "yarn install", nil)
	case "add":
		return installLike(c, "yarn add", rest)
	case "upgrade", "up", "upgrade-interactive", "remove":
		return depChange("yarn " + sub)
	case "dedupe":
		return lockfile("yarn dedupe")
	case "run":
		return runScript(c, rest)
	case "test":
		return ro("yarn test runs the tests")
	case "dlx", "exec":
		return execIn(c, "yarn "+sub, fset("--cwd", "-p", "--package"), 1)
	case "workspace":
		n := *c
		n.args = tail(rest)
		return yarnTool(&n)
	case "publish":
		return dryRun(c, ext("yarn publish publishes a package"))
	case "npm":
		if first(rest) == "publish" || first(rest) == "tag" {
			return dryRun(c, ext("yarn npm "+first(rest)+" changes the registry"))
		}
		return ro("yarn npm " + first(rest))
	case "info", "why", "list", "outdated", "licenses", "config", "bin", "workspaces":
		return ro("yarn " + sub + " only reads")
	case "audit", "npm audit":
		return auditFix(c, "yarn audit", rest)
	case "set", "link", "unlink", "init", "create", "cache", "pack", "plugin", "rebuild", "patch":
		return rev("yarn " + sub)
	}
	return binOrScript(c, ops)
}

func bunTool(c *call) finding {
	ops := positionals(c.args, fset("--cwd", "-c", "--config"))
	sub, rest := first(ops), tail(ops)
	switch sub {
	case "install", "i":
		return installLike(c, "bun install", nil)
	case "add", "a":
		return installLike(c, "bun add", rest)
	case "update", "remove", "rm":
		return depChange("bun " + sub)
	case "run":
		return binOrScript(c, rest)
	case "x":
		return execIn(c, "bun x", fset("--cwd", "-c", "--config"), 1)
	case "test":
		return ro("bun test runs the tests")
	case "publish":
		return dryRun(c, ext("bun publish publishes a package"))
	case "pm", "outdated", "":
		return ro("bun " + sub + " only reads")
	case "create", "init", "build", "link", "unlink", "upgrade":
		return rev("bun " + sub)
	}
	return binOrScript(c, ops)
}

var pipValued = fset("-r", "--requirement", "-c", "--constraint", "-e", "--editable", "-t", "--target",
	"-i", "--index-url", "--extra-index-url", "--prefix", "--root", "-f", "--find-links",
	"--python-version", "--platform", "--only-binary", "--no-binary", "--upgrade-strategy", "--src",
	"--cache-dir", "--progress-bar", "--report", "--python", "-p", "--trusted-host", "--log")

var pipRead = set("freeze", "list", "show", "check", "help", "config", "debug", "inspect", "index", "hash", "cache", "search", "", "tree", "compile")

func pipTool(c *call) finding {
	ops := positionals(c.args, pipValued)
	sub, rest := first(ops), tail(ops)
	switch {
	case sub == "install":
		return pipInstall(c, rest)
	case pipRead[sub]:
		return ro("pip " + sub + " only reads")
	}
	return rev("pip " + sub + " changes the environment")
}

// pipInstall: named packages or -U change versions; requirements files
// and local projects install what is pinned.
func pipInstall(c *call, ops []arg) finding {
	var pkgs []string
	for _, o := range ops {
		if !strings.HasPrefix(o.s, ".") && !strings.Contains(o.s, "/") && !strings.HasSuffix(o.s, ".whl") {
			pkgs = append(pkgs, o.s)
		}
	}
	upgrade := hasFlag(c.args, "-U", "--upgrade")
	switch {
	case upgrade && (len(pkgs) > 0 || hasFlag(c.args, "-r", "--requirement")):
		return rev("pip install --upgrade upgrades packages", DependencyUpgrade)
	case len(pkgs) > 0:
		return rev("pip install "+strings.Join(pkgs, " ")+" changes the environment's dependencies", DependencyUpgrade)
	}
	return bareInstall("pip install (requirements or local project)")
}

var uvValued = fset("--with", "--python", "-p", "--project", "--directory", "--package", "--extra",
	"--group", "--env-file", "--index", "--index-url", "--from", "-P", "--upgrade-package", "--only-group",
	"--no-group", "--python-platform", "-r", "--requirements")

func uvTool(c *call) finding {
	ops := positionals(c.args, uvValued)
	sub, rest := first(ops), tail(ops)
	upgrade := hasFlag(c.args, "-U", "--upgrade", "-P", "--upgrade-package")
	switch sub {
	case "pip":
		n := *c
		n.args = c.args[indexOf(c.args, "pip")+1:]
		return pipTool(&n)
	case "add", "remove":
		return depChange("uv " + sub)
	case "lock":
		return lockCmd(c, "uv lock", upgrade)
	case "sync":
		if upgrade {
			return depChange("uv sync --upgrade")
		}
		return installLike(c, "uv sync", nil)
	case "run":
		return execIn(c, "uv run", uvValued, 1)
	case "tool":
		if first(rest) == "run" {
			return execIn(c, "uv tool run", uvValued, 2)
		}
		return rev("uv tool installs a tool")
	case "publish":
		return dryRun(c, ext("uv publish publishes a package"))
	case "tree", "version", "help", "":
		return ro("uv " + sub + " only reads")
	case "format":
		return refactorTargets(c, "uv format", rest, true)
	}
	return rev("uv " + sub)
}

func lockCmd(c *call, what string, upgrade bool) finding {
	switch {
	case hasFlag(c.args, "--check", "--locked", "--check-exists", "--dry-run"):
		return ro(what + " only checks")
	case upgrade:
		return depChange(what + " --upgrade")
	}
	return lockfile(what)
}

func indexOf(args []arg, s string) int {
	for i, a := range args {
		if a.s == s {
			return i
		}
	}
	return len(args) - 1
}

var poetryValued = fset("-C", "--directory", "-P", "--project", "-G", "--group", "-E", "--extras", "--only", "--with", "--without")

func poetryTool(c *call) finding {
	ops := positionals(c.args, poetryValued)
	sub := first(ops)
	switch sub {
	case "add", "remove", "update", "up":
		return depChange("poetry " + sub)
	case "lock":
		return lockCmd(c, "poetry lock", false)
	case "install", "sync":
		return installLike(c, "poetry "+sub, nil)
	case "run":
		return execIn(c, "poetry run", poetryValued, 1)
	case "publish":
		return dryRun(c, ext("poetry publish publishes a package"))
	case "show", "check", "search", "about", "env", "help", "list", "":
		return ro("poetry " + sub + " only reads")
	}
	return rev("poetry " + sub)
}

func pipenvTool(c *call) finding {
	ops := positionals(c.args, fset("--python", "-r", "--requirements"))
	sub, rest := first(ops), tail(ops)
	switch sub {
	case "install":
		return installLike(c, "pipenv install", rest)
	case "update", "upgrade", "uninstall":
		return depChange("pipenv " + sub)
	case "lock":
		return lockfile("pipenv lock")
	case "run":
		return execIn(c, "pipenv run", fset("--python", "-r", "--requirements"), 1)
	case "graph", "check", "":
		return ro("pipenv " + sub + " only reads")
	}
	return rev("pipenv " + sub)
}

func pipCompileTool(c *call) finding {
	return lockCmd(c, "pip-compile", hasFlag(c.args, "-U", "--upgrade", "-P", "--upgrade-package"))
}

var cargoRead = set("check", "c", "test", "t", "bench", "tree", "metadata", "search", "version",
	"verify-project", "locate-project", "pkgid", "help", "audit", "deny", "outdated", "nextest",
	"llvm-cov", "expand", "bloat", "udeps", "read-manifest", "report", "")

func cargoTool(c *call) finding {
	ops := positionals(c.args, fset("--manifest-path", "-Z", "--config", "-p", "--package", "--target", "--features", "-F", "-j", "--jobs", "--bin", "--example", "--test", "--bench", "--profile", "--target-dir", "--color", "--message-format", "--precise"))
	if len(ops) > 0 && strings.HasPrefix(ops[0].s, "+") {
		ops = ops[1:]
	}
	sub, rest := first(ops), tail(ops)
	switch {
	case sub == "add" || sub == "remove" || sub == "rm" || sub == "update" || sub == "upgrade":
		return dryRun(c, depChange("cargo "+sub))
	case sub == "generate-lockfile":
		return lockfile("cargo generate-lockfile")
	case sub == "clippy" && hasFlag(c.args, "--fix"):
		return rev("cargo clippy --fix rewrites the crate", BroadRefactor)
	case sub == "fmt":
		return fmtCheck(c, "cargo fmt", hasFlag(c.args, "--check"))
	case sub == "fix":
		return rev("cargo fix rewrites the crate", BroadRefactor)
	case sub == "publish":
		return dryRun(c, ext("cargo publish publishes a crate"))
	case sub == "yank" || sub == "owner" && hasFlag(c.args, "--add", "-a", "--remove", "-r"):
		return ext("cargo " + sub + " changes the registry")
	case cargoRead[sub] || sub == "clippy":
		return ro("cargo " + sub + " only reads")
	}
	_ = rest
	return rev("cargo " + sub)
}

// fmtCheck: whole-project formatters rewrite broadly unless checking.
func fmtCheck(c *call, what string, check bool) finding {
	if check {
		return ro(what + " only checks")
	}
	return rev(what+" reformats the whole project", BroadRefactor)
}

func goTool(c *call) finding {
	ops := positionals(c.args, fset("-C", "-o", "-tags", "-run", "-bench", "-count", "-timeout", "-p", "-ldflags", "-gcflags", "-mod", "-modfile", "-exec", "-covermode", "-coverprofile", "-cpuprofile", "-memprofile", "-fuzz", "-fuzztime", "-parallel", "-skip", "-benchtime"))
	sub, rest := first(ops), tail(ops)
	switch sub {
	case "get":
		return goGet(c, rest)
	case "mod":
		return goMod(c, rest)
	case "work":
		if first(rest) == "sync" {
			return lockfile("go work sync")
		}
		return rev("go work edits go.work")
	case "test", "vet", "list", "version", "doc", "help", "bug", "":
		return ro("go " + sub + " only reads")
	case "env":
		if hasFlag(c.args, "-w", "-u") {
			return rev("go env -w changes settings")
		}
		return ro("go env only reads")
	case "fmt", "fix":
		return refactorTargets(c, "go "+sub, rest, true)
	}
	return rev("go " + sub)
}

// goGet: module paths change versions; "go get" alone or "go get ." only
// adds what the code already imports.
func goGet(c *call, pkgs []arg) finding {
	var mods []string
	for _, p := range pkgs {
		if !strings.HasPrefix(p.s, ".") {
			mods = append(mods, p.s)
		}
	}
	if len(mods) == 0 && !hasShort(c.args, 'u') {
		return lockfile("go get (current module)")
	}
	return depChange(strings.TrimSpace("go get " + strings.Join(strs(c.args), " ")))
}

func goMod(c *call, rest []arg) finding {
	switch first(rest) {
	case "tidy":
		return lockfile("go mod tidy")
	case "edit":
		if hasFlag(c.args, "-require", "-droprequire", "-replace", "-dropreplace", "-go", "-toolchain", "-exclude", "-dropexclude") {
			return depChange("go mod edit")
		}
		if hasFlag(c.args, "-print", "-json") {
			return ro("go mod edit -print only reads")
		}
		return rev("go mod edit")
	case "graph", "why", "verify", "help", "":
		return ro("go mod " + first(rest) + " only reads")
	}
	return rev("go mod " + first(rest))
}

var bundleValued = fset("--gemfile", "--path", "--jobs", "-j", "--without", "--with", "--group", "-g", "--version")

func bundleTool(c *call) finding {
	ops := positionals(c.args, bundleValued)
	sub := first(ops)
	switch sub {
	case "", "install", "i":
		return installLike(c, "bundle install", nil)
	case "update", "add", "remove":
		return depChange("bundle " + sub)
	case "lock":
		return lockCmd(c, "bundle lock", hasFlag(c.args, "--update"))
	case "exec", "e":
		return execIn(c, "bundle exec", bundleValued, 1)
	case "outdated", "list", "show", "info", "check", "config", "doctor", "licenses":
		return ro("bundle " + sub + " only reads")
	}
	return rev("bundle " + sub)
}

func gemTool(c *call) finding {
	sub := first(positionals(c.args, nil))
	switch sub {
	case "push", "yank", "owner":
		return ext("gem " + sub + " changes the registry")
	case "list", "search", "info", "query", "env", "contents", "dependency", "which", "help", "":
		return ro("gem " + sub + " only reads")
	}
	return rev("gem " + sub + " changes installed gems")
}

func composerTool(c *call) finding {
	ops := positionals(c.args, fset("-d", "--working-dir"))
	sub, rest := first(ops), tail(ops)
	switch sub {
	case "", "install", "i":
		return installLike(c, "composer install", nil)
	case "update", "upgrade", "u", "require", "r", "remove", "rm", "bump":
		return dryRun(c, depChange("composer "+sub))
	case "outdated", "show", "info", "validate", "audit", "why", "depends", "why-not", "licenses", "search", "diagnose":
		return ro("composer " + sub + " only reads")
	case "dump-autoload", "dumpautoload", "create-project", "init", "config", "clear-cache":
		return rev("composer " + sub)
	case "run-script", "run":
		return runScript(c, rest)
	}
	return script(sub)
}

func ncuTool(c *call) finding {
	if hasFlag(c.args, "-u", "--upgrade") {
		return rev("npm-check-updates -u bumps every dependency in package.json", DependencyUpgrade)
	}
	return ro("npm-check-updates only lists")
}

func podTool(c *call) finding {
	switch sub := first(positionals(c.args, nil)); sub {
	case "update":
		return depChange("pod update")
	case "trunk":
		return ext("pod trunk publishes a pod")
	case "install", "":
		return bareInstall("pod install")
	default:
		return rev("pod " + sub)
	}
}

func swiftTool(c *call) finding {
	ops := positionals(c.args, nil)
	switch strings.Join(strs(ops[:min(len(ops), 2)]), " ") {
	case "package update":
		return depChange("swift package update")
	case "package resolve":
		return bareInstall("swift package resolve")
	}
	if first(ops) == "test" {
		return ro("swift test runs the tests")
	}
	return rev("swift " + first(ops))
}

func dartTool(c *call) finding {
	ops := positionals(c.args, nil)
	sub, rest := first(ops), tail(ops)
	switch {
	case sub == "pub" && (first(rest) == "upgrade" || first(rest) == "add" || first(rest) == "remove"):
		return depChange(c.name + " pub " + first(rest))
	case sub == "pub" && (first(rest) == "publish" || first(rest) == "lish"):
		return dryRun(c, ext(c.name+" pub publish publishes a package"))
	case sub == "pub" && first(rest) == "get":
		return bareInstall(c.name + " pub get")
	case sub == "test" || sub == "analyze" || sub == "doctor":
		return ro(c.name + " " + sub + " only reads")
	case sub == "format":
		return fmtCheck(c, c.name+" format", hasFlag(c.args, "--set-exit-if-changed", "-o", "--output"))
	case sub == "fix" && hasFlag(c.args, "--apply"):
		return rev(c.name+" fix --apply rewrites the project", BroadRefactor)
	}
	return rev(c.name + " " + sub)
}

func mixTool(c *call) finding {
	ops := positionals(c.args, nil)
	sub := first(ops)
	switch {
	case sub == "deps.update":
		return depChange("mix deps.update")
	case sub == "deps.unlock":
		return lockfile("mix deps.unlock")
	case sub == "deps.get":
		return bareInstall("mix deps.get")
	case strings.HasPrefix(sub, "ecto."):
		return migrationTask(c, sub)
	case sub == "format":
		return fmtCheck(c, "mix format", hasFlag(c.args, "--check-formatted", "--dry-run"))
	case sub == "test" || sub == "credo" || sub == "dialyzer" || sub == "compile" && false:
		return ro("mix " + sub + " only reads")
	case sub == "hex.publish":
		return dryRun(c, ext("mix hex.publish publishes a package"))
	}
	return rev("mix " + sub)
}

func dotnetTool(c *call) finding {
	ops := positionals(c.args, fset("-c", "--configuration", "-f", "--framework", "-o", "--output", "-v", "--version", "-s", "--source", "-k", "--api-key", "--project", "-p"))
	words := strings.Join(strs(ops[:min(len(ops), 3)]), " ")
	switch {
	case strings.HasPrefix(words, "add package") || strings.HasPrefix(words, "remove package") || (len(ops) > 2 && ops[1].s == "package" && (ops[0].s == "add" || ops[0].s == "remove")):
		return depChange("dotnet " + words)
	case strings.HasPrefix(words, "nuget push"):
		return ext("dotnet nuget push publishes a package")
	case strings.HasPrefix(words, "ef database drop"):
		return irr("dotnet ef database drop drops the database", DestructiveDatabase)
	case strings.HasPrefix(words, "ef database update") || strings.HasPrefix(words, "ef migrations"):
		return migrationFinding(c, "dotnet "+words, strings.Contains(words, "migrations add"))
	case first(ops) == "format":
		return fmtCheck(c, "dotnet format", hasFlag(c.args, "--verify-no-changes"))
	case first(ops) == "test" || first(ops) == "list" || first(ops) == "--info" || first(ops) == "":
		return ro("dotnet " + first(ops) + " only reads")
	}
	return rev("dotnet " + first(ops))
}

func mvnTool(c *call) finding {
	return buildGoals(c, "mvn", map[string]finding{
		"deploy":                       ext("mvn deploy publishes artifacts"),
		"release:perform":              ext("mvn release:perform publishes a release"),
		"versions:use-latest-versions": depChange("mvn versions"),
		"versions:use-latest-releases": depChange("mvn versions"),
		"versions:use-next-releases":   depChange("mvn versions"),
		"versions:update-properties":   depChange("mvn versions"),
		"versions:update-parent":       depChange("mvn versions"),
		"spotless:apply":               rev("spotless:apply reformats the project", BroadRefactor),
		"flyway:migrate":               irr("flyway:migrate migrates the schema", SchemaMigration),
		"flyway:clean":                 irr("flyway:clean drops every object", DestructiveDatabase),
		"liquibase:update":             irr("liquibase:update migrates the schema", SchemaMigration),
		"liquibase:dropAll":            irr("liquibase:dropAll drops every object", DestructiveDatabase),
		"test":                         ro("mvn test runs the tests"),
		"verify":                       ro("mvn verify runs the checks"),
		"dependency:tree":              ro("mvn dependency:tree only reads"),
	})
}

func gradleTool(c *call) finding {
	if hasFlag(c.args, "--write-locks", "--update-locks") {
		return lockfile("gradle --write-locks")
	}
	return buildGoals(c, "gradle", map[string]finding{
		"publish":               ext("gradle publish publishes artifacts"),
		"publishToMavenCentral": ext("gradle publish publishes artifacts"),
		"publishPlugins":        ext("gradle publishPlugins publishes plugins"),
		"spotlessApply":         rev("spotlessApply reformats the project", BroadRefactor),
		"flywayMigrate":         irr("flywayMigrate migrates the schema", SchemaMigration),
		"flywayClean":           irr("flywayClean drops every object", DestructiveDatabase),
		"test":                  ro("gradle test runs the tests"),
		"check":                 ro("gradle check runs the checks"),
		"dependencies":          ro("gradle dependencies only reads"),
		"tasks":                 ro("gradle tasks only reads"),
	})
}

// buildGoals takes the most severe of the goals named on the line.
func buildGoals(c *call, what string, goals map[string]finding) finding {
	worst := rev(what + " builds the project")
	seen := false
	for _, o := range positionals(c.args, fset("-f", "--file", "-pl", "--projects", "-P", "-D", "-s", "--settings", "-p", "--project-dir", "-x", "--exclude-task")) {
		if f, ok := goals[o.s]; ok && (!seen || severity(f) > severity(worst)) {
			worst, seen = f, true
		}
	}
	return worst
}

func sysPkgTool(c *call) finding {
	sub := first(positionals(c.args, nil))
	switch sub {
	case "list", "search", "info", "show", "policy", "outdated", "deps", "doctor", "config", "leaves", "":
		return ro(c.name + " " + sub + " only reads")
	}
	return rev(c.name + " " + sub + " changes system packages")
}
