//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/tinehq/tine/internal/testkit"
)

// noJSON are the commands that print no data of their own: they pass a
// command's terminal through (exec, shell), serve a protocol (serve, mcp,
// hook, demo-agent), narrate (demo), write a shell's script, or only say
// where they went (controller, now tine-controller).
var noJSON = map[string]bool{
	"exec": true, "shell": true, "serve": true, "mcp": true, "hook": true, "demo": true, "demo-agent": true,
	"controller": true, "completion": true, "help": true,
}

// leafCommands are root's commands that run (not those that only group
// others).
func leafCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, c := range root.Commands() {
		if noJSON[c.Name()] {
			continue
		}
		if c.HasSubCommands() {
			out = append(out, leafCommands(c)...)
			continue
		}
		out = append(out, c)
	}
	return out
}

// Every command that prints takes --json, and prints valid JSON with it:
// its data on stdout, or its error as one object on stderr (here, with
// nothing under management, mostly errors; the commands that succeed on
// an empty state directory print [] or an object). Each runs in an empty
// scratch directory, never in the source tree.
func TestEveryCommand_JSON(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	scratch := e.workspaceDir("scratch")
	root := newRoot(io.Discard, io.Discard)
	for _, c := range leafCommands(root) {
		path := strings.Fields(cmdPath(c))
		if c.Flags().Lookup("json") == nil {
			t.Errorf("tine %s has no --json", cmdPath(c))
			continue
		}
		args := append(path, "--json")
		switch {
		case path[0] == "setup" || path[0] == "gc":
			continue // they change the machine (a systemd unit, other runs' leftovers)
		case path[0] == "init":
			args = []string{"init", filepath.Join(scratch, "missing"), "--json"}
		case strings.Contains(c.Use, " ") && !strings.HasPrefix(strings.SplitN(c.Use, " ", 2)[1], "["):
			args = append(path, "x", "--json") // a required argument
		}
		r := e.run(call{dir: scratch}, args...)
		for name, s := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
			if s != "" && !validJSONStream(s) {
				t.Errorf("tine %s: %s is not JSON: %q", strings.Join(args, " "), name, s)
			}
		}
		if r.stdout == "" && r.stderr == "" && r.code != 0 {
			t.Errorf("tine %s: exit %d and nothing printed", strings.Join(args, " "), r.code)
		}
	}
}

// validJSONStream reports whether s is one JSON value or JSON Lines.
func validJSONStream(s string) bool {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	for {
		var v any
		if err := dec.Decode(&v); err == io.EOF {
			return true
		} else if err != nil {
			return false
		}
	}
}
