//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/testkit"
)

// TestForkRun_IdleByproducts is issue 26's "a test
// run's byproducts are the fork's work": an agent that only runs ls, in a
// Python repository (no git: the filesystem scope), a Node one and a Go
// one (git, with and without ignores) whose passing tests write caches,
// bytecode and coverage data. Every view says "no changes", never ready.
// Before, summary said "changes: 5 file(s)", "ready: yes" and "own
// tests: prove nothing (…pyc pass on the fork point already)".
func TestForkRun_IdleByproducts(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	for _, c := range []struct {
		name, test string
		git        bool
		files      map[string]string
	}{
		{"python", "env -u PYTHONDONTWRITEBYTECODE python3 -m unittest -q && test -d tests/__pycache__", false, map[string]string{
			"calc.py":            "def add(a, b):\n    return a + b\n",
			"tests/__init__.py":  "",
			"tests/test_calc.py": "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n",
		}},
		{"node", "node test.js", true, map[string]string{
			"index.js": "module.exports = (a, b) => a + b\n",
			"test.js": "const fs = require('fs'); fs.mkdirSync('node_modules/.cache/t', {recursive: true});\n" +
				"fs.writeFileSync('node_modules/.cache/t/run.json', String(Date.now()));\n" +
				"if (require('./index.js')(1, 2) !== 3) process.exit(1)\n",
		}},
		{"go", "go test -count=1 -coverprofile=cover.out ./... && mkdir -p .pytest_cache && date > .pytest_cache/x", true, map[string]string{
			".gitignore":   "*.out\n",
			"go.mod":       "module calc\n\ngo 1.21\n",
			"calc.go":      "package calc\n\nfunc Add(a, b int) int { return a + b }\n",
			"calc_test.go": "package calc\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			dir := e.workspaceDir(c.name)
			writeTestFiles(t, dir, c.files)
			if c.git {
				hostSh(t, dir, "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init")
			}
			e.ok("init", dir)
			script := filepath.Join(publicDir(t), "agent.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\nls -la\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			rep, r := e.forkRunJSON(c.name+"/source", "-n", "1", "--prompt", "p", "--agent-cmd", script,
				"--test", c.test, "--merge-mode", "manual")
			f := rep.Forks[0]
			if f.Test == nil || !f.Test.Passed {
				t.Fatalf("the tests did not pass in the fork: %+v\n%v", f.Test, r)
			}
			if f.FilesChanged != 0 || f.Ready || f.NotReady != forkrun.NoChanges {
				t.Errorf("the idle fork: %d file(s), ready %v %q", f.FilesChanged, f.Ready, f.NotReady)
			}
			if f.Evidence != nil && len(f.Evidence.TestFiles) > 0 {
				t.Errorf("the idle fork's tests: %v", f.Evidence.TestFiles)
			}
			out := e.ok("summary", f.Name)
			if !strings.Contains(out, "changes:   0 file(s)") || !strings.Contains(out, "ready:     no: no changes") ||
				strings.Contains(out, "own tests") {
				t.Errorf("summary of the idle fork:\n%s", out)
			}
			var cmp engine.Comparison
			e.okJSON(&cmp, "compare", rep.Group, "--json")
			if s := cmp.Forks[0]; s.Changed != 0 || s.Ready {
				t.Errorf("compare: %d file(s), ready %v", s.Changed, s.Ready)
			}
		})
	}
}

// TestForkRun_ReadyMeansOneThing is issue 26's "ready means two things":
// a fork whose tests failed is not ready in compare (its table and its
// JSON) as in summary, though it merges cleanly (merges_cleanly says
// that alone). Before, compare said ready.
func TestForkRun_ReadyMeansOneThing(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"A": "a\n"})
	hostSh(t, ws, "git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm init")
	e.ok("init", ws)
	script := filepath.Join(publicDir(t), "agent.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho b > B\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	rep, _ := e.forkRunJSON("source", "-n", "1", "--prompt", "p", "--agent-cmd", script, "--test", "false", "--merge-mode", "manual")
	f := rep.Forks[0]
	if f.Ready || f.NotReady != "tests failed" || !f.MergeClean {
		t.Fatalf("fork-run: ready %v %q, merge clean %v", f.Ready, f.NotReady, f.MergeClean)
	}
	var cmp engine.Comparison
	e.okJSON(&cmp, "compare", rep.Group, "--json")
	if s := cmp.Forks[0]; s.Ready || s.NotReady != "tests failed" || !s.MergesCleanly || s.Changed != 1 {
		t.Errorf("compare --json: ready %v %q, merges cleanly %v, %d file(s)", s.Ready, s.NotReady, s.MergesCleanly, s.Changed)
	}
	if out := e.ok("compare", rep.Group); !strings.Contains(out, "false") || !strings.Contains(out, "tests failed") {
		t.Errorf("compare:\n%s", out)
	}
	if out := e.ok("summary", f.Name); !strings.Contains(out, "ready:     no: tests failed") {
		t.Errorf("summary:\n%s", out)
	}
}
