//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/testkit"
)

func TestExportAndEvents(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	dir := e.workspaceDir("rep")
	hostSh(t, dir, "echo base > a.txt")
	e.ok("init", dir)
	var fr engine.ForkResult
	e.okJSON(&fr, "fork", "rep/source", "-n", "2", "--approach", "minimal | <b>bold</b>", "--approach", "none", "--json")
	e.execSh("rep/source-1", "echo changed > a.txt")

	md := e.ok("export", fr.Group.ID)
	for _, want := range []string{"# tine: group " + fr.Group.ID, "| source-1 ★ |", `minimal \| &lt;b&gt;bold&lt;/b&gt;`, "**Recommended:** source-1", "- `a.txt` modified"} {
		if !strings.Contains(md, want) {
			t.Errorf("export md lacks %q:\n%s", want, md)
		}
	}
	var rep engine.GroupReport
	e.okJSON(&rep, "export", fr.Group.ID, "--format", "json")
	if rep.Comparison.Recommended != fr.Forks[0].ID || len(rep.Forks) != 2 || len(rep.Forks[0].Changes) != 1 {
		t.Errorf("export json: %+v", rep)
	}
	if r := e.tine("export", fr.Group.ID, "--format", "pdf"); r.code != 2 {
		t.Errorf("--format pdf: %v", r)
	}

	out := e.ok("events", "rep", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last struct {
		Seq  int64  `json:"seq"`
		Kind string `json:"kind"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Seq == 0 {
		t.Fatalf("events --json: %v %q", err, lines[len(lines)-1])
	}
	follow := exec.Command(tineBin, "events", "rep", "--follow", "--after", strconv.FormatInt(last.Seq, 10))
	follow.Env = e.vars
	stdout, _ := follow.StdoutPipe()
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { follow.Process.Kill(); follow.Wait() }()
	got := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			got <- sc.Text()
		}
	}()
	e.ok("checkpoint", "rep/source-2", "--label", "followed")
	select {
	case line := <-got:
		if !strings.Contains(line, "rep/source-2") || !strings.Contains(line, "checkpoint") {
			t.Errorf("events --follow printed %q", line)
		}
	case <-time.After(10 * time.Second):
		t.Error("events --follow printed nothing after a checkpoint")
	}
}
