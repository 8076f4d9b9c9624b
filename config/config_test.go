package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tinehq/tine"
)

func TestParse(t *testing.T) {
	c, err := Parse(`
[network]
isolate = true

[limits]
memory = "512M"
cpu = 1.5
pids = 256

[[service]]
name = "web"
command = "python3 -m http.server 3000"
cwd = "site"
env = { PORT = "3000" }
ready = { port = 3000, timeout = "5s" }
restart = "on-failure"

[[service]]
name = "worker"
command = "./worker"
`)
	if err != nil {
		t.Fatal(err)
	}
	if !c.Network.Isolate || c.Limits.CPU != 1.5 || c.Limits.Pids != 256 {
		t.Errorf("network/limits: %+v %+v", c.Network, c.Limits)
	}
	if n, _ := c.Limits.MemoryBytes(); n != 512<<20 {
		t.Errorf("memory = %d", n)
	}
	if len(c.Services) != 2 {
		t.Fatalf("%d services", len(c.Services))
	}
	web, ok := c.Service("web")
	if !ok || web.Cwd != "site" || web.Env["PORT"] != "3000" || web.Ready.Port != 3000 ||
		web.ReadyTimeout() != 5*time.Second || web.Restart != RestartOnFailure {
		t.Errorf("web = %+v", web)
	}
	w, _ := c.Service("worker")
	if w.Restart != RestartNo || w.ReadyTimeout() != DefaultReadyTimeout {
		t.Errorf("worker defaults = %+v", w)
	}
}

func TestParse_Errors(t *testing.T) {
	for doc, want := range map[string]string{
		`[[service]]` + "\n" + `name = "a"`:                                                      "no command",
		`[[service]]` + "\n" + `name = "a b"` + "\n" + `command = "x"`:                           "service name",
		"[[service]]\nname = \"a\"\ncommand = \"x\"\n[[service]]\nname = \"a\"\ncommand = \"y\"": "declared twice",
		"[[service]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"../up\"":                            "relative path inside",
		"[[service]]\nname = \"a\"\ncommand = \"x\"\nrestart = \"sometimes\"":                    "restart",
		"[[service]]\nname = \"a\"\ncommand = \"x\"\nready = { port = 1, command = \"y\" }":      "not both",
		"[[service]]\nname = \"a\"\ncommand = \"x\"\nready = { port = 70000 }":                   "out of range",
		"[[service]]\nname = \"a\"\ncommand = \"x\"\nready = { timeout = \"soon\" }":             "soon",
		"[[service]]\nname = \"a\"\ncomand = \"x\"":                                              "unknown key",
		"[limits]\nmemory = \"lots\"":                                                            "limits.memory",
		"[limits]\ncpu = -1":                                                                     "negative",
		"[network\nisolate = true":                                                               "",
	} {
		_, err := Parse(doc)
		if err == nil || !errors.Is(err, tine.ErrInvalid) || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an invalid error containing %q", doc, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): error spans lines: %q", doc, err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(dir)
	if err != nil || len(c.Services) != 0 || c.Network.Isolate {
		t.Fatalf("missing file: %+v, %v", c, err)
	}
	os.WriteFile(filepath.Join(dir, FileName), []byte("[network]\nisolate = 1\n"), 0o644)
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), FileName) {
		t.Errorf("bad file: %v", err)
	}
}
