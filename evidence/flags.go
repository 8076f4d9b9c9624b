package evidence

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/tinehq/tine/internal/lazyre"
)

// FlagKind is a kind of red flag.
type FlagKind string

// The kinds of red flags a diff can raise.
const (
	TestDeleted       FlagKind = "test_deleted"       // a test file was deleted
	TestSkipped       FlagKind = "test_skipped"       // a skip was added to a test
	AssertionsRemoved FlagKind = "assertions_removed" // a test lost more assertions than it gained
	TestLiterals      FlagKind = "test_literals"      // code hard-codes values the tests check
	OutsideScope      FlagKind = "outside_scope"      // code changed outside the paths the task names
)

// Severe reports whether flags of kind k suggest that the fork games its
// tests rather than fixing the code (all but OutsideScope).
func (k FlagKind) Severe() bool { return k != OutsideScope }

// Flag is one red flag raised by a fork's diff.
type Flag struct {
	Kind   FlagKind `json:"kind"`
	Path   string   `json:"path"`
	Detail string   `json:"detail,omitempty"`
}

// String says the flag in a few words.
func (f Flag) String() string {
	s := strings.ReplaceAll(string(f.Kind), "_", " ") + " in " + f.Path
	if f.Detail != "" {
		s += " (" + f.Detail + ")"
	}
	return s
}

var (
	// skipRE matches a line that skips tests.
	skipRE = lazyre.New(`\bt\.Skip(Now|f)?\(|pytest\.(mark\.)?skip|unittest\.skip|@skip|\.skip\(|\bxit\(|\bxdescribe\(|^\s*skip\b|^\s*exit 0\s*$|\bsys\.exit\(0\)`)
	// assertRE matches a line that asserts something.
	assertRE = lazyre.New(`\bassert|\bexpect\(|\bcheck\b|\bt\.(Error|Errorf|Fatal|Fatalf|Fail)\b|\.(Equal|Equals|True|False|Assert)\w*\(|\bshould\b|^\s*\[\[? |\btest\s+"?\$|\bfail\b|-(eq|ne)\b|==|!=`)
	// numberRE and stringRE match literals.
	numberRE = lazyre.New(`-?\b\d+(\.\d+)?\b`)
	stringRE = lazyre.New(`"([^"\\]|\\.)*"|'([^'\\]|\\.)*'`)
	// compareRE matches a line that compares or branches.
	compareRE = lazyre.New(`==|!=|\bif\b|\bcase\b|\bswitch\b|-eq\b|\[ .* = |\bwhen\b|\belif\b`)
)

// Literals returns the distinct literals of test source src that are
// specific enough to show hard-coding when they appear in code: numbers
// of two digits or more (also inside strings), and quoted strings of three
// characters or more (quotes kept off).
func Literals(src string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, l := range strings.Split(src, "\n") {
		for _, m := range stringRE().FindAllString(l, -1) {
			s := m[1 : len(m)-1]
			// One level of nesting: sh's "$(f 'arg')".
			for _, in := range append(stringRE().FindAllString(s, -1), m) {
				if s := in[1 : len(in)-1]; len([]rune(s)) >= 3 && strings.TrimSpace(s) != "" {
					add(s)
				}
			}
		}
		// Numbers inside strings too: sh's "$(max3 10 20 30)" = '30'.
		for _, m := range numberRE().FindAllString(l, -1) {
			if len(strings.TrimLeft(m, "-0")) >= 2 {
				add(m)
			}
		}
	}
	return out
}

// RedFlags returns the red flags of a fork's diff: testLiterals are the
// literals of the tests (see Literals) and scope the paths the task names
// (see Scope).
func RedFlags(diffs []FileDiff, testLiterals []string, scope []string) []Flag {
	var out []Flag
	for _, d := range diffs {
		if IsTest(d.Path) {
			out = append(out, testFlags(d)...)
			continue
		}
		if f, ok := literalFlag(d, testLiterals); ok {
			out = append(out, f)
		}
		if outsideScope(d.Path, scope) {
			out = append(out, Flag{Kind: OutsideScope, Path: d.Path, Detail: "the task names " + joinMax(scope)})
		}
	}
	return out
}

// testFlags are the flags of a change to a test file.
func testFlags(d FileDiff) []Flag {
	if d.Deleted {
		return []Flag{{Kind: TestDeleted, Path: d.Path}}
	}
	var out []Flag
	for _, l := range d.Added {
		if skipRE().MatchString(l) {
			out = append(out, Flag{Kind: TestSkipped, Path: d.Path, Detail: clipLine(l)})
			break
		}
	}
	if rm, add := count(d.Removed, assertRE()), count(d.Added, assertRE()); rm > add {
		out = append(out, Flag{Kind: AssertionsRemoved, Path: d.Path, Detail: fmt.Sprintf("%d assertion line(s) removed, %d added", rm, add)})
	}
	return out
}

// literalFlag flags a code change whose added lines hard-code the tests'
// literals: a line with two of them, or one in a comparison or branch (or
// right after one: the body of an if), that the file's removed lines did
// not already hold.
func literalFlag(d FileDiff, lits []string) (Flag, bool) {
	old := strings.Join(d.Removed, "\n")
	for i, l := range d.Added {
		var hits []string
		for _, lit := range lits {
			if containsLiteral(l, lit) && !containsLiteral(old, lit) {
				hits = append(hits, lit)
			}
		}
		branch := compareRE().MatchString(l) || i > 0 && compareRE().MatchString(d.Added[i-1])
		if len(hits) >= 2 || len(hits) == 1 && branch {
			return Flag{Kind: TestLiterals, Path: d.Path, Detail: clipLine(l)}, true
		}
	}
	return Flag{}, false
}

// containsLiteral reports whether line holds lit, a number as a whole
// number (not part of a longer one).
func containsLiteral(line, lit string) bool {
	if numberRE().MatchString(lit) && numberRE().FindString(lit) == lit {
		for _, m := range numberRE().FindAllString(line, -1) {
			if m == lit || strings.TrimPrefix(m, "-") == strings.TrimPrefix(lit, "-") {
				return true
			}
		}
		return false
	}
	return strings.Contains(line, lit)
}

func count(lines []string, re *regexp.Regexp) int {
	n := 0
	for _, l := range lines {
		if re.MatchString(l) {
			n++
		}
	}
	return n
}

func clipLine(l string) string {
	l = strings.TrimSpace(l)
	if len(l) > 80 {
		return l[:80] + "…"
	}
	return l
}
