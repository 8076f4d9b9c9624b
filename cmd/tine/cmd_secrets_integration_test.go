//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A fork gets none of its parent's secrets: not the variables [secrets]
// and the defaults name (but those it inherits, the agents' keys), not the
// secret files (empty in the fork, untouched in its files); the start
// event says which it had. The source keeps its own. A live fork of a
// process holding a secret is refused.
func TestSecrets_ForksDoNotGetThem(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(secretFile, []byte("private key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	toml := "[secrets]\nenv = [\"MY_SECRET\"]\nfiles = [\".env\", " + strconv.Quote(secretFile) + "]\n" +
		"[[service]]\nname = \"idle\"\ncommand = \"exec sleep 1000\"\n"
	e, _ := liveWorkspace(t, false, map[string]string{"tine.toml": toml, ".env": "DB_URL=postgres://secret\n"})
	e.vars = append(e.vars, "GITHUB_TOKEN=ghp_x", "MY_SECRET=s", "ANTHROPIC_API_KEY=k", "PLAIN=p")
	script := `echo "[$GITHUB_TOKEN][$MY_SECRET][$ANTHROPIC_API_KEY][$PLAIN]"; cat .env ` + secretFile
	if got := e.execSh("source", script); got != "[ghp_x][s][k][p]\nDB_URL=postgres://secret\nprivate key\n" {
		t.Errorf("the source's own secrets: %q", got)
	}
	e.ok("fork", "source")
	if got := e.execSh("source-1", script); got != "[][][k][p]\n" {
		t.Errorf("in the fork: %q, want no secret variable but the inherited one, and empty secret files", got)
	}
	if out := e.ok("diff", "source-1"); strings.Contains(out, ".env") {
		t.Errorf("hiding .env changed the fork's files:\n%s", out)
	}
	var evs []jsonEvent
	e.okJSON(&evs, "log", "source-1", "--json")
	var start struct {
		Secrets struct {
			Withheld  []string `json:"withheld"`
			Inherited []string `json:"inherited"`
			Hidden    []string `json:"hidden_files"`
		} `json:"secrets"`
	}
	for _, ev := range evs {
		if ev.Kind == "start" {
			json.Unmarshal(ev.Detail, &start)
		}
	}
	s := start.Secrets
	if !slices.Contains(s.Withheld, "GITHUB_TOKEN") || !slices.Contains(s.Withheld, "MY_SECRET") ||
		!slices.Equal(s.Inherited, []string{"ANTHROPIC_API_KEY"}) || !slices.Contains(s.Hidden, secretFile) {
		t.Errorf("the fork's start event says %+v", s)
	}
	// The source's service holds GITHUB_TOKEN: a live fork would copy it.
	e.ok("start", "source")
	r := e.tine("fork", "source", "--live=ptrace")
	if r.code != exitState || !strings.Contains(r.stderr, "holds the secret GITHUB_TOKEN") {
		t.Errorf("a live fork of a process holding a secret: %v", r)
	}
	if rows := e.ls(); len(rows) != 2 {
		t.Errorf("the refused live fork left runs behind: %+v", rows)
	}
}
