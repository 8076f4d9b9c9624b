package classify

import (
	"strings"
)

func fileTools() {
	register(map[string]handler{
		"rm":        rmTool,
		"rmdir":     func(c *call) finding { return rev("rmdir removes empty directories") },
		"unlink":    func(c *call) finding { return c.w.removal("unlink", positionals(c.args, nil), false) },
		"shred":     shredTool,
		"srm":       shredTool,
		"truncate":  truncateTool,
		"cp":        cpTool,
		"mv":        mvTool,
		"find":      findTool,
		"dd":        ddTool,
		"chmod":     permTool,
		"chown":     permTool,
		"chgrp":     permTool,
		"mkdir":     func(c *call) finding { return rev("mkdir creates directories") },
		"touch":     func(c *call) finding { return rev("touch creates or updates files") },
		"ln":        func(c *call) finding { return rev("ln creates links") },
		"tar":       func(c *call) finding { return rev("tar packs or unpacks files") },
		"unzip":     func(c *call) finding { return rev("unzip unpacks files") },
		"zip":       func(c *call) finding { return rev("zip packs files") },
		"patch":     func(c *call) finding { return rev("patch edits files") },
		"install":   func(c *call) finding { return rev("install copies files") },
		"rsync":     rsyncTool,
		"scp":       scpTool,
		"sftp":      func(c *call) finding { return ext("sftp transfers files to a remote host") },
		"ftp":       func(c *call) finding { return ext("ftp transfers files to a remote host") },
		"ssh":       sshTool,
		"mosh":      sshTool,
		"kill":      func(c *call) finding { return rev("kill stops processes") },
		"pkill":     func(c *call) finding { return rev("pkill stops processes") },
		"killall":   func(c *call) finding { return rev("killall stops processes") },
		"trash":     func(c *call) finding { return rev("trash moves files to the trash") },
		"trash-put": func(c *call) finding { return rev("trash moves files to the trash") },
	})
	for _, n := range []string{"mkfs", "mkfs.ext4", "mkfs.xfs", "mkfs.vfat", "mkfs.btrfs", "fdisk", "parted", "wipefs", "diskutil", "format"} {
		tools[n] = func(c *call) finding { return denyf(c.name + " formats or repartitions a disk") }
	}
	for _, n := range []string{"shutdown", "reboot", "halt", "poweroff"} {
		tools[n] = func(c *call) finding { return denyf(c.name + " stops the machine") }
	}
}

// rmTool: unbounded targets are denied, recursive removal of anything but
// regenerable output is destructive cleanup, a few named files are small.
func rmTool(c *call) finding {
	if hasFlag(c.args, "--no-preserve-root") {
		return denyf("rm --no-preserve-root")
	}
	recursive := hasShort(c.args, 'r') || hasShort(c.args, 'R') || hasFlag(c.args, "--recursive")
	ops := positionals(c.args, nil)
	if len(ops) == 0 && c.xargs {
		return irr("rm over a list of files from stdin", DestructiveCleanup)
	}
	if len(ops) == 0 {
		return ro("rm with no operands")
	}
	return c.w.removal("rm", ops, recursive || c.many)
}

func shredTool(c *call) finding {
	return c.w.removal(c.name, positionals(c.args, fset("-n", "-s", "--iterations", "--size")), true)
}

// truncateTool: "truncate -s 0 f" empties f; other sizes just resize.
func truncateTool(c *call) finding {
	size, _ := flagValue(c.args, "-s", "--size")
	ops := positionals(c.args, fset("-s", "--size", "-r", "--reference"))
	if size == "0" || size == "0K" || size == "0M" || strings.HasPrefix(size, "-") {
		return c.w.removal("truncate -s "+size, ops, true)
	}
	return rev("truncate resizes " + strings.Join(strs(ops), " "))
}

func cpTool(c *call) finding {
	ops := positionals(c.args, fset("-t", "--target-directory", "-S", "--suffix"))
	if len(ops) == 2 && ops[0].s == "/dev/null" {
		return c.w.removal("cp /dev/null truncates", ops[1:], true)
	}
	if len(ops) > 0 && isBlockDevice(ops[len(ops)-1].s) {
		return denyf("cp writes to the device " + ops[len(ops)-1].s)
	}
	return rev("cp copies files")
}

func mvTool(c *call) finding {
	ops := positionals(c.args, fset("-t", "--target-directory", "-S", "--suffix"))
	for _, o := range ops[:max(len(ops)-1, 0)] {
		if pathClass(o, c.w.cwdWild) == pathUnbounded {
			return denyf("mv moves " + quoteArg(o.s))
		}
	}
	if len(ops) > 0 && ops[len(ops)-1].s == "/dev/null" {
		return c.w.removal("mv to /dev/null", ops[:len(ops)-1], true)
	}
	return rev("mv moves files")
}

// findTool: -delete and -exec make find a removal or a batch command.
func findTool(c *call) finding {
	roots := findRoots(c.args)
	if hasFlag(c.args, "-delete") {
		f := c.w.removal("find -delete under", roots, true)
		if f.scope == IrreversibleLocal && !f.deny && findsRegenerable(c.args) {
			return rev("find -delete removes regenerable files")
		}
		return f
	}
	for i, a := range c.args {
		switch a.s {
		case "-exec", "-execdir", "-ok", "-okdir":
			c.runExec(c.args[i+1:], roots)
			return ro("find lists files")
		}
	}
	return ro("find lists files")
}

func findRoots(args []arg) []arg {
	var roots []arg
	for _, a := range args {
		if strings.HasPrefix(a.s, "-") || a.s == "(" || a.s == "!" {
			break
		}
		roots = append(roots, a)
	}
	if len(roots) == 0 {
		roots = []arg{{s: "."}}
	}
	return roots
}

// foundName is a stand-in for the files find passes to -exec: its -name
// pattern, or "x".
func foundName(args []arg) string {
	if v, ok := flagValue(args, "-name", "-iname"); ok && !strings.Contains(v, "/") {
		return v
	}
	return "x"
}

func findsRegenerable(args []arg) bool {
	v, ok := flagValue(args, "-name", "-iname")
	return ok && (regenerable[v] || isRegenerable(v))
}

// runExec classifies find's -exec command, run once per found file. An
// unbounded root makes a removal unbounded.
func (c *call) runExec(args []arg, roots []arg) {
	var argv []arg
	for _, a := range args {
		if a.s == ";" || a.s == "+" {
			break
		}
		if a.s == "{}" {
			a = roots[0]
			if pathClass(a, c.w.cwdWild) != pathUnbounded {
				a.s += "/" + foundName(c.args)
			}
		}
		argv = append(argv, a)
	}
	n := *c
	n.many = true
	n.sub(argv)
}

func ddTool(c *call) finding {
	for _, a := range c.args {
		if of, ok := strings.CutPrefix(a.s, "of="); ok && isBlockDevice(of) {
			return denyf("dd writes to the device " + of)
		}
	}
	return rev("dd copies data")
}

// permTool: recursive permission changes over unbounded paths are denied.
func permTool(c *call) finding {
	ops := positionals(c.args, fset("--reference"))
	if hasShort(c.args, 'R') || hasFlag(c.args, "--recursive") {
		for _, o := range tail(ops) {
			if pathClass(o, c.w.cwdWild) == pathUnbounded {
				return denyf(c.name + " -R on " + quoteArg(o.s))
			}
		}
	}
	return rev(c.name + " changes permissions")
}

// remoteSpec reports whether s names a remote path ("host:path",
// "user@host:path", "rsync://...").
func remoteSpec(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	i := strings.IndexByte(s, ':')
	return i > 1 && !strings.Contains(s[:i], "/")
}

func rsyncTool(c *call) finding {
	ops := positionals(c.args, fset("-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--exclude-from", "--include-from", "--files-from", "--chmod", "--rsync-path", "--port", "--password-file", "--log-file", "--backup-dir", "--suffix", "-T", "--temp-dir"))
	if len(ops) > 0 && remoteSpec(ops[len(ops)-1].s) {
		return dryRun(c, ext("rsync copies to a remote host"))
	}
	if hasFlag(c.args, "--delete", "--delete-after", "--delete-before", "--delete-during", "--delete-excluded", "--remove-source-files") {
		return dryRun(c, c.w.removal("rsync --delete in", ops[max(len(ops)-1, 0):], true))
	}
	return rev("rsync copies files")
}

func scpTool(c *call) finding {
	ops := positionals(c.args, fset("-P", "-i", "-o", "-F", "-c", "-l", "-S", "-J"))
	if len(ops) > 0 && remoteSpec(ops[len(ops)-1].s) {
		return ext("scp copies to a remote host")
	}
	return rev("scp copies from a remote host")
}

func sshTool(c *call) finding {
	if hasFlag(c.args, "-V", "-G") {
		return ro("ssh prints its configuration")
	}
	return ext(c.name + " runs commands on a remote host")
}
