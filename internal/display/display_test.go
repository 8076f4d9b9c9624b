package display

import (
	"strconv"
	"testing"
)

func TestPath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"README.md", "README.md"},
		{"dir/with space/ünïcödé ✓.txt", "dir/with space/ünïcödé ✓.txt"},
		{"evil\x1b[2K\rM  README.md", `"evil\x1b[2K\rM  README.md"`},
		{"line\nbreak", `"line\nbreak"`},
		{"tab\there", `"tab\there"`},
		{"bad\xffutf8", `"bad\xffutf8"`},
		{"rtl\u202egnp.exe", `"rtl\u202egnp.exe"`},
		{"nb\u00a0space", `"nb\u00a0space"`},
		{`"quoted"`, `"\"quoted\""`},
		{"", `""`},
	} {
		got := Path(c.in)
		if got != c.want {
			t.Errorf("Path(%q) = %s, want %s", c.in, got, c.want)
		}
		if got != c.in {
			if back, err := strconv.Unquote(got); err != nil || back != c.in {
				t.Errorf("Path(%q) = %s does not read back: %q, %v", c.in, got, back, err)
			}
		}
	}
}

func TestText(t *testing.T) {
	for _, c := range []struct{ in, text, block string }{
		{"plain words", "plain words", "plain words"},
		{"a\tb\nc", `a\tb\nc`, "a\tb\nc"},
		{"\x1b[31mred\x1b[0m\r", `\x1b[31mred\x1b[0m\r`, `\x1b[31mred\x1b[0m\r`},
		{"bad\xff\xfe", `bad\xff\xfe`, `bad\xff\xfe`},
		{"bell\a del\x7f", `bell\a del\x7f`, `bell\a del\x7f`},
		{"rlo\u202e zwj\u200d", `rlo\u202e zwj\u200d`, `rlo\u202e zwj\u200d`},
		{`back\slash "q"`, `back\slash "q"`, `back\slash "q"`},
	} {
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%q) = %q, want %q", c.in, got, c.text)
		}
		if got := Block(c.in); got != c.block {
			t.Errorf("Block(%q) = %q, want %q", c.in, got, c.block)
		}
	}
}

func BenchmarkPath(b *testing.B) {
	for _, s := range []string{"src/internal/server/handler_test.go", "evil\x1b[2K\rM  README.md"} {
		b.Run(strconv.Itoa(len(s)), func(b *testing.B) {
			for b.Loop() {
				Path(s)
			}
		})
	}
}

// Every character that can move a terminal's cursor, start an escape
// sequence or reorder what a person reads is escaped, in Text, Block and
// Path alike: C0, DEL, C1 (U+009B is a CSI on some terminals), the
// bidirectional embeddings, overrides, isolates and marks.
func TestText_TerminalUnsafe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"\x00", `\x00`}, {"\x1b", `\x1b`}, {"\x7f", `\x7f`},
		{"\u0080", `\u0080`}, {"\u0085", `\u0085`}, {"\u009b", `\u009b`}, {"\u009f", `\u009f`},
		{"\u202a", `\u202a`}, {"\u202b", `\u202b`}, {"\u202c", `\u202c`}, {"\u202d", `\u202d`}, {"\u202e", `\u202e`},
		{"\u2066", `\u2066`}, {"\u2067", `\u2067`}, {"\u2068", `\u2068`}, {"\u2069", `\u2069`},
		{"\u200e", `\u200e`}, {"\u200f", `\u200f`}, {"\u061c", `\u061c`},
		{"\u2028", `\u2028`}, {"\ufeff", `\ufeff`}, {"\x9b", `\x9b`},
	} {
		in := "invoice" + c.in + "fdp.sh"
		want := "invoice" + c.want + "fdp.sh"
		if got := Text(in); got != want {
			t.Errorf("Text(%q) = %s, want %s", in, got, want)
		}
		if got := Block(in); got != want {
			t.Errorf("Block(%q) = %s, want %s", in, got, want)
		}
		if got := Path(in); got != `"`+want+`"` {
			t.Errorf("Path(%q) = %s, want %q", in, got, want)
		}
	}
}
