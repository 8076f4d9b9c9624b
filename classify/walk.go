package classify

import (
	"cmp"
	"errors"
	"maps"
	"path"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// maxDepth bounds nesting (sh -c inside sh -c, wrappers of wrappers).
const maxDepth = 8

// finding is the effect of one simple command.
type finding struct {
	scope  Scope
	cats   []Category
	deny   bool       // unbounded: refused in every role
	reason string     // what the command does, e.g. "npm update upgrades dependencies"
	hint   []Category // categories a prompt may add (effect not visible here)
}

// result is a finding with the source text of the command that produced it.
type result struct {
	finding
	cmd string
}

// arg is one expanded word.
type arg struct {
	s       string // the value; unknown expansions are kept as "$NAME"
	dyn     bool   // some part is unknown at classification time
	lead    bool   // the value starts with an unknown part
	fetched string // a program that downloads part of the value ($(curl …), <(curl …))
}

// input is what a command reads on stdin, when the command line shows it.
type input struct {
	text    string
	known   bool
	fetched bool   // the stdin is a download
	from    string // the program that downloads it
}

// call is one simple command after wrappers are stripped.
type call struct {
	w     *walker
	name  string
	args  []arg
	env   map[string]string
	in    *input
	many  bool // runs over many inputs (xargs, find -exec, a loop)
	xargs bool // some arguments come from stdin
	text  string
}

// walker visits a parsed command line and collects findings.
type walker struct {
	src     string
	vars    map[string]string
	cwdWild bool // cd moved outside any workspace (/, ~, unknown)
	many    int
	depth   int
	out     []result
}

var errTooDeep = errors.New("nested too deeply")

func analyze(src string) ([]result, error) {
	w := &walker{vars: map[string]string{}}
	if err := w.parseAndWalk(src); err != nil {
		return nil, err
	}
	return w.out, nil
}

// parsers reuses bash parsers; building one costs more than a parse.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

// parseFile parses bash, falling back to zsh (macOS agents' shell).
func parseFile(src string) (*syntax.File, error) {
	p := parsers.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parsers.Put(p)
	if err == nil {
		return f, nil
	}
	if f2, err2 := syntax.NewParser(syntax.Variant(syntax.LangZsh)).Parse(strings.NewReader(src), ""); err2 == nil {
		return f2, nil
	}
	return nil, err
}

// parseAndWalk parses src (a whole line or a nested sh -c string) and
// walks it with src as the text for Commands.
func (w *walker) parseAndWalk(src string) error {
	if w.depth >= maxDepth {
		return errTooDeep
	}
	f, err := parseFile(src)
	if err != nil {
		return err
	}
	saved := w.src
	w.src, w.depth = src, w.depth+1
	w.stmts(f.Stmts, nil)
	w.src, w.depth = saved, w.depth-1
	return nil
}

// nested walks a string that a command will run as shell code.
func (w *walker) nested(c *call, src string) {
	if err := w.parseAndWalk(src); err != nil {
		w.emit(c.text, irr("runs shell code that could not be read ("+firstLine(err.Error())+")"))
	}
}

func firstLine(s string) string { return strings.SplitN(s, "\n", 2)[0] }

func (w *walker) emit(text string, f finding) {
	w.out = append(w.out, result{finding: f, cmd: text})
}

func (w *walker) text(n syntax.Node) string {
	a, b := int(n.Pos().Offset()), int(n.End().Offset())
	if a < 0 || b > len(w.src) || a >= b {
		return ""
	}
	return strings.TrimSpace(w.src[a:b])
}

func (w *walker) stmts(ss []*syntax.Stmt, in *input) {
	for _, s := range ss {
		w.stmt(s, in)
	}
}

func (w *walker) stmt(s *syntax.Stmt, in *input) {
	if s == nil {
		return
	}
	if r := w.redirects(s); r != nil {
		in = r
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		w.call(c, s, in)
	case *syntax.BinaryCmd:
		w.binary(c, in)
	case *syntax.Subshell:
		w.scoped(func() { w.stmts(c.Stmts, in) })
	case *syntax.Block:
		w.stmts(c.Stmts, in)
	case *syntax.IfClause:
		w.ifClause(c)
	case *syntax.WhileClause:
		w.loop(func() { w.stmts(c.Cond, nil); w.stmts(c.Do, nil) })
	case *syntax.ForClause:
		w.substs(c.Loop)
		w.loop(func() { w.stmts(c.Do, nil) })
	case *syntax.CaseClause:
		w.caseClause(c)
	case *syntax.FuncDecl:
		w.stmt(c.Body, nil)
	case *syntax.DeclClause:
		w.decl(c)
	case *syntax.TimeClause:
		w.stmt(c.Stmt, in)
	case *syntax.CoprocClause:
		w.stmt(c.Stmt, in)
	case nil:
	default:
		w.substs(c)
	}
}

func (w *walker) binary(c *syntax.BinaryCmd, in *input) {
	if c.Op != syntax.Pipe && c.Op != syntax.PipeAll {
		w.stmt(c.X, in)
		w.stmt(c.Y, nil)
		return
	}
	w.stmt(c.X, in)
	w.stmt(c.Y, w.produced(c.X))
}

func (w *walker) ifClause(c *syntax.IfClause) {
	for ; c != nil; c = c.Else {
		w.stmts(c.Cond, nil)
		w.stmts(c.Then, nil)
	}
}

func (w *walker) caseClause(c *syntax.CaseClause) {
	w.word(c.Word)
	for _, it := range c.Items {
		w.stmts(it.Stmts, nil)
	}
}

func (w *walker) decl(c *syntax.DeclClause) {
	for _, a := range c.Args {
		if a.Name != nil {
			w.vars[a.Name.Value] = w.assign(a).s
		} else if a.Value != nil {
			w.word(a.Value)
		}
	}
}

// scoped runs f with cwd and variables restored afterwards (a subshell).
func (w *walker) scoped(f func()) {
	vars, wild := maps.Clone(w.vars), w.cwdWild
	f()
	w.vars, w.cwdWild = vars, wild
}

func (w *walker) loop(f func()) {
	w.many++
	f()
	w.many--
}

// substs walks the command substitutions inside any node.
func (w *walker) substs(n syntax.Node) {
	if n == nil {
		return
	}
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			w.stmts(n.Stmts, nil)
			return false
		case *syntax.ProcSubst:
			w.stmts(n.Stmts, nil)
			return false
		}
		return true
	})
}

func (w *walker) call(ce *syntax.CallExpr, s *syntax.Stmt, in *input) {
	env := map[string]string{}
	for _, a := range ce.Assigns {
		if a.Name != nil {
			env[a.Name.Value] = w.assign(a).s
		}
	}
	if len(ce.Args) == 0 {
		maps.Copy(w.vars, env)
		return
	}
	args := make([]arg, len(ce.Args))
	for i, wd := range ce.Args {
		args[i] = w.word(wd)
	}
	c := &call{w: w, env: env, in: in, many: w.many > 0, text: w.text(s)}
	w.exec(c, args)
}

func (w *walker) assign(a *syntax.Assign) arg {
	if a.Value == nil {
		if a.Array != nil {
			w.substs(a.Array)
		}
		return arg{}
	}
	return w.word(a.Value)
}

// exec strips wrappers from argv and classifies what is left.
func (w *walker) exec(c *call, argv []arg) {
	for range maxDepth {
		if len(argv) == 0 {
			return
		}
		wrap, ok := wrappers[cmdName(argv[0].s)]
		if !ok {
			break
		}
		rest, ok := wrap(c, argv[1:])
		if !ok {
			break
		}
		argv = rest
	}
	if len(argv) == 0 {
		return
	}
	c.name, c.args = cmdName(argv[0].s), argv[1:]
	if argv[0].lead {
		// "$SUDO rm -rf x": the variable may be a wrapper or empty, so the
		// rest is judged as a command too.
		w.emit(c.text, rev("runs a program named by a variable ("+argv[0].s+")").hints(forkWorthy...))
		if len(argv) > 1 {
			c.sub(argv[1:])
		}
		return
	}
	w.emit(c.text, classifyCall(c))
}

// sub returns a copy of c for running another argv (wrappers, -exec).
func (c *call) sub(argv []arg) {
	n := *c
	n.env = maps.Clone(c.env)
	c.w.exec(&n, argv)
}

// cmdName is the program name: its base name without an npx-style
// "@version" suffix ("./node_modules/.bin/prisma@5" -> "prisma").
func cmdName(s string) string {
	s = path.Base(s)
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		s = s[:i]
	}
	return s
}

// word expands a word as far as the command line shows it.
func (w *walker) word(wd *syntax.Word) arg {
	var a arg
	if wd == nil {
		return a
	}
	var b strings.Builder
	for _, p := range wd.Parts {
		w.part(p, &b, &a, false)
	}
	a.s = b.String()
	return a
}

func (w *walker) part(p syntax.WordPart, b *strings.Builder, a *arg, dq bool) {
	switch p := p.(type) {
	case *syntax.Lit:
		b.WriteString(unescape(p.Value, dq))
	case *syntax.SglQuoted:
		b.WriteString(p.Value)
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			w.part(q, b, a, true)
		}
	case *syntax.ParamExp:
		w.param(p, b, a)
	case *syntax.CmdSubst:
		w.stmts(p.Stmts, nil)
		w.unknown(b, a, "$(…)")
		a.fetched = cmp.Or(a.fetched, w.fetcher(p.Stmts))
	case *syntax.ProcSubst:
		w.stmts(p.Stmts, nil)
		b.WriteString("/dev/fd/63")
		a.fetched = cmp.Or(a.fetched, w.fetcher(p.Stmts))
	case *syntax.ArithmExp:
		w.substs(p)
		w.unknown(b, a, "$((…))")
	case *syntax.ExtGlob:
		b.WriteString(p.Op.String() + p.Pattern.Value + ")")
	default:
		w.substs(p)
		w.unknown(b, a, "$…")
	}
}

func (w *walker) unknown(b *strings.Builder, a *arg, text string) {
	if b.Len() == 0 {
		a.lead = true
	}
	a.dyn = true
	b.WriteString(text)
}

// param expands $NAME when the line assigned it, or a few well-known
// names; anything else stays unknown.
func (w *walker) param(p *syntax.ParamExp, b *strings.Builder, a *arg) {
	if p.Param == nil {
		w.unknown(b, a, "$…")
		return
	}
	name := p.Param.Value
	plain := !p.Excl && !p.Length && p.Index == nil && p.Slice == nil && p.Repl == nil && p.Exp == nil
	if v, ok := w.lookup(name); ok && plain {
		b.WriteString(v)
		return
	}
	if p.Exp != nil {
		w.word(p.Exp.Word)
	}
	w.unknown(b, a, "$"+name)
}

func (w *walker) lookup(name string) (string, bool) {
	if v, ok := w.vars[name]; ok {
		return v, true
	}
	switch name {
	case "HOME":
		return "~", true
	case "PWD":
		return ".", true
	}
	return "", false
}

// unescape drops the backslashes the shell would remove.
func unescape(s string, dq bool) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && (!dq || strings.IndexByte("$`\"\\\n", s[i+1]) >= 0) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
