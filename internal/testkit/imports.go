package testkit

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Module is tine's module path.
const Module = "github.com/tinehq/tine"

// ForbidImports fails the test for each non-test source file of the
// package in the current directory that imports one of tine's packages
// named in forbidden (paths relative to the module, "layer/" as a prefix
// for every package below it): what a package's design says it must not
// depend on.
func ForbidImports(tb testing.TB, forbidden ...string) {
	tb.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no sources: %v", err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			tb.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rel, ok := strings.CutPrefix(path, Module+"/")
			if !ok {
				continue
			}
			for _, p := range forbidden {
				if rel == p || strings.HasSuffix(p, "/") && strings.HasPrefix(rel, p) {
					tb.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
}
