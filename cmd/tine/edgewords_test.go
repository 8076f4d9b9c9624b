package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagWord is a command-line flag in a message (--force, --into=X).
var flagWord = regexp.MustCompile(`(^|[^\w-])--[a-z]`)

// wholeCommand is a message's whole command line (tine doctor --rebuild):
// it says what to run, not which option.
var wholeCommand = regexp.MustCompile(`tine [a-z-]+( [A-Z]+)* --[a-z-]+`)

// The engine, its runtime, forkrun and the control plane speak the
// domain's words: an error names a request's option as tine.Opt (the
// API's field), which the CLI says as its flag, never as a flag itself.
func TestDomainErrorsNameNoFlags(t *testing.T) {
	for _, dir := range []string{"../../engine", "../../forkrun", "../../control", "../../runtime"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !isErrorCall(call) || len(call.Args) == 0 {
					return true
				}
				if lit, ok := call.Args[0].(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					if flagWord.MatchString(wholeCommand.ReplaceAllString(s, "")) {
						t.Errorf("%s: an error names a flag: %q (name the option with tine.Opt)", fset.Position(lit.Pos()), s)
					}
				}
				return true
			})
		}
	}
}

// isErrorCall is fmt.Errorf, errors.New or tine.Optionf.
func isErrorCall(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok {
		return false
	}
	switch pkg.Name + "." + sel.Sel.Name {
	case "fmt.Errorf", "errors.New", "tine.Optionf":
		return true
	}
	return false
}
