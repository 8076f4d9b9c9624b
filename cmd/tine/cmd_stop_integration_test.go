//go:build linux

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tinehq/tine/runtime"
)

// tine stop of a source whose forks run says they keep running and how
// to stop them; --all stops them too (issue 28: the forks' servers were
// left up with no hint). Its --json, and logs' and port's, are JSON.
func TestStop_SaysForksKeepRunning(t *testing.T) {
	toml := `[[service]]
name = "ticker"
command = "echo up; while :; do sleep 0.1; done"
`
	e, _ := liveWorkspace(t, false, map[string]string{"tine.toml": toml})
	e.ok("start", "source")
	e.ok("fork", "source", "-n", "2")
	for _, f := range []string{"source-1", "source-2"} {
		if ps := e.ps(f); ps.State != runtime.ProcRunning {
			t.Fatalf("fork %s of a running source: %s", f, ps.State)
		}
	}
	r := e.tine("stop", "source")
	if r.code != 0 || !strings.Contains(r.stderr, "forks of source keep running: source-1, source-2") || !strings.Contains(r.stderr, "tine stop --all source") {
		t.Errorf("tine stop source: want the running forks named\n%v", r)
	}
	if ps := e.ps("source-1"); ps.State != runtime.ProcRunning {
		t.Errorf("tine stop source stopped its fork: %s", ps.State)
	}
	var logs []logLine
	for _, line := range strings.Split(strings.TrimSpace(e.ok("logs", "source-1", "--json")), "\n") {
		var l logLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("tine logs --json: %q: %v", line, err)
		}
		logs = append(logs, l)
	}
	if len(logs) == 0 || logs[0].Service != "ticker" {
		t.Errorf("tine logs --json: %+v", logs)
	}
	var ports portJSON
	e.okJSON(&ports, "port", "source-1", "--json")
	if ports.Run != "source-1" || ports.Ports == nil {
		t.Errorf("tine port --json: %+v", ports)
	}
	var stopped []jsonRun
	e.okJSON(&stopped, "stop", "source", "--all", "--json")
	if len(stopped) != 3 {
		t.Errorf("tine stop --all: stopped %+v, want the source and its 2 forks", stopped)
	}
	for _, f := range []string{"source-1", "source-2"} {
		if ps := e.ps(f); ps.State != runtime.ProcStopped {
			t.Errorf("after stop --all, %s is %s", f, ps.State)
		}
	}
}
