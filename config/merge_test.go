package config

import (
	"errors"
	"testing"

	"github.com/tinehq/tine"
)

func TestIsByproduct(t *testing.T) {
	def := Default().Merge.ByproductList()
	for p, want := range map[string]bool{
		"tests/__pycache__":                   true,
		"tests/__pycache__/t.cpython-311.pyc": true,
		"a.pyc":                               true,
		"node_modules/.cache/x/y":             true,
		"web/node_modules/.cache":             true,
		"node_modules/left-pad/index.js":      false,
		"src/cache/.cache":                    false,
		"pycache.py":                          false,
		".pytest_cache/v/cache/lastfailed":    true,
	} {
		if got := IsByproduct(p, def); got != want {
			t.Errorf("IsByproduct(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestParse_MergeByproducts(t *testing.T) {
	c, err := Parse("[merge]\nbyproducts = [\"target/criterion\", \"*.log\"]\nbyproduct_defaults = false\n")
	if err != nil {
		t.Fatal(err)
	}
	if l := c.Merge.ByproductList(); len(l) != 2 || !IsByproduct("x/target/criterion/a", l) || IsByproduct("__pycache__", l) {
		t.Errorf("byproducts %v", l)
	}
	for _, bad := range []string{`[""]`, `["/abs"]`, `["a//b"]`, `["[x"]`} {
		if _, err := Parse("[merge]\nbyproducts = " + bad + "\n"); !errors.Is(err, tine.ErrInvalid) {
			t.Errorf("byproducts = %s: %v, want invalid", bad, err)
		}
	}
}
