package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The arguments deploy/'s manifests give tine (the node DaemonSet, the
// tine-api Deployment) are flags tine serve has, with values it takes: a
// typo there would crash-loop every pod of a cluster, which no test of
// the manifests' schema sees.
func TestDeploy_ArgsAreServeFlags(t *testing.T) {
	for _, file := range []string{"../../deploy/node-daemonset.yaml", "../../deploy/api-deployment.yaml"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		args := manifestArgs(string(b))
		if len(args) < 2 || args[0] != "serve" {
			t.Fatalf("%s: args %q; want tine serve and its flags", file, args)
		}
		root := newRoot(io.Discard, io.Discard)
		serve, _, err := root.Find(args[:1])
		if err != nil {
			t.Fatal(err)
		}
		if err := serve.ParseFlags(args[1:]); err != nil {
			t.Errorf("%s: tine %s: %v", file, strings.Join(args, " "), err)
		}
	}
}

// manifestArgs are the items of the first container's args: list in a
// manifest, with the $(VAR) references Kubernetes expands replaced by a
// value of their kind.
func manifestArgs(yaml string) []string {
	_, rest, ok := strings.Cut(yaml, "\n          args:\n")
	if !ok {
		return nil
	}
	item := regexp.MustCompile(`^\s+- (\S+)`)
	var out []string
	for _, l := range strings.Split(rest, "\n") {
		m := item.FindStringSubmatch(l)
		if m == nil {
			break
		}
		out = append(out, regexp.MustCompile(`\$\([A-Z_]+\)`).ReplaceAllString(m[1], "x"))
	}
	return out
}
