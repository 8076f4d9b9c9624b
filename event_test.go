package tine

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// docKind is how docs/cli.md's table names a kind: the evidence family as
// evidence.KIND.
func docKind(k EventKind) string {
	if k == EventEvidence {
		return string(k) + "KIND"
	}
	return string(k)
}

// TestEventKinds_Documented: docs/cli.md's table of event kinds lists
// exactly the kinds of EventKinds.
func TestEventKinds_Documented(t *testing.T) {
	b, err := os.ReadFile("docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Event kinds\n")
	if !ok {
		t.Fatal("docs/cli.md has no section ## Event kinds")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(section, -1) {
		documented = append(documented, m[1])
	}
	var want []string
	for _, k := range EventKinds {
		want = append(want, docKind(k))
	}
	slices.Sort(documented)
	slices.Sort(want)
	if !slices.Equal(documented, want) {
		t.Errorf("docs/cli.md lists the event kinds %q, EventKinds has %q", documented, want)
	}
}

// TestEventKinds_Registered: every EventKind constant of the package is in
// EventKinds.
func TestEventKinds_Registered(t *testing.T) {
	n := 0
	for _, p := range typeCheck(t, ".") {
		if p.Path() != "github.com/tinehq/tine" {
			continue
		}
		for _, name := range p.Scope().Names() {
			c, ok := p.Scope().Lookup(name).(*types.Const)
			if !ok || !isEventKind(c.Type()) {
				continue
			}
			n++
			if !slices.Contains(EventKinds, EventKind(constant.StringVal(c.Val()))) {
				t.Errorf("%s is not in EventKinds", name)
			}
		}
	}
	if n != len(EventKinds) {
		t.Errorf("%d EventKind constants, %d in EventKinds", n, len(EventKinds))
	}
}

// TestApprovalEvent: each approval state logs its registered kind.
func TestApprovalEvent(t *testing.T) {
	for s, k := range map[ApprovalState]EventKind{ApprovalPending: EventApprovalPending, ApprovalApproved: EventApprovalApproved,
		ApprovalConsumed: EventApprovalConsumed, ApprovalExpired: EventApprovalExpired, ApprovalRefused: EventApprovalRefused} {
		if got := ApprovalEvent(s); got != k || !slices.Contains(EventKinds, got) {
			t.Errorf("ApprovalEvent(%s) = %q, want the registered %q", s, got, k)
		}
	}
	if got := EvidenceEvent("turn_started"); got != "evidence.turn_started" {
		t.Errorf("EvidenceEvent = %q", got)
	}
}

// NewEvent keeps a raw detail as it is, marshals any other, leaves none for
// nil or an unmarshallable one, and records the time in UTC.
func TestNewEvent(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	for _, c := range []struct {
		detail any
		want   string
	}{{json.RawMessage(`{ "a" : 1 }`), `{ "a" : 1 }`}, {map[string]int{"a": 1}, `{"a":1}`}, {nil, ""}, {func() {}, ""}} {
		ev := NewEvent(at, "w", "r", EventFork, c.detail)
		if string(ev.Detail) != c.want || !ev.Time.Equal(at) || ev.Time.Location() != time.UTC ||
			ev.Workspace != "w" || ev.Run != "r" || ev.Kind != EventFork {
			t.Errorf("NewEvent(%T) = %+v (detail %s), want detail %s", c.detail, ev, ev.Detail, c.want)
		}
	}
}

// listed is a package as go list -json describes it.
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	DepOnly    bool
	Standard   bool
}

// TestEventKinds_NoLiterals type-checks every package of the module and
// fails on a string literal used as an EventKind outside event.go: an event
// logged, compared or switched on by a bare string, which the registry, the
// docs and this test would not know.
func TestEventKinds_NoLiterals(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: type-checks the whole module")
	}
	self, _ := filepath.Abs("event.go")
	var found []string
	pkgs := typeCheck(t, "./...", func(fset *token.FileSet, info *types.Info) {
		for e, tv := range info.Types {
			lit, ok := e.(*ast.BasicLit)
			if ok && lit.Kind == token.STRING && isEventKind(tv.Type) {
				if pos := fset.Position(lit.Pos()); pos.Filename != self {
					found = append(found, pos.String())
				}
			}
		}
	})
	if len(pkgs) < 10 {
		t.Fatalf("only %d packages checked", len(pkgs))
	}
	slices.Sort(found)
	for _, at := range found {
		t.Errorf("%s: an event kind written as a string literal: use a tine.Event… constant", at)
	}
}

// typeCheck type-checks the non-test files of the module's packages that
// pattern matches, against their dependencies' export data, passing each
// package's type information to visit.
func typeCheck(t *testing.T, pattern string, visit ...func(*token.FileSet, *types.Info)) []*types.Package {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the module's packages")
	}
	listedPkgs := goList(t, goBin, pattern)
	exports := map[string]string{}
	for _, p := range listedPkgs {
		exports[p.ImportPath] = p.Export
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		if f, ok := exports[path]; ok && f != "" {
			return os.Open(f)
		}
		return nil, errors.New("no export data for " + path)
	})
	var out []*types.Package
	for _, p := range listedPkgs {
		if p.DepOnly || p.Standard {
			continue
		}
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
		pkg, err := (&types.Config{Importer: imp}).Check(p.ImportPath, fset, files, info)
		if err != nil {
			t.Fatalf("type-checking %s: %v", p.ImportPath, err)
		}
		for _, v := range visit {
			v(fset, info)
		}
		out = append(out, pkg)
	}
	return out
}

// goList lists pattern's packages and their dependencies with export data.
func goList(t *testing.T, goBin, pattern string) []listed {
	cmd := exec.Command(goBin, "list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,DepOnly,Standard", pattern)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
}

// isEventKind reports whether t is this package's EventKind.
func isEventKind(t types.Type) bool {
	n, ok := t.(*types.Named)
	return ok && n.Obj().Name() == "EventKind" && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "github.com/tinehq/tine"
}
