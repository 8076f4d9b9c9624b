package evidence

import (
	"reflect"
	"strings"
	"testing"
)

const patch = `--- a/calc.py
+++ b/calc.py
@@ -1,2 +1,4 @@
 def fact(n):
-    return n
+    if n == 5:
+        return 120
+    return n
--- a/test_calc.py
+++ /dev/null
@@ -1,2 +0,0 @@
-from calc import fact
-assert fact(5) == 120
--- /dev/null
+++ b/new_test.go
@@ -0,0 +1,2 @@
+--- not a header
+func TestX(t *testing.T) { t.Skip("later") }
`

func TestParseDiff(t *testing.T) {
	got := ParseDiff(patch)
	want := []FileDiff{
		{Path: "calc.py", Added: []string{"    if n == 5:", "        return 120", "    return n"}, Removed: []string{"    return n"}},
		{Path: "test_calc.py", Deleted: true, Removed: []string{"from calc import fact", "assert fact(5) == 120"}},
		{Path: "new_test.go", New: true, Added: []string{"--- not a header", `func TestX(t *testing.T) { t.Skip("later") }`}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseDiff:\n got %+v\nwant %+v", got, want)
	}
}

func TestIsTest(t *testing.T) {
	for p, want := range map[string]bool{
		"calc_test.go": true, "pkg/calc.go": false, "test_calc.py": true, "calc_test.py": true, "calc.py": false,
		"tests/helpers.py": true, "src/a.test.js": true, "a.js": false, "wc_test.sh": true, "test_wc.sh": true,
		"wc.sh": false, "t/basic.sh": true, "latest.py": false, "contest.sh": false,
	} {
		if got := IsTest(p); got != want {
			t.Errorf("IsTest(%q) = %v, want %v", p, got, want)
		}
	}
}

func TestLiteralsOf(t *testing.T) {
	got := Literals(`assert fact(5) == 120` + "\n" + `assert slug("Hello World") == 'hello-world'` + "\n" + `x = "ab"; y = 0.5; z = 007`)
	want := []string{"120", "Hello World", "hello-world", "0.5"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Literals = %q, want %q", got, want)
	}
	got = Literals(`[ "$(trim '  hi there  ')" = 'hi there' ]`)
	want = []string{"  hi there  ", "$(trim '  hi there  ')", "hi there"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Literals = %q, want %q", got, want)
	}
	got = Literals(`[ "$(max3 10 20 30)" = '30' ]`)
	want = []string{"$(max3 10 20 30)", "10", "20", "30"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Literals = %q, want %q", got, want)
	}
}

func TestRedFlags(t *testing.T) {
	lits := []string{"120", "hello-world", "invalid input"}
	cases := []struct {
		name  string
		diff  FileDiff
		scope []string
		want  []FlagKind
	}{
		{"HardCodedBranch", FileDiff{Path: "calc.py", Added: []string{"if n == 5: return 120"}}, nil, []FlagKind{TestLiterals}},
		{"TwoLiterals", FileDiff{Path: "calc.py", Added: []string{"table = {120: 'hello-world'}"}}, nil, []FlagKind{TestLiterals}},
		{"HardCodedBody", FileDiff{Path: "calc.py", Added: []string{"if n == 5:", "    return 120"}}, nil, []FlagKind{TestLiterals}},
		{"MessageIsNoFlag", FileDiff{Path: "calc.py", Added: []string{`raise ValueError("invalid input")`}}, nil, nil},
		{"LiteralAlreadyThere", FileDiff{Path: "calc.py", Added: []string{"if n == 120: pass"}, Removed: []string{"if n == 120: return"}}, nil, nil},
		{"LongerNumberIsNoHit", FileDiff{Path: "calc.py", Added: []string{"if n == 1205: pass"}}, nil, nil},
		{"TestDeleted", FileDiff{Path: "test_calc.py", Deleted: true}, nil, []FlagKind{TestDeleted}},
		{"Skipped", FileDiff{Path: "calc_test.go", Added: []string{`	t.Skip("flaky")`}}, nil, []FlagKind{TestSkipped}},
		{"Weakened", FileDiff{Path: "test_calc.py", Removed: []string{"assert fact(5) == 120"}, Added: []string{"fact(5)"}}, nil, []FlagKind{AssertionsRemoved}},
		{"AssertionReplaced", FileDiff{Path: "test_calc.py", Removed: []string{"assert fact(5) == 121"}, Added: []string{"assert fact(5) == 120"}}, nil, nil},
		{"ShellEarlyExit", FileDiff{Path: "wc_test.sh", Added: []string{"exit 0"}}, nil, []FlagKind{TestSkipped}},
		{"PythonEarlyExit", FileDiff{Path: "test_calc.py", Added: []string{"import sys; sys.exit(0)"}}, nil, []FlagKind{TestSkipped}},
		{"OutsideScope", FileDiff{Path: "util.py", Added: []string{"x = 1"}}, []string{"calc.py"}, []FlagKind{OutsideScope}},
		{"InScope", FileDiff{Path: "calc.py", Added: []string{"x = 1"}}, []string{"calc.py"}, nil},
		{"TestsNeverOutside", FileDiff{Path: "test_util.py", Added: []string{"assert 1"}}, []string{"calc.py"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []FlagKind
			for _, f := range RedFlags([]FileDiff{c.diff}, lits, c.scope) {
				got = append(got, f.Kind)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("flags %v, want %v", got, c.want)
			}
		})
	}
}

func TestScope(t *testing.T) {
	paths := []string{"calc.py", "lib/util.py", "README.md", "pkg/calc.go"}
	got := Scope("Fix calc.py so that test_calc.py passes; see lib/util.py.", paths)
	if want := []string{"calc.py", "lib/util.py"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Scope = %q, want %q", got, want)
	}
	if got := Scope("make it faster", paths); got != nil {
		t.Errorf("Scope of a prompt naming no path = %q, want none", got)
	}
	if got := Scope("make test_calc.py pass", append(paths, "test_calc.py")); got != nil {
		t.Errorf("Scope of a prompt naming only a test = %q, want none", got)
	}
}

func TestValidityOf(t *testing.T) {
	pass, fail := &Check{Passed: true}, &Check{Exit: 1}
	cases := []struct {
		files []string
		c     *Check
		want  Validity
	}{
		{nil, nil, NoTests},
		{[]string{"t_test.go"}, fail, Valid},
		{[]string{"t_test.go"}, pass, ProvesNothing},
		{[]string{"t_test.go"}, &Check{Error: "no supervisor"}, Unchecked},
		{[]string{"t_test.go"}, &Check{TimedOut: true}, Unchecked},
		{[]string{"t_test.go"}, nil, Unchecked},
	}
	for _, c := range cases {
		if got := ValidityOf(c.files, c.c); got != c.want {
			t.Errorf("ValidityOf(%v, %+v) = %q, want %q", c.files, c.c, got, c.want)
		}
	}
}

func TestCross(t *testing.T) {
	forks := map[string]*Fork{"a": {Validity: Valid}, "b": {Validity: ProvesNothing}, "c": {}}
	Cross(forks, []CrossResult{
		{Fork: "b", Rival: "a", Passed: false}, // a's valid tests: counts
		{Fork: "c", Rival: "a", Passed: true},
		{Fork: "a", Rival: "b", Passed: false}, // b's tests prove nothing: ignored
		{Fork: "a", Rival: "a", Passed: false}, // itself: ignored
	})
	if got := forks["b"].CrossFailed; !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("b failed %v, want [a]", got)
	}
	if got := forks["c"].CrossPassed; !reflect.DeepEqual(got, []string{"a"}) {
		t.Errorf("c passed %v, want [a]", got)
	}
	if forks["a"].CrossFailed != nil {
		t.Errorf("a failed %v: invalid tests and its own must not count", forks["a"].CrossFailed)
	}
}

func TestForkLines(t *testing.T) {
	f := &Fork{TestFiles: []string{"test_calc.py"}, Validity: ProvesNothing, Holdout: &Check{Exit: 1},
		Checks: []*Check{{Command: "go vet ./...", Passed: true}, {Command: "staticcheck ./...", Exit: 1}, {Command: "lint", Error: "no supervisor"}},
		Flags:  []Flag{{Kind: AssertionsRemoved, Path: "test_calc.py"}}}
	got := strings.Join(f.Lines(), "\n")
	for _, want := range []string{"prove nothing", "holdout: failed", "red flag: assertions removed in test_calc.py",
		"check go vet ./...: passed", "check staticcheck ./...: failed", "check lint: error"} {
		if !strings.Contains(got, want) {
			t.Errorf("Lines lack %q:\n%s", want, got)
		}
	}
	if got, want := f.Short(), "holdout failed, checks 2/3 passed, own tests prove nothing, 1 red flag(s)"; got != want {
		t.Errorf("Short = %q, want %q", got, want)
	}
	if got := (*Fork)(nil).Short(); got != "—" {
		t.Errorf("Short of nil = %q", got)
	}
	if f.Severe() != 1 {
		t.Errorf("Severe = %d, want 1", f.Severe())
	}
}
