package classify

import (
	"net/url"
	"strings"
)

func externalTools() {
	register(map[string]handler{
		"curl":    curlTool,
		"wget":    wgetTool,
		"http":    httpieTool,
		"https":   httpieTool,
		"xh":      httpieTool,
		"gh":      ghTool,
		"glab":    ghTool,
		"docker":  dockerTool,
		"podman":  dockerTool,
		"nerdctl": dockerTool,
	})
	for _, n := range []string{"sendmail", "mail", "mailx", "mutt", "neomutt", "msmtp", "swaks", "s-nail", "ssmtp"} {
		tools[n] = mailTool
	}
	for _, n := range []string{"twine", "goreleaser", "semantic-release", "lerna", "changeset", "vsce", "ovsx", "np", "release-it", "standard-version"} {
		tools[n] = publishTool
	}
}

var curlValued = fset("-X", "--request", "-d", "--data", "--data-raw", "--data-binary",
	"--data-urlencode", "--data-ascii", "--json", "-F", "--form", "--form-string", "-T",
	"--upload-file", "-H", "--header", "-A", "--user-agent", "-u", "--user", "-b", "--cookie",
	"-c", "--cookie-jar", "-e", "--referer", "-w", "--write-out", "-m", "--max-time",
	"--connect-timeout", "-x", "--proxy", "--cacert", "--cert", "--key", "-r", "--range", "-K",
	"--config", "--retry", "-C", "--continue-at", "--resolve", "-o", "--output", "--url",
	"--mail-from", "--mail-rcpt", "--oauth2-bearer", "-E", "--retry-delay", "--retry-max-time",
	"--limit-rate", "--interface", "--dns-servers", "--output-dir", "--variable", "--expand-data")

var curlData = []string{"-d", "--data", "--data-raw", "--data-binary", "--data-urlencode",
	"--data-ascii", "--json", "-F", "--form", "--form-string", "-T", "--upload-file"}

// curlTool: a mutating method or a body makes the request a mutation;
// requests to this machine stay local.
func curlTool(c *call) finding {
	urls := positionals(c.args, curlValued)
	if u, ok := flagValue(c.args, "--url"); ok {
		urls = append(urls, arg{s: u})
	}
	method, _ := flagValue(c.args, "-X", "--request")
	method = strings.ToUpper(method)
	data := hasFlag(c.args, curlData...) && !hasFlag(c.args, "-G", "--get")
	mutating := method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" || (data && method != "GET" && method != "HEAD")
	if hasFlag(c.args, "--mail-rcpt") {
		return ext("curl sends email")
	}
	f := httpFinding(c, "curl", urls, mutating || len(curlUploads(c.args)) > 0, hasFlag(c.args, "-o", "--output", "-O", "--remote-name", "--remote-name-all", "--output-dir"))
	return secretUpload(f, "curl", curlUploads(c.args))
}

// httpFinding judges an HTTP client call.
func httpFinding(c *call, what string, urls []arg, mutating, writes bool) finding {
	local := len(urls) > 0
	for _, u := range urls {
		local = local && localURL(u)
	}
	switch {
	case mutating && local:
		return rev(what + " sends a mutating request to a local service")
	case mutating:
		return ext(what + " sends a mutating request (POST/PUT/PATCH/DELETE or a body)")
	case writes:
		return rev(what + " downloads to a file")
	}
	return ro(what + " fetches (GET)")
}

func localURL(a arg) bool {
	if a.lead {
		return false
	}
	s := a.s
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return false
	}
	return !hostRemote(u.Hostname())
}

func wgetTool(c *call) finding {
	method, _ := flagValue(c.args, "--method")
	method = strings.ToUpper(method)
	mutating := hasFlag(c.args, "--post-data", "--post-file", "--body-data", "--body-file") ||
		(method != "" && method != "GET" && method != "HEAD")
	urls := positionals(c.args, fset("-O", "--output-document", "-o", "--output-file", "-P", "--directory-prefix", "--header", "-U", "--user-agent", "--post-data", "--post-file", "--body-data", "--body-file", "--method", "-t", "--tries", "-T", "--timeout", "-e", "--user", "--password"))
	out, _ := flagValue(c.args, "-O", "--output-document")
	writes := out != "-" && !hasFlag(c.args, "--spider", "-qO-")
	return secretUpload(httpFinding(c, "wget", urls, mutating, writes), "wget", flagValues(c.args, "--post-file", "--body-file"))
}

// httpieTool: "http POST url", "http url field=value" (a body implies POST).
func httpieTool(c *call) finding {
	ops := positionals(c.args, fset("-a", "--auth", "-A", "--auth-type", "--session", "-o", "--output", "--verify", "--cert", "--proxy", "--timeout"))
	mutating := hasFlag(c.args, "-f", "--form", "--raw", "--multipart")
	var urls []arg
	var files []string
	for i, o := range ops {
		if at := strings.IndexByte(o.s, '@'); at >= 0 && i > 0 && !strings.Contains(o.s, "://") {
			files = append(files, o.s[at+1:])
		}
		m := strings.ToUpper(o.s)
		switch {
		case i == 0 && (m == "POST" || m == "PUT" || m == "PATCH" || m == "DELETE"):
			mutating = true
		case i == 0 && (m == "GET" || m == "HEAD" || m == "OPTIONS"):
		case len(urls) == 0:
			urls = append(urls, o)
		case strings.Contains(o.s, ":=") || (strings.Contains(o.s, "=") && !strings.Contains(o.s, "==")) || strings.Contains(o.s, "@"):
			mutating = true
		}
	}
	f := httpFinding(c, c.name, urls, mutating || len(files) > 0, hasFlag(c.args, "-o", "--output", "-d", "--download"))
	return secretUpload(f, c.name, files)
}

func mailTool(c *call) finding {
	if c.name == "mail" && len(c.args) == 0 {
		return ro("mail reads the mailbox")
	}
	return ext(c.name + " sends email")
}

func publishTool(c *call) finding {
	sub := first(positionals(c.args, nil))
	switch {
	case c.name == "twine" && sub == "check":
		return ro("twine check only reads")
	case c.name == "goreleaser" && (hasFlag(c.args, "--snapshot", "--skip-publish", "--skip=publish") || sub == "check" || sub == "build"):
		return rev("goreleaser builds locally")
	case c.name == "changeset" && sub != "publish":
		return rev("changeset records a version change")
	case c.name == "lerna" && sub != "publish":
		return rev("lerna " + sub)
	}
	return dryRun(c, ext(c.name+" publishes a release"))
}

// ghRead are the second-level gh subcommands that only read.
var ghRead = set("list", "ls", "view", "status", "diff", "checks", "watch", "search", "browse",
	"download", "clone", "checkout", "login", "logout", "token", "setup-git", "switch", "refresh")

var ghTop = set("status", "browse", "search", "auth", "help", "version", "completion", "config", "alias", "extension", "")

func ghTool(c *call) finding {
	ops := positionals(c.args, fset("-R", "--repo", "-X", "--method", "-f", "--field", "-F", "--raw-field", "-H", "--header", "--input", "-q", "--jq", "-t", "--template", "--hostname"))
	if first(ops) == "api" {
		return ghAPI(c)
	}
	if ghTop[first(ops)] || len(ops) > 1 && ghRead[ops[1].s] {
		if len(ops) > 1 && (ops[1].s == "clone" || ops[1].s == "checkout" || ops[1].s == "download") {
			return rev(c.name + " " + ops[0].s + " " + ops[1].s + " fetches locally")
		}
		return ro(c.name + " " + strings.Join(strs(ops[:min(2, len(ops))]), " ") + " only reads")
	}
	return ext(c.name + " " + strings.Join(strs(ops[:min(2, len(ops))]), " ") + " changes the forge")
}

func ghAPI(c *call) finding {
	method, _ := flagValue(c.args, "-X", "--method")
	method = strings.ToUpper(method)
	body := hasFlag(c.args, "-f", "--field", "-F", "--raw-field", "--input")
	if method == "" && body || method != "" && method != "GET" && method != "HEAD" {
		return ext(c.name + " api sends a mutating request")
	}
	return ro(c.name + " api GET only reads")
}

var dockerValued = fset("-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file", "--detach-keys", "-H", "--host", "--context", "-c", "--config", "-f", "--file", "-p", "--project-name", "--profile", "--log-level")

func dockerTool(c *call) finding {
	ops := positionals(c.args, dockerValued)
	sub, rest := first(ops), tail(ops)
	switch {
	case sub == "push" || sub == "image" && first(rest) == "push" || sub == "manifest" && first(rest) == "push":
		return ext(c.name + " push publishes an image")
	case (sub == "build" || sub == "buildx") && hasFlag(c.args, "--push"):
		return ext(c.name + " build --push publishes an image")
	case sub == "compose" || sub == "docker-compose":
		return composeTool(c, rest)
	case sub == "exec":
		return dockerExec(c)
	case sub == "system" && first(rest) == "prune" || sub == "volume" && (first(rest) == "rm" || first(rest) == "prune"):
		return irr(c.name+" "+sub+" "+first(rest)+" deletes volumes or images", DestructiveCleanup)
	case sub == "ps" || sub == "images" || sub == "logs" || sub == "inspect" || sub == "version" || sub == "info" || sub == "stats" || sub == "top" || sub == "history" || sub == "search" || sub == "":
		return ro(c.name + " " + sub + " only reads")
	}
	return rev(c.name + " " + sub + " changes local containers")
}

func composeTool(c *call, rest []arg) finding {
	switch first(rest) {
	case "push":
		return ext("compose push publishes images")
	case "down":
		if hasFlag(c.args, "-v", "--volumes") {
			return irr("compose down -v deletes volumes", DestructiveCleanup)
		}
	case "exec", "run":
		return dockerExec(c)
	case "ps", "logs", "config", "ls", "images", "top", "version":
		return ro("compose " + first(rest) + " only reads")
	}
	return rev("compose " + first(rest) + " changes local containers")
}

// dockerExec classifies the command run inside a local container.
func dockerExec(c *call) finding {
	i := indexOf(c.args, "exec")
	if j := indexOf(c.args, "run"); c.args[i].s != "exec" && c.args[j].s == "run" {
		i = j
	}
	rest := dropOpts(c.args[i+1:], fset("-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file", "--detach-keys", "--index", "--name", "--entrypoint", "-v", "--volume", "-p", "--publish", "-l", "--label"))
	if len(rest) < 2 {
		return rev(c.name + " exec opens a shell in a container")
	}
	c.sub(rest[1:])
	return rev(c.name + " exec runs a command in a local container")
}
