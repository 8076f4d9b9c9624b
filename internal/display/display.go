package display

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Path returns the name s as it is shown to a person. A name that is valid
// UTF-8 of printable characters only (strconv.IsPrint: letters, marks,
// numbers, punctuation, symbols and the ASCII space) and does not begin
// with a double quote is returned unchanged. Any other name — one holding
// a control character (ESC, CR, a newline, a tab), a Unicode format
// character (a bidirectional override, a zero-width joiner), a space other
// than U+0020, or bytes that are not UTF-8, or the empty name — is returned
// Go-quoted (strconv.Quote): "evil\x1b[2K\rM  README.md". The quoted form
// reads back (strconv.Unquote) to exactly the bytes of the name, and no
// unchanged name begins with a quote, so two names never look alike.
func Path(s string) string {
	if s != "" && s[0] != '"' && printable(s, false) {
		return s
	}
	return strconv.Quote(s)
}

// Text returns free text s (a label, a reason, an event's detail, one line
// of output) for one line of a terminal or a table cell: every character
// Path would quote for — C0 controls (newlines and tabs among them), DEL,
// C1 controls (U+0080–U+009F), the bidirectional embeddings, overrides,
// isolates and marks (U+202A–U+202E, U+2066–U+2069, U+200E, U+200F,
// U+061C) and every other format character — is replaced by its Go escape
// (\r, \n, \t, \x1b, \x7f, \u009b, \u202e) and each byte that is not
// UTF-8 by \xNN (so the byte 0x9b, \x9b, and the character U+009B, \u009b,
// stay apart); the rest is left as it is. Unlike Path's quoted form it does not read back exactly
// (a backslash in s is not escaped): it is for reading, not for naming.
func Text(s string) string { return escape(s, false) }

// Block is Text for text shown over several lines (an output tail, a log):
// newlines and tabs are kept, every other control character is escaped.
func Block(s string) string { return escape(s, true) }

// printable reports whether s is valid UTF-8 whose every character is
// printable (or, with lines, a newline or a tab).
func printable(s string, lines bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !keep(r, lines) {
			return false
		}
	}
	return true
}

func keep(r rune, lines bool) bool {
	return strconv.IsPrint(r) || (lines && (r == '\n' || r == '\t'))
}

func escape(s string, lines bool) string {
	if printable(s, lines) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case keep(r, lines):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}
