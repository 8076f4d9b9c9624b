package forkrun

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// callerCalls are the calls that answer for this process, not for the
// caller a request is made for: through the system daemon they would give
// the daemon's environment, uid, PATH or directory.
var callerCalls = map[string]bool{
	"os.Getenv": true, "os.LookupEnv": true, "os.Environ": true, "os.Geteuid": true,
	"os.Getuid": true, "os.Getgid": true, "os.Getwd": true, "os.UserHomeDir": true,
	"exec.LookPath": true,
}

// processOwn are the uses that ask about this process on purpose, each
// with why, as "file:function". Anything else is a decision made for a
// caller from the daemon's own identity.
var processOwn = map[string]string{
	"engine/backend.go:probeCached":    "the key of a cache of probed backends: this process's uid decides what it can mount",
	"engine/fault.go:faultPoint":       "the crash tests' injection point, read from the test's environment",
	"engine/init.go:Init":              "the owner when no caller is given (InitOptions.Owner nil): a local CLI's own user",
	"engine/init.go:checkOwnsDir":      "whether the caller is this process itself",
	"engine/owner.go:OwnerIDs":         "whether this process must hand files to the owner (it runs as root and is not the owner)",
	"engine/owner.go:GiveGitToOwner":   "whether this process must hand files to the owner (it runs as root)",
	"engine/resolve.go:workspaceOfCwd": "a local CLI's own directory; the daemon's clients resolve theirs before sending (cmd/tine/remote.go)",
	"forkrun/run.go:Start":             "whether this process can drive supervisors (root), not a caller's decision",
	"forkrun/session.go:agentEnviron":  "the environment when no caller sent one: a local CLI's own",
	"agent/claudesession.go:envHome":   "a local CLI's home when the caller's environment has no HOME",
}

// TestCallerContext_NoDaemonIdentity is issue 25's guard: engine, forkrun
// and agent make every decision for a caller from the caller context the
// edge resolved (Options.BaseEnv, the PATH passed to agent.Check, the
// workspace's owner), never from the daemon's own environment, uid or
// PATH. A new call of os.Getenv, os.Geteuid, exec.LookPath and the like
// there fails this test until it is moved to that context or listed above
// with why it asks about this process.
func TestCallerContext_NoDaemonIdentity(t *testing.T) {
	seen := map[string]bool{}
	var bad []string
	for _, pkg := range []string{"engine", "forkrun", "agent"} {
		files, err := filepath.Glob(filepath.Join("..", pkg, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			for _, use := range callerUses(t, f) {
				key := pkg + "/" + filepath.Base(f) + ":" + use.fn
				if _, ok := processOwn[key]; ok {
					seen[key] = true
					continue
				}
				bad = append(bad, key+" calls "+use.call)
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("%s: a decision for the caller from the daemon's own identity; use the caller context", b)
	}
	for key := range processOwn {
		if !seen[key] {
			t.Errorf("%s is listed as asking about this process but no longer does: remove it from processOwn", key)
		}
	}
}

type callerUse struct{ fn, call string }

// callerUses lists the calls of callerCalls in file, with the function
// (or method) each is in.
func callerUses(t *testing.T, file string) []callerUse {
	t.Helper()
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseFile(token.NewFileSet(), file, src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []callerUse
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && callerCalls[id.Name+"."+sel.Sel.Name] {
				out = append(out, callerUse{fn: fd.Name.Name, call: id.Name + "." + sel.Sel.Name})
			}
			return true
		})
	}
	return out
}
