package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// A command line tine-controller cannot run with exits 2 with one line
// saying what is wrong, before it reaches for any API or database.
func TestRun_Usage(t *testing.T) {
	t.Setenv("TINE_FLEET_URL", "")
	t.Setenv("TINE_STORE_URL", "")
	t.Setenv("KUBECONFIG", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--poll", "1ms"}, "--poll 1ms: at least 100ms"},
		{[]string{"--bogus"}, "unknown flag: --bogus"},
		{[]string{"extra"}, "takes no arguments"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "no Kubernetes API to talk to"},
		{[]string{"--kubeconfig", writeKubeconfig(t)}, "needs the fleet's PostgreSQL: set TINE_FLEET_URL"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		line := stderr.String()
		if code != 2 || !strings.HasPrefix(line, "tine-controller: ") || !strings.Contains(line, c.want) ||
			strings.Count(line, "\n") != 1 || strings.Contains(line, "invalid argument") {
			t.Errorf("tine-controller %v: exit %d, %q; want 2 and one line saying %q", c.args, code, line, c.want)
		}
	}
}

// --version names the binary and its version; --help exits 0.
func TestRun_VersionAndHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--version"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "tine-controller v") {
		t.Errorf("--version: exit %d, %q %q", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := run([]string{"--help"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "--namespace") {
		t.Errorf("--help: exit %d, %q", code, stdout.String())
	}
}

// writeKubeconfig writes a client configuration of an API server nobody
// asks: enough to get past the configuration to the fleet's URL.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	p := t.TempDir() + "/kubeconfig"
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
