//go:build linux

package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/tinehq/tine/internal/testkit"
)

// tine links none of Kubernetes' client: it cost every command ~16 ms of
// package init and doubled the binary (docs/benchmarks.md); the TineTask
// controller is the tine-controller binary (cmd/tine-controller) for
// that reason. A package of k8s.io or sigs.k8s.io among tine's
// dependencies fails here, with the chain that brings it.
func TestDeps_NoKubernetes(t *testing.T) {
	out, err := exec.Command(testkit.GoTool(), "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	importedBy := map[string]string{}
	var kube []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if _, ok := importedBy[imp]; !ok {
				importedBy[imp] = f[0]
			}
		}
		if isKube(f[0]) {
			kube = append(kube, f[0])
		}
	}
	for _, p := range kube {
		if isKube(importedBy[p]) {
			continue // named by the chain of the package that brings it
		}
		chain := p
		for q := importedBy[p]; q != ""; q = importedBy[q] {
			chain = q + " -> " + chain
		}
		t.Errorf("tine links Kubernetes' %s: %s", p, chain)
	}
}

// isKube reports whether package path p is Kubernetes'.
func isKube(p string) bool {
	return strings.HasPrefix(p, "k8s.io/") || strings.HasPrefix(p, "sigs.k8s.io/")
}
