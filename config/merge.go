package config

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// DefaultByproducts are the byproducts tine leaves out of a fork's work
// unless [merge] byproduct_defaults = false: what test runners, type
// checkers and build tools write as they run (caches, bytecode, coverage
// data), never what an agent meant to change.
var DefaultByproducts = []string{
	"__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".coverage",
	"node_modules/.cache", ".nyc_output", ".eslintcache",
}

// Merge is [merge]: what a fork's work is. Byproducts, added to
// DefaultByproducts (unless ByproductDefaults is false), are left out of
// it: out of its file counts, evidence, readiness and judging, and out of
// its git and filesystem merges (a paths merge carries the paths it is
// given). Each is a slash-separated pattern of whole path components, each
// a path.Match glob, that may match anywhere in a path: "__pycache__"
// leaves out every directory of that name and all below it,
// "node_modules/.cache" the .cache directly under any node_modules.
type Merge struct {
	Byproducts        []string `toml:"byproducts"`
	ByproductDefaults *bool    `toml:"byproduct_defaults"`
}

// ByproductList returns the byproduct patterns in force.
func (m Merge) ByproductList() []string {
	if m.ByproductDefaults != nil && !*m.ByproductDefaults {
		return slices.Clone(m.Byproducts)
	}
	return append(slices.Clone(DefaultByproducts), m.Byproducts...)
}

func (m Merge) check() error {
	for i, p := range m.Byproducts {
		if _, err := path.Match(p, ""); err != nil || p == "" || strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "") {
			return &keyError{path: []string{"merge", "byproducts"},
				err: fmt.Errorf("merge.byproducts[%d]: %q is not a pattern of path components (such as \"__pycache__\" or \"node_modules/.cache\")", i, p)}
		}
	}
	return nil
}

// IsByproduct reports whether the slash-separated, workspace-relative path
// p is, or lies below, a match of one of patterns (Merge.ByproductList).
func IsByproduct(p string, patterns []string) bool {
	parts := strings.Split(p, "/")
	for _, pat := range patterns {
		if matchesWithin(parts, strings.Split(pat, "/")) {
			return true
		}
	}
	return false
}

// matchesWithin reports whether pat matches len(pat) consecutive
// components of parts.
func matchesWithin(parts, pat []string) bool {
	for i := 0; i+len(pat) <= len(parts); i++ {
		ok := true
		for j, g := range pat {
			if m, _ := path.Match(g, parts[i+j]); !m {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
