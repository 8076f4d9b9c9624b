package classify

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// interpreters run code given as a script, an argument or stdin.
var interpreters = set("sh", "bash", "zsh", "dash", "ksh", "fish", "eval", "source", ".",
	"python", "python2", "python3", "node", "deno", "bun", "perl", "ruby", "php", "lua", "tclsh", "pwsh", "iex")

// remoteCode reports the finding for an interpreter fed code that the line
// downloads (curl … | sh, bash <(curl …), sh -c "$(wget -qO- …)"), or
// false when c runs no downloaded code.
func remoteCode(c *call) (finding, bool) {
	if !interpreters[c.name] {
		return finding{}, false
	}
	if c.in != nil && c.in.fetched && readsCodeFromStdin(c) {
		return irr(c.name+" runs code downloaded from the network (piped from "+c.in.from+")", RemoteCode), true
	}
	for _, a := range c.args {
		if a.fetched != "" {
			return irr(c.name+" runs code downloaded from the network (by "+a.fetched+")", RemoteCode), true
		}
		if c.name != "eval" && !strings.HasPrefix(a.s, "-") {
			break // the script; later arguments are its data
		}
	}
	return finding{}, false
}

// readsCodeFromStdin reports whether interpreter call c takes its code
// from stdin: no script named, the script "-", or a shell's -s.
func readsCodeFromStdin(c *call) bool {
	if c.name == "eval" || c.name == "source" || c.name == "." {
		return false
	}
	for _, a := range c.args {
		switch {
		case a.s == "-s" && shells[c.name]:
			return true
		case a.s == "-" || a.s == "/dev/stdin":
			return true
		case a.s == "--":
		case !strings.HasPrefix(a.s, "-"):
			return false
		case a.s == "-c" || a.s == "-e" || a.s == "--eval" || a.s == "-p" || a.s == "--print":
			return false
		}
	}
	return true
}

var shells = set("sh", "bash", "zsh", "dash", "ksh", "fish")

// fetcher returns the name of a program in stmts that writes a download
// to its stdout (curl without -o, wget -O -, httpie), or "".
func (w *walker) fetcher(stmts []*syntax.Stmt) string {
	name := ""
	for _, s := range stmts {
		syntax.Walk(s, func(n syntax.Node) bool {
			ce, ok := n.(*syntax.CallExpr)
			if !ok || name != "" {
				return name == ""
			}
			words := make([]string, 0, len(ce.Args))
			for _, a := range ce.Args {
				words = append(words, w.peek(a))
			}
			if f := downloadsToStdout(words); f != "" {
				name = f
			}
			return true
		})
	}
	return name
}

// downloadsToStdout names the fetcher among argv (wrappers such as sudo
// and env skipped) when it writes what it downloads to stdout.
func downloadsToStdout(argv []string) string {
	for len(argv) > 0 && (simpleWrappers[cmdName(argv[0])] || strings.Contains(argv[0], "=")) {
		argv = argv[1:]
	}
	if len(argv) == 0 {
		return ""
	}
	name, args := cmdName(argv[0]), argv[1:]
	switch name {
	case "curl":
		for _, a := range args {
			if a == "-o" || a == "--output" || a == "-O" || a == "--remote-name" || a == "--remote-name-all" || strings.HasPrefix(a, "--output=") {
				return ""
			}
		}
		return name
	case "wget":
		for i, a := range args {
			switch {
			case a == "-O" || a == "--output-document":
				if i+1 < len(args) && args[i+1] == "-" {
					return name
				}
			case a == "--output-document=-" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.HasSuffix(a, "O-")):
				return name
			}
		}
		return ""
	case "http", "https", "xh", "fetch", "aria2c":
		return name
	}
	return ""
}

// simpleWrappers run the rest of the line as a command.
var simpleWrappers = set("sudo", "doas", "env", "command", "exec", "nohup", "time", "nice")

// secretUpload refines f, the finding of an HTTP client call, when the
// call sends a credential file (curl -d @.npmrc, -F f=@~/.ssh/id_rsa, -T
// .env, wget --post-file .netrc, http url @.env): to this machine it is a
// SecretUpload, tried in forks first, where credentials are withheld; to
// another host it stays external, and says which file it would send.
func secretUpload(f finding, what string, files []string) finding {
	for _, p := range files {
		if !secretFile(p) {
			continue
		}
		if f.scope == External {
			f.reason += ", uploading the credential file " + p
			f.cats = append(f.cats, SecretUpload)
			return f
		}
		return irr(what+" uploads the credential file "+p, SecretUpload)
	}
	return f
}

// secretNames are base names of files that hold credentials.
var secretNames = set(".npmrc", ".pypirc", ".netrc", ".git-credentials", ".pgpass", ".yarnrc.yml",
	".env", "credentials", "credentials.toml", "credentials.json", "config.json", "id_rsa", "id_ed25519",
	"id_ecdsa", "id_dsa", "authorized_keys", "known_hosts", "kubeconfig", "service-account.json", ".htpasswd")

// secretDirs are directories whose every file is a credential.
var secretDirs = []string{".ssh/", ".aws/", ".gnupg/", ".config/gh/", ".config/gcloud/", ".azure/", ".kube/", ".docker/"}

// secretFile reports whether p names a credential file by its name or the
// directory it is in.
func secretFile(p string) bool {
	base := path.Base(p)
	switch {
	case secretNames[base], strings.HasPrefix(base, ".env."), strings.HasPrefix(base, "id_") && !strings.Contains(base, "."),
		strings.HasSuffix(base, ".pem"), strings.HasSuffix(base, ".key"), strings.HasSuffix(base, ".p12"), strings.HasSuffix(base, ".pfx"):
		return base != ".env.example" && base != ".env.sample" && base != ".env.template"
	}
	for _, d := range secretDirs {
		if strings.Contains("/"+p, "/"+d) {
			return true
		}
	}
	return false
}

// curlUploads are the files a curl call sends: -d/--data*/--json @FILE,
// -F name=@FILE or name=<FILE, -T/--upload-file FILE.
func curlUploads(args []arg) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		flag, val, inline := strings.Cut(args[i].s, "=")
		if !inline && i+1 < len(args) {
			val = args[i+1].s
		}
		switch {
		case flag == "-T" || flag == "--upload-file":
			out = append(out, val)
		case flag == "-F" || flag == "--form":
			if _, v, ok := strings.Cut(val, "="); ok && (strings.HasPrefix(v, "@") || strings.HasPrefix(v, "<")) {
				out = append(out, strings.SplitN(v[1:], ";", 2)[0])
			}
		case strings.HasPrefix(flag, "--data") || flag == "-d" || flag == "--json":
			if strings.HasPrefix(val, "@") {
				out = append(out, val[1:])
			}
		case strings.HasPrefix(flag, "-d@"):
			out = append(out, flag[3:])
		}
	}
	return out
}
