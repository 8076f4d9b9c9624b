package classify

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// redirects records the effect of a statement's redirections and returns
// its stdin when a heredoc, here-string or file redirect supplies it.
func (w *walker) redirects(s *syntax.Stmt) *input {
	var in *input
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			in = &input{text: w.word(r.Hdoc).s, known: true}
		case syntax.WordHdoc:
			in = &input{text: w.word(r.Word).s, known: true}
		case syntax.RdrIn:
			w.word(r.Word)
			in = &input{}
		case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.RdrAll, syntax.AppAll, syntax.RdrInOut:
			w.output(s, r)
		default:
			w.word(r.Word)
		}
	}
	return in
}

var quietTargets = map[string]bool{
	"/dev/null": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/tty": true,
}

// output records a write redirection.
func (w *walker) output(s *syntax.Stmt, r *syntax.Redirect) {
	t := w.word(r.Word)
	text := w.text(s)
	switch {
	case quietTargets[t.s] || strings.HasPrefix(t.s, "/dev/fd/"):
	case isBlockDevice(t.s):
		w.emit(text, denyf("writes to the device "+t.s))
	case (r.Op == syntax.RdrOut || r.Op == syntax.RdrClob || r.Op == syntax.RdrAll) && truncates(s):
		w.emit(text, w.removal("truncate", []arg{t}, true))
	case outsideWorkspace(t.s):
		w.emit(text, irr("writes "+t.s+" outside the workspace"))
	default:
		w.emit(text, rev("writes "+t.s))
	}
}

func isBlockDevice(p string) bool {
	for _, d := range []string{"/dev/sd", "/dev/hd", "/dev/nvme", "/dev/disk", "/dev/mmcblk", "/dev/vd", "/dev/xvd"} {
		if strings.HasPrefix(p, d) {
			return true
		}
	}
	return false
}

// truncates reports whether s writes nothing to its redirect target:
// "> f", ": > f", "true > f", "cat /dev/null > f", "echo -n > f".
func truncates(s *syntax.Stmt) bool {
	if s.Cmd == nil {
		return true
	}
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 {
		return ok
	}
	words := make([]string, len(ce.Args))
	for i, a := range ce.Args {
		words[i] = a.Lit()
	}
	switch strings.Join(words, " ") {
	case ":", "true", "cat /dev/null", "echo -n", "printf ", "printf ''":
		return true
	}
	return false
}

// produced is what stmt writes to a pipe, when the line shows it.
func (w *walker) produced(s *syntax.Stmt) *input {
	if f := w.fetcher([]*syntax.Stmt{s}); f != "" {
		return &input{fetched: true, from: f}
	}
	ce, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(ce.Args) == 0 {
		return &input{}
	}
	args := make([]string, 0, len(ce.Args))
	for _, a := range ce.Args {
		args = append(args, w.peek(a))
	}
	switch cmdName(args[0]) {
	case "echo", "printf":
		return &input{text: strings.Join(dropFlags(args[1:]), " "), known: true}
	case "cat":
		if len(args) == 1 {
			return heredocOf(w, s)
		}
	}
	return &input{}
}

// peek expands a word without recording findings (it was walked already).
func (w *walker) peek(wd *syntax.Word) string {
	saved := w.out
	a := w.word(wd)
	w.out = saved
	return a.s
}

func heredocOf(w *walker, s *syntax.Stmt) *input {
	for _, r := range s.Redirs {
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			return &input{text: w.peek(r.Hdoc), known: true}
		case syntax.WordHdoc:
			return &input{text: w.peek(r.Word), known: true}
		}
	}
	return &input{}
}

func dropFlags(args []string) []string {
	for len(args) > 0 && strings.HasPrefix(args[0], "-") && len(args[0]) > 1 {
		args = args[1:]
	}
	return args
}
