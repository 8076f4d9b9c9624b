package evidence

import (
	"path"
	"strings"
)

// IsTest reports whether the file at p (slash-separated, relative to the
// workspace) holds tests, by the conventions of common languages: Go's
// _test.go, Python's test_*.py and *_test.py, JavaScript's *.test.* and
// *.spec.*, shell's *_test.sh, test_*.sh and *.bats, and anything under a
// directory named test, tests, __tests__, spec or t.
func IsTest(p string) bool {
	base := path.Base(p)
	ext := path.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	switch {
	case strings.HasSuffix(base, "_test.go"), ext == ".bats", base == "conftest.py":
		return true
	case ext == ".py" || ext == ".sh":
		if strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") || stem == "test" {
			return true
		}
	case strings.Contains(base, ".test.") || strings.Contains(base, ".spec."):
		return true
	}
	for _, d := range strings.Split(path.Dir(p), "/") {
		switch d {
		case "test", "tests", "__tests__", "spec", "t":
			return true
		}
	}
	return false
}

// Scope is the code paths a task names: those of paths (every path any
// fork changed) that the prompt mentions, by their whole path or by their
// file name as a word, tests left out. Empty when the prompt names no such
// path ("fix test_calc.py" names none), and then nothing is outside the
// scope.
func Scope(prompt string, paths []string) []string {
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(prompt, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		words[strings.Trim(w, ".")] = true
	}
	var out []string
	for _, p := range paths {
		if !IsTest(p) && (words[p] || words[path.Base(p)] || words["./"+p]) {
			out = append(out, p)
		}
	}
	return out
}

// outsideScope reports whether a change to code file p falls outside
// scope (see Scope); tests never do.
func outsideScope(p string, scope []string) bool {
	if len(scope) == 0 || IsTest(p) {
		return false
	}
	for _, s := range scope {
		if p == s {
			return false
		}
	}
	return true
}
