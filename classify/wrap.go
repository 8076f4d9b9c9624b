package classify

import "strings"

// wrapper strips a wrapper's own options and returns the wrapped argv.
// ok=false means the wrapper wraps nothing and is classified by name.
type wrapper func(c *call, args []arg) (rest []arg, ok bool)

var wrappers map[string]wrapper

func wrapperTable() {
	wrappers = map[string]wrapper{
		"sudo":       skipOpts(fset("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group", "--chdir", "--prompt", "--host")),
		"doas":       skipOpts(fset("-u", "-C")),
		"nohup":      skipOpts(nil),
		"time":       skipOpts(nil),
		"command":    commandWrap,
		"builtin":    skipOpts(nil),
		"exec":       skipOpts(fset("-a")),
		"nice":       skipOpts(fset("-n", "--adjustment")),
		"ionice":     skipOpts(fset("-c", "-n", "-p", "--class", "--classdata")),
		"stdbuf":     skipOpts(fset("-i", "-o", "-e")),
		"unbuffer":   skipOpts(nil),
		"caffeinate": skipOpts(fset("-t", "-w")),
		"chronic":    skipOpts(nil),
		"timeout":    skipThen(fset("-s", "-k", "--signal", "--kill-after"), 1),
		"gtimeout":   skipThen(fset("-s", "-k", "--signal", "--kill-after"), 1),
		"watch":      manyWrap(fset("-n", "--interval", "-d", "--differences")),
		"xargs":      xargsWrap,
		"env":        envWrap,
		"npx":        skipOpts(fset("-p", "--package", "--call", "-c", "--cache")),
		"bunx":       skipOpts(fset("-p", "--package")),
		"uvx":        skipOpts(fset("--from", "--with", "--python", "-p", "--index", "--with-requirements")),
		"pipx":       subWrap("run", fset("--spec", "--python")),
		"dotenv":     skipOpts(fset("-e", "-c", "-v")),
		"op":         subWrap("run", fset("--env-file")),
		"doppler":    subWrap("run", fset("-p", "-c", "--project", "--config")),
		"infisical":  subWrap("run", fset("--env", "--path")),
		"aws-vault":  skipThen(fset("-d", "--duration"), 2),
		"direnv":     skipThen(nil, 2),
		"mise":       subWrap("exec", fset("-C")),
		"asdf":       subWrap("exec", nil),
		"conda":      condaWrap,
		"strace":     skipOpts(fset("-o", "-e", "-p", "-s")),
		"ltrace":     skipOpts(fset("-o", "-e", "-p")),
		"flock":      skipThen(fset("-w", "-E"), 1),
		"chroot":     skipThen(nil, 1),
		"nix-shell":  nixWrap,
	}
}

// skipOpts drops leading options (and the values of valued ones).
func skipOpts(valued flags) wrapper {
	return skipThen(valued, 0)
}

// skipThen drops leading options, then n operands (timeout's duration).
func skipThen(valued flags, n int) wrapper {
	return func(c *call, args []arg) ([]arg, bool) {
		rest := dropOpts(args, valued)
		if len(rest) < n {
			return nil, false
		}
		rest = rest[n:]
		if len(rest) > 0 && rest[0].s == "--" {
			rest = rest[1:]
		}
		return rest, len(rest) > 0
	}
}

// dropOpts removes leading options up to the first operand or "--".
func dropOpts(args []arg, valued flags) []arg {
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case s == "--":
			return args[i+1:]
		case len(s) > 1 && s[0] == '-':
			if valued[s] {
				i++
			}
		default:
			return args[i:]
		}
	}
	return nil
}

// subWrap handles "tool SUB [opts] cmd..." wrappers such as "op run --".
func subWrap(sub string, valued flags) wrapper {
	return func(c *call, args []arg) ([]arg, bool) {
		rest := dropOpts(args, valued)
		if len(rest) == 0 || rest[0].s != sub {
			return nil, false
		}
		rest = dropOpts(rest[1:], valued)
		return rest, len(rest) > 0
	}
}

func manyWrap(valued flags) wrapper {
	return func(c *call, args []arg) ([]arg, bool) {
		c.many = true
		return skipOpts(valued)(c, args)
	}
}

var xargsValued = fset("-I", "-n", "-P", "-L", "-s", "-d", "-E", "-a", "-J", "-R", "-S",
	"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines", "--replace", "--eof")

func xargsWrap(c *call, args []arg) ([]arg, bool) {
	c.many, c.xargs = true, true
	rest := dropOpts(args, xargsValued)
	if len(rest) == 0 {
		return []arg{{s: "echo"}}, true
	}
	return rest, true
}

// envWrap handles "env [-i] [-u NAME] [NAME=value]... cmd".
func envWrap(c *call, args []arg) ([]arg, bool) {
	for i := 0; i < len(args); i++ {
		s := args[i].s
		switch {
		case s == "-u" || s == "--unset" || s == "-C" || s == "--chdir":
			i++
		case s == "-S" || s == "--split-string":
			if i+1 < len(args) {
				return splitArgs(args[i+1].s, args[i+2:]), true
			}
			return nil, false
		case strings.HasPrefix(s, "-"):
		case strings.Contains(s, "=") && !strings.HasPrefix(s, "="):
			k, v, _ := strings.Cut(s, "=")
			c.env[k] = v
		default:
			return args[i:], true
		}
	}
	return nil, false
}

func splitArgs(s string, more []arg) []arg {
	var out []arg
	for _, f := range strings.Fields(s) {
		out = append(out, arg{s: f})
	}
	return append(out, more...)
}

// commandWrap: "command -v x" only looks x up; "command x" runs it.
func commandWrap(c *call, args []arg) ([]arg, bool) {
	if hasFlag(args, "-v", "-V") {
		return nil, false
	}
	rest := dropOpts(args, nil)
	return rest, len(rest) > 0
}

func condaWrap(c *call, args []arg) ([]arg, bool) {
	return subWrap("run", fset("-n", "--name", "-p", "--prefix", "--cwd"))(c, args)
}

// nixWrap: "nix-shell -p pkgs --run 'cmd'".
func nixWrap(c *call, args []arg) ([]arg, bool) {
	if code, ok := flagValue(args, "--run", "--command"); ok {
		return []arg{{s: "sh"}, {s: "-c"}, {s: code}}, true
	}
	return nil, false
}
