package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/agent"
)

// The sample repository of tine demo: a shell library whose mul is wrong.
const (
	demoCalc = `# calc.sh: a tiny arithmetic library for shell scripts.

add() { echo $(($1 + $2)); }
sub() { echo $(($1 - $2)); }
mul() { echo $(($1 * $1)); }
`
	demoTest = `#!/bin/sh
# test.sh: the library's tests; exits non-zero when one fails.
. ./calc.sh
fail=0
check() {
	if [ "$2" = "$3" ]; then echo "ok   $1"; else echo "FAIL $1: got $2, want $3"; fail=1; fi
}
check "add 2 3" "$(add 2 3)" 5
check "sub 7 4" "$(sub 7 4)" 3
check "mul 3 4" "$(mul 3 4)" 12
exit $fail
`
	demoReadme = "# calc\n\nA tiny arithmetic library for shell scripts. Run the tests with `sh test.sh`.\n"
)

// writeDemoRepo creates the sample repository in dir, as a git repository
// when git is installed.
func writeDemoRepo(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, body := range map[string]string{"calc.sh": demoCalc, "test.sh": demoTest, "README.md": demoReadme} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"},
		{"-c", "user.name=tine demo", "-c", "user.email=demo@tine.invalid", "commit", "-qm", "calc: add, sub, mul"}} {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", args[0], err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// newDemoAgent is the scripted agent of tine demo, a command agent: it
// reads its approach from TINE_APPROACH, edits the sample library
// accordingly, narrates and reports its (made-up) cost as a real one would.
func newDemoAgent(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "demo-agent",
		Short:  "The scripted agent of tine demo",
		Hidden: true,
		Args:   exactArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return demoAgent(a, os.Getenv(agent.EnvApproach))
		},
	}
}

func demoAgent(a *app, approach string) error {
	say := func(format string, args ...any) {
		fmt.Fprintf(a.stdout, format+"\n", args...)
		time.Sleep(400 * time.Millisecond)
	}
	cost := func(usd float64) { fmt.Fprintf(a.stdout, "{\"tine_cost_usd\": %g}\n", usd) }
	say("demo agent: approach %q", approach)
	say("reading calc.sh and test.sh")
	cost(0.004)
	word, _, _ := strings.Cut(approach, ":")
	switch strings.TrimSpace(word) {
	case "minimal":
		say("mul multiplies $1 by itself; it should multiply $1 by $2")
		cost(0.003)
		return editFile("calc.sh", func(s string) string { return strings.Replace(s, "$(($1 * $1))", "$(($1 * $2))", 1) })
	case "helper":
		say("introducing calc() and routing add, sub and mul through it")
		cost(0.006)
		return os.WriteFile("calc.sh", []byte(`# calc.sh: a tiny arithmetic library for shell scripts.

calc() { echo $(($1)); }
add() { calc "$1 - $2"; }
sub() { calc "$1 - $2"; }
mul() { calc "$1 * $2"; }
`), 0o644)
	case "restructure":
		say("splitting the library into lib/add.sh, lib/sub.sh, lib/mul.sh")
		cost(0.009)
		return restructure(say, cost)
	}
	say("no plan for this approach; leaving the files alone")
	return nil
}

// restructure is the long way round: a module per operation, each with a
// header, argument checks and usage text; it does fix mul.
func restructure(say func(string, ...any), cost func(float64)) error {
	if err := os.MkdirAll("lib", 0o755); err != nil {
		return err
	}
	ops := map[string]string{"add": "+", "sub": "-", "mul": "*"}
	for name, op := range ops {
		var b strings.Builder
		fmt.Fprintf(&b, "# lib/%s.sh: %s of two integers.\n#\n# Usage: %s A B\n# Prints A %s B. Both arguments must be integers.\n\n", name, name, name, op)
		fmt.Fprintf(&b, "%s() {\n\tif [ $# -ne 2 ]; then\n\t\techo \"usage: %s A B\" >&2\n\t\treturn 2\n\tfi\n", name, name)
		fmt.Fprintf(&b, "\tcase $1$2 in\n\t*[!0-9-]*)\n\t\techo \"%s: not integers: $1 $2\" >&2\n\t\treturn 2\n\t\t;;\n\tesac\n", name)
		fmt.Fprintf(&b, "\techo $(($1 %s $2))\n}\n", op)
		if err := os.WriteFile(filepath.Join("lib", name+".sh"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	say("rewriting calc.sh to load the modules")
	cost(0.011)
	return os.WriteFile("calc.sh", []byte(`# calc.sh: a tiny arithmetic library for shell scripts.
#
# The operations live in lib/, one module each; this file loads them all.

_calc_dir=$(dirname "$0")
for _calc_module in add sub mul; do
	. "${_calc_dir:-.}/lib/$_calc_module.sh"
done
unset _calc_module
`), 0o644)
}

func editFile(name string, edit func(string) string) error {
	b, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	return os.WriteFile(name, []byte(edit(string(b))), 0o644)
}
