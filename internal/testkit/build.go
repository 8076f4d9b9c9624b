package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build builds each package of pkgs (a path relative to the test's
// directory) into the binary named by its key, with the go command that
// runs the tests, so that end-to-end tests drive the real binaries.
func Build(bins map[string]string) error {
	for out, pkg := range bins {
		build := exec.Command(GoTool(), "build", "-buildvcs=false", "-o", out, pkg)
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building %s: %w", pkg, err)
		}
	}
	return nil
}

// GoTool finds the go command that is running these tests: GOROOT's, else
// the one on PATH.
func GoTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Lstat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}
