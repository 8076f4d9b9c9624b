//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tinehq/tine/egress/egresstest"
	"github.com/tinehq/tine/netns"
	"github.com/tinehq/tine/runtime"
)

// A cell runs one command from a version, writes only its --write paths,
// reaches only its --net, and its outputs reach the source only through a
// promotion of chosen paths; a replay runs only while its inputs stand.
func TestCell_RunPromoteReplay(t *testing.T) {
	e, dir := liveWorkspace(t, false, map[string]string{"in.txt": "data\n", "connect.py": connectScript})
	port, _ := egresstest.Pong(t, "0.0.0.0:0")
	host := netns.Config{}.Gateway().String() + ":" + strconv.Itoa(port)
	script := "mkdir -p out && cat in.txt > out/result; echo x > other.txt 2>/dev/null || echo other-refused; python3 connect.py " + host
	var cell runtime.Cell
	e.okJSON(&cell, "cell", "run", "live/source", "--write", "out", "--json", "--", "sh", "-c", script)
	if got := strings.Fields(cell.Stdout); strings.Join(got, " ") != "other-refused refused" || cell.Exit != 0 {
		t.Errorf("the cell said %q (exit %d), want other-refused refused", cell.Stdout, cell.Exit)
	}
	var paths []string
	for _, ch := range cell.Changes {
		paths = append(paths, ch.Path)
	}
	if strings.Join(paths, " ") != "out out/result" || len(cell.Outside) != 0 {
		t.Errorf("the cell changed %q (outside its paths %q)", paths, cell.Outside)
	}
	if len(cell.Refused) == 0 || cell.Refused[0].Addr+":"+strconv.Itoa(int(cell.Refused[0].Port)) != host {
		t.Errorf("refused: %+v, want %s", cell.Refused, host)
	}
	var granted runtime.Cell
	e.okJSON(&granted, "cell", "run", "live/source", "--write", "out", "--net", host, "--json", "--", "python3", "connect.py", host)
	if strings.TrimSpace(granted.Stdout) != "ok" {
		t.Errorf("a cell granted %s: %q", host, granted.Stdout)
	}
	name := e.runName(cell.Run)
	if out := e.ok("cell", "promote", name, "--path", "out/result", "--dry-run"); !strings.Contains(out, "out/result") {
		t.Errorf("promote --dry-run: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Fatal("the dry run wrote into the source")
	}
	e.ok("cell", "promote", name, "--path", "out/result")
	if b, _ := os.ReadFile(filepath.Join(dir, "out", "result")); string(b) != "data\n" {
		t.Errorf("promoted: %q", b)
	}
	if r := e.tine("cell", "replay", name); r.code != exitState || !strings.Contains(r.stderr, "inputs of") {
		t.Errorf("a replay after the parent changed: %v", r)
	}
	var fromVersion runtime.Cell
	e.okJSON(&fromVersion, "cell", "run", "live/source", "--from", cell.Base, "--write", "out", "--json", "--", "sh", "-c", "test -e out/result && echo has-out || echo no-out")
	if strings.TrimSpace(fromVersion.Stdout) != "no-out" {
		t.Errorf("a cell from %s sees %q", cell.Base, fromVersion.Stdout)
	}
	e.ok("cell", "replay", e.runName(fromVersion.Run))
	var slow runtime.Cell
	e.okJSON(&slow, "cell", "run", "live/source", "--write", "out", "--ttl", "1s", "--json", "--", "sleep", "30")
	if !slow.TimedOut || slow.Seconds > 20 {
		t.Errorf("a cell past its ttl: timed out %v after %.1fs", slow.TimedOut, slow.Seconds)
	}
}

// runName is the name of run id.
func (e *env) runName(id string) string {
	e.t.Helper()
	for _, r := range e.ls() {
		if r.ID == id {
			return r.WorkspaceName + "/" + r.Name
		}
	}
	e.t.Fatalf("no run %s", id)
	return ""
}

// TestUser_CellsThroughTheSystemDaemon: a normal user's cells are made by
// the system daemon, as theirs: the command runs as the user, writes only
// its --write path, shows, replays while its inputs stand, promotes a
// chosen path through a dry run and a merge (after which a replay is
// refused: its inputs changed); a run's own capability cannot make one. Before, every cell command refused a
// normal user ("tine run does not go through the tine daemon").
func TestUser_CellsThroughTheSystemDaemon(t *testing.T) {
	e, ann, _, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	var cell runtime.Cell
	ann.okJSON(dir, &cell, "cell", "run", "source", "--write", "out", "--json", "--",
		"sh", "-c", "id -u > out/uid; echo x > src/a.txt 2>/dev/null || echo src-refused")
	if cell.Exit != 0 || strings.TrimSpace(cell.Stdout) != "src-refused" || cell.Name == "" {
		t.Fatalf("the cell: exit %d, said %q, name %q", cell.Exit, cell.Stdout, cell.Name)
	}
	if out := ann.ok(dir, "cell", "show", cell.Name); !strings.Contains(out, "cell "+cell.Name) || !strings.Contains(out, "out/uid") ||
		!strings.Contains(out, "| src-refused") {
		t.Errorf("cell show: %s", out)
	}
	var again runtime.Cell
	ann.okJSON(dir, &again, "cell", "replay", cell.Name, "--json")
	if again.Run == cell.Run || again.Exit != 0 {
		t.Errorf("replay: %+v", again)
	}
	if out := ann.ok(dir, "cell", "promote", cell.Name, "--path", "out/uid", "--dry-run"); !strings.Contains(out, "out/uid") {
		t.Errorf("promote --dry-run: %s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); err == nil {
		t.Fatal("the dry run wrote into the source")
	}
	ann.ok(dir, "cell", "promote", cell.Name, "--path", "out/uid")
	if b, _ := os.ReadFile(filepath.Join(dir, "out", "uid")); strings.TrimSpace(string(b)) != strconv.Itoa(ann.uid) {
		t.Errorf("the cell's command ran as %q, want uid %d", b, ann.uid)
	}
	if uidOf(t, filepath.Join(dir, "out", "uid")) != ann.uid {
		t.Errorf("the promoted file is not the user's")
	}
	if r := ann.tine(dir, nil, "cell", "replay", cell.Name); r.code != exitState || !strings.Contains(r.stderr, "inputs of") {
		t.Errorf("a replay after the promotion changed the source: %v", r)
	}
	r := ann.tine(dir, nil, "exec", "source", "--", "tine", "cell", "run", "source", "--write", "x", "--", "true")
	if r.code != exitUnsupported || !strings.Contains(r.stderr, "inside a run") {
		t.Errorf("a cell asked from inside a run: %v", r)
	}
	if r := e.tine("cell", "show", cell.Name); r.code != 0 || !strings.Contains(r.stdout, "out/uid") {
		t.Errorf("root (the daemon's store) does not see the user's cell: %v", r)
	}
}
