package classify

import "strings"

// cli describes a deploy or infrastructure CLI by its first subcommand:
// read-only ones, local ones, and everything else external.
type cli struct {
	read   map[string]bool
	local  map[string]bool
	valued flags
	dry    []string // options that make any subcommand a dry run
	bare   finding  // no subcommand at all
}

func (d cli) handle(c *call) finding {
	ops := positionals(c.args, d.valued)
	v := first(ops)
	what := c.name + " " + strings.Join(strs(ops[:min(2, len(ops))]), " ")
	switch {
	case v == "" && d.bare.reason != "":
		return d.bare
	case len(d.dry) > 0 && hasFlag(c.args, d.dry...):
		return ro(what + " (dry run)")
	case d.read[v] || v == "" || v == "help" || v == "version":
		return ro(what + " only reads")
	case d.local[v]:
		return rev(what + " works locally")
	case len(ops) > 1 && (d.read[v+" "+ops[1].s] || cloudRead[ops[1].s]):
		return ro(what + " only reads")
	case len(ops) > 1 && d.local[v+" "+ops[1].s]:
		return rev(what + " works locally")
	}
	return ext(strings.TrimSpace(what) + " changes remote infrastructure")
}

var cloudRead = set("list", "ls", "get", "show", "status", "describe", "history", "info", "logs", "view", "whoami", "output")

var clis = map[string]cli{
	"kubectl": {
		read: set("get", "describe", "logs", "top", "explain", "version", "api-resources", "api-versions",
			"cluster-info", "diff", "events", "wait", "rollout status", "rollout history", "auth", "config view",
			"config get-contexts", "config current-context", "kustomize", "completion", "plugin", "options"),
		local:  set("port-forward", "proxy", "config"),
		valued: fset("-n", "--namespace", "--context", "-l", "--selector", "-o", "--output", "-f", "--filename", "-c", "--container", "--kubeconfig", "--cluster", "--field-selector", "-k", "--kustomize", "--since", "--tail"),
		dry:    []string{"--dry-run"},
	},
	"helm": {
		read:   set("list", "ls", "status", "get", "history", "template", "lint", "show", "inspect", "search", "env", "diff", "verify"),
		local:  set("repo", "dependency", "dep", "package", "pull", "fetch", "create", "plugin", "registry", "completion"),
		valued: fset("-n", "--namespace", "--kube-context", "-f", "--values", "--set", "--set-string", "--version", "--kubeconfig", "-o", "--output", "--repo"),
		dry:    []string{"--dry-run"},
	},
	"terraform": tfCLI, "tofu": tfCLI, "terragrunt": tfCLI,
	"pulumi": {
		read:   set("preview", "whoami", "about", "logs", "stack ls", "stack output", "stack export", "stack history", "config get", "plugin ls", "stack", "config"),
		local:  set("login", "logout", "new", "install", "config set", "config rm", "stack select", "plugin install", "convert", "gen-completion"),
		valued: fset("-s", "--stack", "-C", "--cwd", "--target"),
	},
	"cdk": {
		read:   set("synth", "synthesize", "diff", "ls", "list", "doctor", "docs", "metadata", "notices", "context", "acknowledge", "ack"),
		local:  set("init"),
		valued: fset("-c", "--context", "--profile", "-a", "--app", "-o", "--output"),
	},
	"serverless": slsCLI, "sls": slsCLI,
	"vercel": vercelCLI, "vc": vercelCLI,
	"netlify": {
		read:   set("status", "open", "watch", "logs", "sites:list", "env:list", "env:get", "functions:list", "status:hooks", "api", "open:admin", "open:site"),
		local:  set("dev", "build", "link", "unlink", "login", "logout", "init", "serve", "functions:serve", "functions:create", "functions:build", "env:pull", "completion", "switch"),
		valued: fset("--dir", "-d", "--functions", "-f", "--site", "--auth", "--alias", "-m", "--message", "--context", "--filter"),
	},
	"fly": flyCLI, "flyctl": flyCLI,
	"heroku": {
		read: set("logs", "apps", "apps:info", "info", "config", "config:get", "ps", "releases", "releases:info", "addons", "addons:info",
			"auth:whoami", "status", "domains", "pg:info", "whoami", "pipelines", "access", "regions", "stack", "features", "labs",
			"buildpacks", "notifications", "certs", "drains", "webhooks", "spaces", "teams", "members", "keys", "plugins", "pg:credentials", "redis:info"),
		local:  set("login", "logout", "local", "local:run", "git:remote", "git:clone", "plugins:install", "update", "autocomplete", "pg:pull", "auth:login"),
		valued: fset("-a", "--app", "-r", "--remote", "-n", "--num", "-t", "--tail", "-s", "--stack", "--team", "-p", "--process"),
	},
	"firebase": {
		read:   set("projects:list", "apps:list", "hosting:channel:list", "functions:list", "functions:log", "login:list", "hosting:sites:list", "target", "open"),
		local:  set("emulators:start", "emulators:exec", "serve", "login", "logout", "init", "use", "setup:emulators:firestore", "setup:emulators:database", "experiments:enable"),
		valued: fset("-P", "--project", "--only", "--except", "-m", "--message", "--token"),
	},
	"railway": {
		read:   set("logs", "status", "whoami", "list", "open", "docs", "domain"),
		local:  set("login", "logout", "link", "unlink", "init", "shell", "completion", "environment"),
		valued: fset("-s", "--service", "-e", "--environment", "-p", "--project"),
	},
	"eb": {
		read:   set("status", "logs", "health", "list", "events", "printenv", "config", "appversion"),
		local:  set("init", "local", "use", "labs", "platform"),
		valued: fset("-p", "--profile", "-r", "--region", "-l", "--label", "-m", "--message"),
	},
	"doctl":  cloudCLI,
	"az":     cloudCLI,
	"gcloud": cloudCLI,
}

var tfCLI = cli{
	read:   set("plan", "validate", "show", "output", "providers", "graph", "console", "state list", "state show", "state pull", "workspace list", "workspace show", "fmt", "metadata", "test", "version"),
	local:  set("init", "get", "workspace", "login", "logout", "force-unlock", "run-all"),
	valued: fset("-chdir", "-var", "-var-file", "-target", "-out", "-state", "-lock-timeout", "-parallelism", "-backend-config", "-replace"),
}

var slsCLI = cli{
	read:   set("info", "print", "metrics", "logs", "package", "doctor", "plugin"),
	local:  set("offline", "create", "login", "logout", "invoke local", "config"),
	valued: fset("-s", "--stage", "-r", "--region", "-f", "--function", "-c", "--config", "--aws-profile", "-p", "--path", "-d", "--data"),
}

var vercelCLI = cli{
	read:   set("ls", "list", "inspect", "logs", "whoami", "env ls", "domains ls", "dns ls", "certs ls", "projects ls", "teams ls", "alias ls", "project ls"),
	local:  set("dev", "pull", "build", "link", "login", "logout", "init", "switch", "env pull", "completion", "telemetry"),
	valued: fset("-t", "--token", "--scope", "-S", "--cwd", "-A", "--local-config", "-e", "--env", "-b", "--build-env", "-m", "--meta", "--environment", "--target"),
	bare:   ext("vercel with no subcommand deploys"),
}

var flyCLI = cli{
	read:   set("status", "logs", "info", "version", "doctor", "regions", "releases", "history", "checks", "dashboard", "open", "platform", "auth whoami", "apps list", "secrets list", "ips list", "volumes list", "machine list", "machine status", "config show", "image show", "certs list", "scale show"),
	local:  set("proxy", "auth", "config", "launch --no-deploy", "wireguard", "agent", "settings"),
	valued: fset("-a", "--app", "-c", "--config", "-r", "--region", "--image", "-i", "--org", "-o"),
}

// cloudCLI marks doctl/az/gcloud; they are judged by verb words anywhere.
var cloudCLI = cli{}

func cloudTools() {
	for name, d := range clis {
		switch {
		case name == "az" || name == "gcloud" || name == "doctl":
			tools[name] = cloudVerbs
		case name == "terraform" || name == "tofu" || name == "terragrunt":
			tools[name] = tfTool
		default:
			tools[name] = d.handle
		}
	}
	register(map[string]handler{
		"aws":              awsTool,
		"gsutil":           gsutilTool,
		"wrangler":         wranglerTool,
		"ansible-playbook": ansibleTool,
		"ansible":          ansibleTool,
	})
	tools["railway"] = func(c *call) finding {
		if first(positionals(c.args, clis["railway"].valued)) == "run" {
			return execIn(c, "railway run", clis["railway"].valued, 1)
		}
		return clis["railway"].handle(c)
	}
}

// tfTool adds the lockfile and upgrade cases of terraform init/providers.
func tfTool(c *call) finding {
	ops := positionals(c.args, tfCLI.valued)
	switch {
	case first(ops) == "init" && hasFlag(c.args, "-upgrade", "--upgrade"):
		return depChange(c.name + " init -upgrade")
	case first(ops) == "providers" && len(ops) > 1 && ops[1].s == "lock":
		return lockfile(c.name + " providers lock")
	case first(ops) == "fmt" && !hasFlag(c.args, "-check", "--check") && hasFlag(c.args, "-recursive", "--recursive"):
		return rev(c.name+" fmt -recursive reformats every module", BroadRefactor)
	case first(ops) == "fmt" && !hasFlag(c.args, "-check", "--check"):
		return rev(c.name + " fmt reformats this module")
	}
	return tfCLI.handle(c)
}

var cloudMutate = set("create", "delete", "deploy", "update", "set", "add-iam-policy-binding",
	"remove-iam-policy-binding", "set-iam-policy", "patch", "submit", "cp", "mv", "rm", "rsync",
	"import", "resize", "start", "stop", "reset", "restart", "enable", "disable", "apply", "execute",
	"publish", "send", "upload", "rollback", "promote", "cancel", "attach", "detach", "ssh", "scp",
	"insert", "remove", "add", "undelete", "restore", "purge", "assign", "swap", "scale", "invoke",
	"up", "push", "sync", "approve", "renew", "regenerate", "rotate", "move", "call", "destroy",
	"tag", "untag", "replace", "upgrade", "install", "uninstall", "acknowledge", "clear", "flush", "trigger")

var cloudLocal = []string{"config set", "config configurations", "auth login", "auth application-default login",
	"init", "login", "logout", "account set", "components install", "components update", "extension add",
	"configure", "auth init", "auth switch", "account get-access-token", "auth print-access-token", "auth list"}

// cloudVerbs judges gcloud/az/doctl by the verbs in the command path;
// an unrecognised path is taken as a change.
func cloudVerbs(c *call) finding {
	ops := positionals(c.args, fset("--project", "--region", "--zone", "-g", "--resource-group", "--subscription", "-n", "--name", "--format", "--filter", "-o", "--output", "--query", "--location", "-l", "--context", "--account", "--configuration", "-t", "--access-token", "--image", "--source"))
	words := strs(ops)
	joined := strings.Join(words, " ")
	what := c.name + " " + joined
	for _, l := range cloudLocal {
		if strings.HasPrefix(joined, l) {
			return rev(what + " changes local settings")
		}
	}
	if f, ok := cloudCopy(c, what, words); ok {
		return f
	}
	for _, w := range words {
		if cloudMutate[w] {
			return dryRun(c, ext(what+" changes cloud resources"))
		}
	}
	for _, w := range words {
		if cloudRead[w] || strings.HasPrefix(w, "list-") || strings.HasPrefix(w, "show-") || strings.HasPrefix(w, "get-") || w == "read" || w == "tail" || w == "version" || w == "info" || w == "help" || w == "search" || w == "browse" {
			return ro(what + " only reads")
		}
	}
	if len(words) == 0 {
		return ro(c.name + " with no command")
	}
	return ext(what + " (unknown subcommand, taken as a change)")
}

// cloudCopy: a copy whose destination is local is a download.
func cloudCopy(c *call, what string, words []string) (finding, bool) {
	for i, w := range words {
		if (w == "cp" || w == "rsync") && len(words) > i+2 {
			dst := words[len(words)-1]
			if !strings.Contains(dst, "://") {
				return rev(what + " downloads"), true
			}
			return dryRun(c, ext(what+" uploads")), true
		}
	}
	return finding{}, false
}

var awsReadPrefixes = []string{"describe", "list", "get", "head", "batch-get", "scan", "query", "lookup",
	"search", "validate", "estimate", "simulate", "test", "preview", "wait", "tail", "filter", "select", "help", "download"}

// awsTool: "aws SERVICE OP": describe-/list-/get- ops only read.
func awsTool(c *call) finding {
	ops := positionals(c.args, fset("--profile", "--region", "--output", "--query", "--endpoint-url", "--bucket", "--key", "--cli-input-json", "--color", "--filters", "--instance-ids", "--function-name", "--stack-name", "--body", "--payload", "--template-body", "--parameters", "--cluster", "--service", "--name", "--log-group-name"))
	svc, op := first(ops), first(tail(ops))
	what := "aws " + svc + " " + op
	switch {
	case svc == "s3":
		return awsS3(c, what, tail(ops))
	case svc == "configure" || svc == "sso" && op == "login":
		return rev(what + " changes local settings")
	case svc == "" || svc == "help" || svc == "sts" || op == "help":
		return ro(what + " only reads")
	}
	for _, p := range awsReadPrefixes {
		if strings.HasPrefix(op, p) {
			return ro(what + " only reads")
		}
	}
	return dryRun(c, ext(what+" changes AWS resources"))
}

func awsS3(c *call, what string, ops []arg) finding {
	op := first(ops)
	switch op {
	case "ls", "presign":
		return ro(what + " only reads")
	case "cp", "sync", "mv":
		dst := ops[len(ops)-1].s
		if !strings.HasPrefix(dst, "s3://") && !(op == "mv" && strings.HasPrefix(first(tail(ops)), "s3://")) {
			return rev(what + " downloads")
		}
	}
	return dryRun(c, ext(what+" changes S3"))
}

func gsutilTool(c *call) finding {
	ops := positionals(c.args, fset("-o", "-h", "-p", "-u"))
	op := first(ops)
	what := "gsutil " + op
	switch op {
	case "ls", "cat", "du", "stat", "hash", "version", "help", "":
		return ro(what + " only reads")
	case "cp", "rsync", "mv":
		if len(ops) > 2 && !strings.HasPrefix(ops[len(ops)-1].s, "gs://") && op != "mv" {
			return rev(what + " downloads")
		}
	}
	return ext(what + " changes Cloud Storage")
}

// wranglerTool: Cloudflare; "--local" keeps D1/KV/R2 work on this machine.
func wranglerTool(c *call) finding {
	ops := positionals(c.args, fset("-c", "--config", "-e", "--env", "--command", "--file", "--name", "--binding", "--namespace-id", "--database"))
	words := strings.Join(strs(ops[:min(3, len(ops))]), " ")
	remote := hasFlag(c.args, "--remote")
	switch {
	case first(ops) == "d1" && strings.Contains(words, "execute"):
		sql, _ := flagValue(c.args, "--command")
		return clientSQL(c, dbTarget{remote: remote}, []string{sql}, hasFlag(c.args, "--file"))
	case first(ops) == "d1" && strings.Contains(words, "migrations apply"):
		if remote {
			return ext("wrangler d1 migrations apply --remote migrates the hosted database")
		}
		return irr("wrangler d1 migrations apply migrates the local database", SchemaMigration)
	case hasFlag(c.args, "--local") || first(ops) == "dev" || first(ops) == "login" || first(ops) == "init" || first(ops) == "types" || first(ops) == "build":
		return rev("wrangler " + words + " works locally")
	case first(ops) == "whoami" || first(ops) == "tail" || first(ops) == "" || strings.Contains(words, " list") || strings.Contains(words, " get"):
		return ro("wrangler " + words + " only reads")
	}
	return dryRun(c, ext("wrangler "+words+" changes Cloudflare"))
}

func ansibleTool(c *call) finding {
	if hasFlag(c.args, "--check", "-C", "--syntax-check", "--list-hosts", "--list-tasks", "--list-tags") {
		return ro(c.name + " only checks")
	}
	if m, _ := flagValue(c.args, "-m", "--module-name"); m == "ping" || m == "setup" {
		return ro(c.name + " -m " + m + " only reads")
	}
	return ext(c.name + " changes remote hosts")
}
