package main

import (
	"io"
	"strings"
	"testing"
)

// tine --help lists the commands under headings, in commandGroups' order,
// and every command that is not hidden is under one of them.
func TestHelp_Groups(t *testing.T) {
	out, _, code := runCLI("--help")
	if code != 0 {
		t.Fatalf("tine --help: exit %d", code)
	}
	at := -1
	for _, g := range commandGroups {
		i := strings.Index(out, "\n"+g.title+"\n")
		if i < at {
			t.Errorf("heading %q missing or out of order in\n%s", g.title, out)
		}
		at = i
	}
	if strings.Contains(out, "Additional Commands") {
		t.Errorf("commands under no heading:\n%s", out)
	}
	root := newRoot(io.Discard, io.Discard)
	for _, c := range root.Commands() {
		if !c.Hidden && c.GroupID == "" && c.Name() != "help" {
			t.Errorf("tine %s is under no heading", c.Name())
		}
	}
}

// -v is not --version (kubectl's and gh's way); one spelling per flag:
// fork-run's -n is -n/--copies as fork's, its old --n still accepted.
func TestFlags_OneSpelling(t *testing.T) {
	if _, errOut, code := runCLI("-v"); code != exitUsage || !strings.Contains(errOut, "unknown flag -v") {
		t.Errorf("tine -v: exit %d %q, want refused", code, errOut)
	}
	root := newRoot(io.Discard, io.Discard)
	for _, name := range []string{"fork", "fork-run", "fork-self"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if f := c.Flags().Lookup("copies"); f == nil || f.Shorthand != "n" {
			t.Errorf("tine %s: no -n/--copies", name)
		}
	}
	c, _, _ := root.Find([]string{"fork-run"})
	if err := c.Flags().Parse([]string{"--n", "2"}); err != nil || !c.Flags().Changed("copies") {
		t.Errorf("fork-run --n 2: %v, want it read as --copies", err)
	}
}
