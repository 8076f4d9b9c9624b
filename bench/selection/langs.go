package selection

import (
	"fmt"
	"strings"
)

// lang is how tasks of one language are laid out.
type lang struct {
	codeFile, testFile, extraTest string
	regression, holdoutCmd        string
	test                          func(problem) string
	code                          func(p problem, body string) string       // the code file with p's function
	rewrite                       func(p problem) string                    // the code file, rewritten
	testBody                      func(p problem, cases [][2]string) string // a test file over cases
	holdoutFiles                  func(p problem) map[string]string
	util, utilBroken, utilTest    string
	utilFile, utilTestFile        string
	skipLine                      func(test string) string // the test file made to skip
	comment                       string                   // a comment line
}

var langs = map[string]*lang{python: pyLang, golang: goLang, shell: shLang}

// repo is the repository of p at the fork point.
func (l *lang) repo(p problem) map[string]string {
	files := map[string]string{
		l.codeFile: l.code(p, p.buggy), l.testFile: l.testBody(p, [][2]string{p.vis}),
		l.utilFile: l.util, l.utilTestFile: l.utilTest,
	}
	if p.lang == golang {
		files["go.mod"] = "module calc\n\ngo 1.21\n"
	}
	return files
}

func (l *lang) holdout(p problem) map[string]string { return l.holdoutFiles(p) }

// cand is the files candidate kind writes.
func (l *lang) cand(p problem, kind string) map[string]string {
	switch kind {
	case Minimal:
		return map[string]string{l.codeFile: l.code(p, p.fixed)}
	case Rewrite:
		return map[string]string{l.codeFile: l.rewrite(p), l.extraTest: l.testBody(p, p.hidden)}
	case HardCode:
		return map[string]string{l.codeFile: l.code(p, p.hard+"\n"+p.buggy)}
	case Weaken:
		return map[string]string{l.testFile: l.testBody(p, nil)}
	case Skip:
		return map[string]string{l.testFile: l.skipLine(l.testBody(p, [][2]string{p.vis}))}
	case BreakOther:
		return map[string]string{l.codeFile: l.code(p, p.fixed), l.utilFile: l.utilBroken}
	case Wrong:
		return map[string]string{l.codeFile: l.code(p, p.wrong)}
	case WrongTested:
		return map[string]string{l.codeFile: l.code(p, p.wrong), l.extraTest: l.testBody(p, [][2]string{p.wrongCase})}
	case Noop:
		return map[string]string{l.codeFile: l.code(p, l.comment+"\n"+p.buggy)}
	}
	panic("unknown candidate kind " + kind)
}

// test is the visible test command of p.
func (l *lang) testCmd(p problem) string { return l.test(p) }

const pyEnv = "export PYTHONDONTWRITEBYTECODE=1; "

var pyLang = &lang{
	codeFile: "calc.py", testFile: "test_calc.py", extraTest: "test_calc_extra.py",
	utilFile: "util.py", utilTestFile: "test_util.py",
	regression: pyEnv + `for t in test_*.py; do python3 "$t" || exit 1; done`,
	holdoutCmd: pyEnv + `python3 "$HOLDOUT/holdout.py"`,
	test:       func(problem) string { return pyEnv + `for t in test_calc*.py; do python3 "$t" || exit 1; done` },
	code: func(p problem, body string) string {
		return fmt.Sprintf("\"\"\"The function of the task.\"\"\"\n\n\ndef %s(%s):\n%s\n", p.name, p.params, body)
	},
	rewrite: func(p problem) string {
		return fmt.Sprintf("\"\"\"The function of the task, reworked.\"\"\"\n\n\ndef _%s_impl(%s):\n    # The computation itself, kept apart from the entry point.\n%s\n\n\ndef %s(%s):\n    \"\"\"Public entry point: see _%s_impl.\"\"\"\n    return _%s_impl(%s)\n",
			p.name, p.params, p.fixed, p.name, p.params, p.name, p.name, p.args)
	},
	testBody: func(p problem, cases [][2]string) string {
		var b strings.Builder
		fmt.Fprintf(&b, "from calc import %s\n\n", p.name)
		for _, c := range cases {
			fmt.Fprintf(&b, "assert %s == %s, %q\n", c[0], c[1], c[0])
		}
		b.WriteString("print(\"ok\")\n")
		return b.String()
	},
	holdoutFiles: func(p problem) map[string]string {
		var b strings.Builder
		fmt.Fprintf(&b, "import sys\nsys.path.insert(0, \".\")\nfrom calc import %s\nfrom util import shout\n\n", p.name)
		for _, c := range append([][2]string{p.vis}, p.hidden...) {
			fmt.Fprintf(&b, "assert %s == %s, %q\n", c[0], c[1], c[0])
		}
		b.WriteString("assert shout(\"hey\") == \"HEY!\"\nprint(\"holdout ok\")\n")
		return map[string]string{"holdout.py": b.String()}
	},
	util:       "def shout(s):\n    return s.upper() + \"!\"\n",
	utilBroken: "def shout(s):\n    return s.upper()\n",
	utilTest:   "from util import shout\n\nassert shout(\"hey\") == \"HEY!\"\nprint(\"ok\")\n",
	skipLine:   func(t string) string { return "import sys\nsys.exit(0)  # flaky, see later\n" + t },
	comment:    "    # TODO: check the edge cases.",
}

const goEnv = "export GOFLAGS=-mod=mod GOTOOLCHAIN=local; "

var goLang = &lang{
	codeFile: "calc.go", testFile: "calc_test.go", extraTest: "calc_extra_test.go",
	utilFile: "util.go", utilTestFile: "util_test.go",
	regression: goEnv + "go test -count=1 .",
	holdoutCmd: goEnv + `d=$(mktemp -d) && cp -R . "$d" && cp "$HOLDOUT/holdout_test.go" "$d" && cd "$d" && go test -count=1 -run Holdout .; s=$?; rm -rf "$d"; exit $s`,
	test:       func(p problem) string { return goEnv + "go test -count=1 -run '^Test" + p.name + "' ." },
	code: func(p problem, body string) string {
		return fmt.Sprintf("package calc\n%s\n// %s is the function of the task.\nfunc %s(%s) %s {\n%s\n}\n", goImports(p), p.name, p.name, p.params, p.ret, body)
	},
	rewrite: func(p problem) string {
		impl := strings.ToLower(p.name[:1]) + p.name[1:] + "Impl"
		return fmt.Sprintf("package calc\n%s\n// %s is the function of the task; the work is in %s.\nfunc %s(%s) %s {\n\treturn %s(%s)\n}\n\n// %s computes %s.\nfunc %s(%s) %s {\n%s\n}\n",
			goImports(p), p.name, impl, p.name, p.params, p.ret, impl, p.args, impl, p.name, impl, p.params, p.ret, p.fixed)
	},
	testBody: func(p problem, cases [][2]string) string {
		var b strings.Builder
		name := "Test" + p.name
		if len(cases) > 0 && cases[0] != p.vis {
			name += "Extra"
		}
		fmt.Fprintf(&b, "package calc\n\nimport \"testing\"\n\nfunc %s(t *testing.T) {\n", name)
		for _, c := range cases {
			fmt.Fprintf(&b, "\tif got := %s; got != %s {\n\t\tt.Errorf(\"%s = %%v, want %%v\", got, %s)\n\t}\n", c[0], c[1], strings.ReplaceAll(c[0], `"`, `\"`), c[1])
		}
		b.WriteString("}\n")
		return b.String()
	},
	holdoutFiles: func(p problem) map[string]string {
		var b strings.Builder
		b.WriteString("package calc\n\nimport \"testing\"\n\nfunc TestHoldout(t *testing.T) {\n")
		for _, c := range append([][2]string{p.vis}, p.hidden...) {
			fmt.Fprintf(&b, "\tif got := %s; got != %s {\n\t\tt.Errorf(\"%s = %%v, want %%v\", got, %s)\n\t}\n", c[0], c[1], strings.ReplaceAll(c[0], `"`, `\"`), c[1])
		}
		b.WriteString("\tif got := Shout(\"hey\"); got != \"HEY!\" {\n\t\tt.Errorf(\"Shout = %q\", got)\n\t}\n}\n")
		return map[string]string{"holdout_test.go": b.String()}
	},
	util:       "package calc\n\nimport \"strings\"\n\n// Shout upper-cases s and adds an exclamation mark.\nfunc Shout(s string) string {\n\treturn strings.ToUpper(s) + \"!\"\n}\n",
	utilBroken: "package calc\n\nimport \"strings\"\n\n// Shout upper-cases s.\nfunc Shout(s string) string {\n\treturn strings.ToUpper(s)\n}\n",
	utilTest:   "package calc\n\nimport \"testing\"\n\nfunc TestShout(t *testing.T) {\n\tif got := Shout(\"hey\"); got != \"HEY!\" {\n\t\tt.Errorf(\"Shout = %q\", got)\n\t}\n}\n",
	skipLine: func(t string) string {
		return strings.Replace(t, "(t *testing.T) {\n", "(t *testing.T) {\n\tt.Skip(\"flaky, see later\")\n", 1)
	},
	comment: "\t// TODO: check the edge cases.",
}

func goImports(p problem) string {
	if p.imports == "" {
		return ""
	}
	return fmt.Sprintf("\nimport %q\n", p.imports)
}

var shLang = &lang{
	codeFile: "lib.sh", testFile: "test_lib.sh", extraTest: "test_lib_extra.sh",
	utilFile: "util.sh", utilTestFile: "test_util.sh",
	regression: `for t in test_*.sh; do sh "$t" || exit 1; done`,
	holdoutCmd: `sh "$HOLDOUT/holdout.sh"`,
	test:       func(problem) string { return `for t in test_lib*.sh; do sh "$t" || exit 1; done` },
	code: func(p problem, body string) string {
		return fmt.Sprintf("# The function of the task.\n%s() {\n%s\n}\n", p.name, body)
	},
	rewrite: func(p problem) string {
		return fmt.Sprintf("# The function of the task, reworked: the work is in _%s_impl.\n_%s_impl() {\n\t# The computation itself, kept apart from the entry point.\n%s\n}\n\n%s() {\n\t_%s_impl \"$@\"\n}\n",
			p.name, p.name, p.fixed, p.name, p.name)
	},
	testBody: func(p problem, cases [][2]string) string {
		var b strings.Builder
		b.WriteString(". ./lib.sh\n\n")
		for _, c := range cases {
			b.WriteString(shCase(c))
		}
		b.WriteString("echo ok\n")
		return b.String()
	},
	holdoutFiles: func(p problem) map[string]string {
		var b strings.Builder
		b.WriteString(". ./lib.sh\n. ./util.sh\n\n")
		for _, c := range append([][2]string{p.vis}, p.hidden...) {
			b.WriteString(shCase(c))
		}
		b.WriteString(shCase([2]string{"shout hey", "HEY!"}))
		b.WriteString("echo holdout ok\n")
		return map[string]string{"holdout.sh": b.String()}
	},
	util:       "# shout upper-cases its argument and adds an exclamation mark.\nshout() {\n\techo \"$(echo \"$1\" | tr a-z A-Z)!\"\n}\n",
	utilBroken: "# shout upper-cases its argument.\nshout() {\n\techo \"$1\" | tr a-z A-Z\n}\n",
	utilTest:   ". ./util.sh\n\n" + shCase([2]string{"shout hey", "HEY!"}) + "echo ok\n",
	skipLine: func(t string) string {
		return strings.Replace(t, ". ./lib.sh\n", ". ./lib.sh\nexit 0 # flaky, see later\n", 1)
	},
	comment: "\t# TODO: check the edge cases.",
}

// shCase is one assertion of a shell test.
func shCase(c [2]string) string {
	want := "'" + c[1] + "'"
	return fmt.Sprintf("[ \"$(%s)\" = %s ] || { echo \"%s: got $(%s), want %s\"; exit 1; }\n", c[0], want, strings.ReplaceAll(c[0], `"`, `\"`), c[0], c[1])
}
