package forkrun

import (
	"errors"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/config"
	"github.com/tinehq/tine/engine"
)

func TestFirstProgram(t *testing.T) {
	for _, c := range []struct{ cmd, want string }{
		{"claude -p hi", "claude"},
		{"./try.sh --fast", "./try.sh"},
		{"FOO=1 ./try.sh", "./try.sh"},
		{"echo go; sleep 1", "echo"},
		{"if true; then x; fi", ""},
		{"for i in 1 2; do echo $i; done", ""},
		{"(cd sub && make)", ""},
		{"$AGENT --go", ""},
		{"'quoted prog'", ""},
		{"cd sub && ./run", ""},
		{"exec ./run", ""},
		{"FOO=1", ""},
	} {
		got, err := firstProgram(c.cmd)
		if err != nil || got != c.want {
			t.Errorf("firstProgram(%q) = %q, %v; want %q", c.cmd, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "   ", "if true; then", "echo 'unclosed"} {
		if _, err := firstProgram(bad); err == nil {
			t.Errorf("firstProgram(%q): no error", bad)
		}
	}
}

// TestConfigure_Fresh: [agent.NAME] fresh starts the agents without a
// conversation unless --session names one; --fresh does with any
// tine.toml; --fresh with --session is refused by the check.
func TestConfigure_Fresh(t *testing.T) {
	src := engine.Ref{Workspace: &tine.Workspace{Path: "/w"}, Run: &tine.Run{ID: "r"}}
	for _, tc := range []struct {
		toml    string
		req     Request
		fresh   bool
		session string
	}{
		{"", Request{}, false, ""},
		{"", Request{Fresh: true}, true, ""},
		{"[agent.claude]\nfresh = true\n", Request{}, true, ""},
		{"[agent.claude]\nfresh = true\n", Request{Session: "s"}, false, "s"},
	} {
		cfg, err := config.Parse(tc.toml)
		if err != nil {
			t.Fatal(err)
		}
		tc.req.Prompt = "p"
		o, err := Configure(cfg, src, tc.req, func(string) string { return "" })
		if err != nil || o.Fresh != tc.fresh || o.Session != tc.session {
			t.Errorf("%q %+v: fresh %v session %q, %v; want %v %q", tc.toml, tc.req, o.Fresh, o.Session, err, tc.fresh, tc.session)
		}
	}
	o := Options{Prompt: "p", N: 1, Agent: agent.Config{Kind: agent.CommandKind, Args: []string{"true"}}, Session: "s", Fresh: true}
	if err := o.check(); !errors.Is(err, tine.ErrInvalid) {
		t.Errorf("--fresh with --session: %v, want ErrInvalid", err)
	}
}
