package config

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
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
	if len(c.Warnings) != 0 {
		t.Errorf("warnings: %v", c.Warnings)
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
	for _, tt := range []struct{ doc, want string }{
		{"[[service]]\nname = \"a\"", `tine.toml:1: service "a" has no command`},
		{"[[service]]\nname = \"a b\"\ncommand = \"x\"", "tine.toml:2: service name"},
		{"[[service]]\nname = \"a\"\ncommand = \"x\"\n[[service]]\nname = \"a\"\ncommand = \"y\"", `tine.toml:5: service "a" declared twice`},
		{"[[service]]\nname = \"a\"\ncommand = \"x\"\ncwd = \"../up\"", `tine.toml:4: service "a": cwd "../up" must be a relative path inside`},
		{"[[service]]\nname = \"a\"\ncommand = \"x\"\nrestart = \"sometimes\"", `tine.toml:4: service "a": restart`},
		{"[[service]]\nname = \"a\"\ncommand = \"x\"\nready = { port = 1, command = \"y\" }", `tine.toml:4: service "a": give ready.port or ready.command, not both`},
		{"[[service]]\nname = \"a\"\ncommand = \"x\"\nready = { port = 70000 }", `tine.toml:4: service "a": ready port 70000 out of range`},
		{"[[service]]\nname = \"a\"\ncommand = \"x\"\nready = { timeout = \"soon\" }", `tine.toml:4: service.ready.timeout: time: invalid duration "soon"`},
		{"[[service]]\nname = \"a\"\ncommand = 1", "tine.toml:3: service.command: incompatible types"},
		{"[limits]\nmemory = \"lots\"", "tine.toml:2: limits.memory"},
		{"[limits]\ncpu = -1", "tine.toml:2: limits must not be negative"},
		{"[limits]\ncpu = 1\npids = -1", "tine.toml:3: limits must not be negative"},
		{"[network]\nisolate = 1", "tine.toml:2: network.isolate: incompatible types"},
		{"# syntax\n\n[network\nisolate = true", "tine.toml:3: expected '.' or ']' to end table name"},
		{"a = 1\nb = 2\na = 3\n", "tine.toml:3: a: Key 'a' has already been defined: "},
		{"x = \"\"\"\nno end", "tine.toml:"},
		{"[fork]\nenabled = true\nenabled = false", "tine.toml:3: "},
	} {
		_, err := Parse(tt.doc)
		if err == nil || !errors.Is(err, tine.ErrInvalid) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want an invalid error starting %q", tt.doc, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Parse(%q): error spans lines: %q", tt.doc, err)
		}
	}
}

// TestParse_UnknownKeys checks that keys tine does not know are warnings
// naming their line, wherever they are, and that the rest still counts.
func TestParse_UnknownKeys(t *testing.T) {
	for _, tt := range []struct {
		name, doc string
		want      []string
	}{
		{"TopLevel", "verbose = true\n[network]\nisolate = true", []string{`tine.toml:1: unknown key "verbose" (ignored)`}},
		{"Table", "\n[forks]\nx = 1\ny = { z = 2 }", []string{`tine.toml:2: unknown key "forks" (ignored)`}},
		{"Network", "[network]\nisolate = true\nisolated = true", []string{`tine.toml:3: unknown key "network.isolated" (ignored)`}},
		{"Limits", "[limits]\ncpu = 1\nmem = \"1G\"", []string{`tine.toml:3: unknown key "limits.mem" (ignored)`}},
		{"Service", "[[service]]\nname = \"a\"\ncomand = \"x\"\ncommand = \"x\"", []string{`tine.toml:3: unknown key "service.comand" (ignored)`}},
		{"SecondService", "[[service]]\nname = \"a\"\ncommand = \"x\"\nx = 1\n\n[[service]]\nname = \"b\"\ncommand = \"y\"\nx = 2", []string{
			`tine.toml:4: unknown key "service.x" (ignored)`,
			`tine.toml:9: unknown key "service.x" (ignored)`,
		}},
		{"InlineTable", "[[service]]\nname = \"a\"\ncommand = \"x\"\nready = { port = 1, prot = 2 }", []string{`tine.toml:4: unknown key "service.ready.prot" (ignored)`}},
		{"Dotted", "network.isolate = true\nnetwork.isolat = true", []string{`tine.toml:2: unknown key "network.isolat" (ignored)`}},
		{"Quoted", "[network]\n\"iso late\" = 1", []string{`tine.toml:2: unknown key "network.\"iso late\"" (ignored)`}},
		{"AfterMultilineString", "[[service]]\nname = \"a\"\ncommand = \"\"\"\n[limits]\nfoo = 1\n\"\"\"\nfoo = 1", []string{`tine.toml:7: unknown key "service.foo" (ignored)`}},
		{"CRLF", "[network]\r\nisolate = true\r\n\r\nextra = 1\r\n", []string{`tine.toml:4: unknown key "network.extra" (ignored)`}},
		{"Fork", "[fork]\nmax_branch = 3", []string{`tine.toml:2: unknown key "fork.max_branch" (ignored)`}},
		{"Agent", "[agent.claude]\nmodle = \"x\"", []string{`tine.toml:2: unknown key "agent.claude.modle" (ignored)`}},
		{"Judge", "[judge]\nkind = \"llm\"\n[judge.llm]\nmodel = \"m\"\nkey = \"k\"", []string{
			`tine.toml:2: unknown key "judge.kind" (ignored)`,
			`tine.toml:5: unknown key "judge.llm.key" (ignored)`,
		}},
		{"Account", "[[account]]\nname = \"a\"\nenv = { K = \"v\" }\n[[account]]\nname = \"b\"\nenv = { K = \"v\" }\nenvs = 1", []string{`tine.toml:7: unknown key "account.envs" (ignored)`}},
		{"Several", "a = 1\n[fork]\nb = 2\n[network]\nc = 3", []string{
			`tine.toml:1: unknown key "a" (ignored)`,
			`tine.toml:3: unknown key "fork.b" (ignored)`,
			`tine.toml:5: unknown key "network.c" (ignored)`,
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.doc)
			if err != nil {
				t.Fatal(err)
			}
			if got := warnings(c); !slices.Equal(got, tt.want) {
				t.Errorf("warnings:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
	c, _ := Parse("[network]\nisolate = true\nisolated = false")
	if !c.Network.Isolate {
		t.Error("an unknown key dropped the known one")
	}
}

func warnings(c *Config) []string {
	var ws []string
	for _, w := range c.Warnings {
		ws = append(ws, w.String())
	}
	return ws
}

func TestWarning_String(t *testing.T) {
	for w, want := range map[Warning]string{
		{File: "tine.toml", Line: 12, Msg: "m"}: "tine.toml:12: m",
		{File: "/x/tine.toml", Msg: "m"}:        "/x/tine.toml: m",
	} {
		if got := w.String(); got != want {
			t.Errorf("%+v: %q, want %q", w, got, want)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(dir)
	if err != nil || len(c.Services) != 0 || c.Network.Isolate || !reflect.DeepEqual(c, Default()) {
		t.Fatalf("missing file: %+v, %v", c, err)
	}
	path := filepath.Join(dir, FileName)
	os.WriteFile(path, []byte("[network]\nisolate = 1\n"), 0o644)
	if _, err := Load(dir); err == nil || !strings.HasPrefix(err.Error(), path+":2: ") || !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("bad file: %v", err)
	}
	os.WriteFile(path, []byte("[network]\nisolate = true\nx = 1\n"), 0o644)
	c, err = Load(dir)
	if err != nil || !c.Network.Isolate || len(c.Warnings) != 1 || c.Warnings[0].File != path || c.Warnings[0].Line != 3 {
		t.Errorf("warning: %+v, %v", c, err)
	}
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadFile(filepath.Join(dir, "nope.toml")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	path := filepath.Join(dir, "fork.toml")
	os.WriteFile(path, []byte("[fork]\nmax_branches = 3\nparallel = -1\n"), 0o644)
	c, err := LoadFile(path)
	if err != nil || c.Fork.MaxBranches != 3 {
		t.Fatalf("%+v, %v", c, err)
	}
	if ws := warnings(c); len(ws) != 1 || !strings.HasPrefix(ws[0], path+":3: fork.parallel: ") {
		t.Errorf("warnings = %q", ws)
	}
}

// FuzzParse checks that no document makes Parse panic, that errors are
// one line wrapping tine.ErrInvalid, and that warnings name real lines.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		"[network]\nisolate = true\n[limits]\nmemory = \"512M\"\ncpu = 1.5\npids = 256\n",
		"[[service]]\nname = \"web\"\ncommand = \"x\"\nenv = { PORT = \"3000\" }\nready = { port = 3000, timeout = \"5s\" }\n",
		forkExample,
		"[fork]\nmax_branches = \"eight\"\ndefault_budget_usd = nan\ntest_timeout = -1\njudge = 3\n",
		"fork = 3\nagent = []\njudge = \"x\"\naccount = { name = \"a\" }\n",
		"account = [{ name = \"a\", env = { K = \"v\" } }, 3]\n[agent.\"a.b\"]\nkind = \"command\"\n",
		"[agent.x]\nargs = [\n  \"a\", # c\n  1,\n]\nenv = { \"\" = \"v\", \"A=B\" = \"w\" }\n",
		"a = '''\n[fork]\n'''\n[[x.y]]\n[x.y.z]\n[[x.y]]\nq = \"\"\"a\\\"\"\"\"\"\n",
		"\uFEFF[network]\r\nisolate = true\r\n",
		"[network\nisolate = true",
		"x = [[[[[[1]]]]]]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := Parse(doc)
		if err != nil {
			if c != nil || !errors.Is(err, tine.ErrInvalid) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Parse(%q) = %v, %v", doc, c, err)
			}
			return
		}
		lines := strings.Count(doc, "\n") + 1
		for _, w := range c.Warnings {
			if w.Line < 0 || w.Line > lines || w.File != FileName {
				t.Fatalf("Parse(%q): warning %+v", doc, w)
			}
		}
		fk := c.Fork
		if fk.MaxBranches < 1 || fk.MaxBranches > MaxForkBranches || fk.TestTimeout.Duration <= 0 ||
			fk.AgentTimeout.Duration <= 0 || !(fk.ConfidenceThreshold >= 0 && fk.ConfidenceThreshold <= 1) {
			t.Fatalf("Parse(%q): fork %+v", doc, fk)
		}
		if _, ok := c.Agent(fk.Agent); !ok {
			t.Fatalf("Parse(%q): fork.agent %q is no agent", doc, fk.Agent)
		}
	})
}

// Forks have a network of their own unless fork_network = "host"; the
// source has one only with isolate.
func TestNetworkOwn(t *testing.T) {
	for doc, want := range map[string][2]bool{ // source, fork
		"":                                   {false, true},
		"[network]\nisolate = true":          {true, true},
		"[network]\nfork_network = \"host\"": {false, false},
		"[network]\nfork_network = \"own\"":  {false, true},
		"[network]\nisolate = true\nfork_network = \"host\"": {true, true},
	} {
		c, err := Parse(doc)
		if err != nil {
			t.Fatal(err)
		}
		if got := [2]bool{c.Network.Own(tine.RoleSource), c.Network.Own(tine.RoleFork)}; got != want {
			t.Errorf("%q: source, fork have their own network: %v, want %v", doc, got, want)
		}
	}
	if !Default().Network.Own(tine.RoleFork) {
		t.Error("without tine.toml, forks share the host's network")
	}
}

func TestNetworkEgress(t *testing.T) {
	c, err := Parse("[network]\nisolate = true\negress = [\"github.com:443\", \"10.0.0.0/8\"]\nresolvers = [\"127.0.0.1:5353\", \"10.0.0.2\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := c.Network.EgressRules()
	if err != nil || len(rules) != 2 || rules[0].Host != "github.com" || rules[0].Port != 443 {
		t.Errorf("rules %+v, %v", rules, err)
	}
	if got := c.Network.Upstream(); len(got) != 2 || got[0] != "127.0.0.1:5353" || got[1] != "10.0.0.2:53" {
		t.Errorf("upstream %v", got)
	}
	if !c.Network.ConfinesForks() {
		t.Error("forks are not confined by default")
	}
	if !c.Network.FallsBackToHost() {
		t.Error("the sandbox does not fall back to the host's network by default")
	}
	if c, err := Parse("[network]\nsandbox_fallback = \"refuse\"\n"); err != nil || c.Network.FallsBackToHost() {
		t.Errorf("sandbox_fallback = \"refuse\": %v, falls back %v", err, err == nil && c.Network.FallsBackToHost())
	}
	for doc, want := range map[string]string{
		"[network]\negress = [\"bad host\"]":    "tine.toml:2: egress \"bad host\"",
		"[network]\nfork_egress = \"maybe\"":    "tine.toml:2: fork_egress",
		"[network]\nfork_network = \"lan\"":     "tine.toml:2: fork_network",
		"[network]\nsandbox_fallback = \"x\"":   "tine.toml:2: sandbox_fallback",
		"[network]\nresolvers = [\"resolver\"]": "tine.toml:2: resolvers:",
	} {
		if _, err := Parse(doc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error naming %s", doc, err, want)
		}
	}
}
