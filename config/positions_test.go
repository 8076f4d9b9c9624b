package config

import "testing"

func TestScan(t *testing.T) {
	doc := `# [fork] in a comment
top = 1 # max_branches = 2
[a]
x = """
[b]
y = 1
"""
z = '''
[c]'''
"q.k" = { n = 1, m = [ { deep = 2 },
  { deep = 3 } ] }
'lit.k' = 4

[[arr]]
name = "first"
[arr.sub]
s = 1
[[arr]]
name = "second"
[[arr.items]]
i = 1
[[arr.items]]
i = 2

[ d . "e.f" ]
g = [
  1, # ]
  "]",
]
h = "\"quoted\" # not a comment"
dotted.key.here = true
after = 5
list = [{ name = "x" }, { name = "y",
  env = { K = "v" } }]
`
	p := scan(doc)
	for _, tt := range []struct {
		path []string
		want int
	}{
		{[]string{"top"}, 2},
		{[]string{"a"}, 3},
		{[]string{"a", "x"}, 4},
		{[]string{"b"}, 0},
		{[]string{"c"}, 0},
		{[]string{"a", "y"}, 3}, // not a key: the nearest is [a]
		{[]string{"a", "z"}, 8},
		{[]string{"a", "q.k"}, 10},
		{[]string{"a", "q.k", "n"}, 10},
		{[]string{"a", "q.k", "m", "0", "deep"}, 10},
		{[]string{"a", "q.k", "m", "1", "deep"}, 11},
		{[]string{"a", "lit.k"}, 12},
		{[]string{"arr"}, 14},
		{[]string{"arr", "0"}, 14},
		{[]string{"arr", "0", "name"}, 15},
		{[]string{"arr", "0", "sub"}, 16},
		{[]string{"arr", "0", "sub", "s"}, 17},
		{[]string{"arr", "1"}, 18},
		{[]string{"arr", "1", "name"}, 19},
		{[]string{"arr", "1", "items", "0", "i"}, 21},
		{[]string{"arr", "1", "items", "1", "i"}, 23},
		{[]string{"d", "e.f"}, 25},
		{[]string{"d", "e.f", "g"}, 26},
		{[]string{"d", "e.f", "h"}, 30},
		{[]string{"d", "e.f", "dotted", "key", "here"}, 31},
		{[]string{"d", "e.f", "after"}, 32},
		{[]string{"d", "e.f", "list", "1", "name"}, 33},
		{[]string{"d", "e.f", "list", "1", "env", "K"}, 34},
		{[]string{"nowhere"}, 0},
		{nil, 0},
	} {
		if got := p.line(tt.path...); got != tt.want {
			t.Errorf("line(%q) = %d, want %d", tt.path, got, tt.want)
		}
	}
	for _, tt := range []struct {
		key  string
		n    int
		want int
	}{
		{"arr.name", 0, 15},
		{"arr.name", 1, 19},
		{"arr.name", 2, 19},
		{"arr.items.i", 1, 23},
		{"arr", 1, 18},
		{"nowhere", 0, 0},
	} {
		if got := p.nth(tt.key, tt.n); got != tt.want {
			t.Errorf("nth(%q, %d) = %d, want %d", tt.key, tt.n, got, tt.want)
		}
	}
}

// TestScan_Garbage checks that the scan ends on anything, valid or not.
func TestScan_Garbage(t *testing.T) {
	for _, doc := range []string{"[", "[[", "a", "a =", `a = "`, `a = """`, "a = '''", "a = [", "a = {", "a = { b", "= 1", "\\", "\"", "a.", "[a.]\n]]]"} {
		scan(doc)
	}
}
