package config

import (
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// positions maps the keys of a TOML document to the lines they are written
// on. BurntSushi/toml keeps positions to itself (and keys them without the
// index of an array element), so tine finds them with a scan of its own.
//
// The scan is lenient: it runs on documents the toml package has already
// parsed, so it only has to follow valid TOML, and on anything else it
// moves on a byte at a time rather than fail. A key it cannot find has
// line 0.
type positions struct {
	// at maps an indexed key, as toml.Key prints it ("account.1.name",
	// `agent."a.b".kind`), to the line of its first occurrence.
	at map[string]int
	// bare maps a key without array indices ("service.name", as
	// toml.MetaData reports it) to the lines of every occurrence, in order.
	bare map[string][]int
}

// line is the line of the indexed key path, or of its nearest ancestor the
// scan found, or 0.
func (p *positions) line(path ...string) int {
	for n := len(path); n > 0; n-- {
		if l, ok := p.at[toml.Key(path[:n]).String()]; ok {
			return l
		}
	}
	return 0
}

// nth is the line of the n-th occurrence (from 0) of a key without
// indices, or of its last occurrence if there are fewer, or 0.
func (p *positions) nth(key string, n int) int {
	ls := p.bare[key]
	switch {
	case len(ls) == 0:
		return 0
	case n < len(ls):
		return ls[n]
	default:
		return ls[len(ls)-1]
	}
}

// piece is one part of a key path: a key, or an array index.
type piece struct {
	name  string
	index bool
}

type keyPath []piece

func (p keyPath) with(names ...string) keyPath {
	q := make(keyPath, len(p), len(p)+len(names))
	copy(q, p)
	for _, n := range names {
		q = append(q, piece{name: n})
	}
	return q
}

func (p keyPath) at(i int) keyPath {
	q := make(keyPath, len(p), len(p)+1)
	copy(q, p)
	return append(q, piece{name: strconv.Itoa(i), index: true})
}

func (p keyPath) indexed() string {
	k := make(toml.Key, len(p))
	for i, pc := range p {
		k[i] = pc.name
	}
	return k.String()
}

func (p keyPath) bare() string {
	k := make(toml.Key, 0, len(p))
	for _, pc := range p {
		if !pc.index {
			k = append(k, pc.name)
		}
	}
	return k.String()
}

// scanner walks a TOML document recording where each key is.
type scanner struct {
	s      string
	i      int
	line   int
	pos    *positions
	arrays map[string]int // indexed key of an array of tables → elements so far
}

// scan records the position of every table header and key in doc.
func scan(doc string) *positions {
	sc := &scanner{
		s:      strings.TrimPrefix(doc, "\uFEFF"),
		line:   1,
		pos:    &positions{at: map[string]int{}, bare: map[string][]int{}},
		arrays: map[string]int{},
	}
	var table keyPath
	for sc.i < len(sc.s) {
		start := sc.i
		sc.space(true)
		switch {
		case sc.i >= len(sc.s):
		case sc.s[sc.i] == '[':
			table = sc.header()
		default:
			sc.keyValue(table)
		}
		if sc.i == start {
			sc.next()
		}
	}
	return sc.pos
}

func (sc *scanner) peek() byte {
	if sc.i < len(sc.s) {
		return sc.s[sc.i]
	}
	return 0
}

func (sc *scanner) next() {
	if sc.i < len(sc.s) {
		if sc.s[sc.i] == '\n' {
			sc.line++
		}
		sc.i++
	}
}

func (sc *scanner) skip(n int) {
	for range n {
		sc.next()
	}
}

func (sc *scanner) record(p keyPath, line int) {
	k := p.indexed()
	if _, ok := sc.pos.at[k]; !ok {
		sc.pos.at[k] = line
	}
	b := p.bare()
	sc.pos.bare[b] = append(sc.pos.bare[b], line)
}

// space skips blanks and comments, and newlines too if newlines is set.
func (sc *scanner) space(newlines bool) {
	for sc.i < len(sc.s) {
		switch sc.s[sc.i] {
		case ' ', '\t', '\r':
			sc.next()
		case '\n':
			if !newlines {
				return
			}
			sc.next()
		case '#':
			for sc.i < len(sc.s) && sc.s[sc.i] != '\n' {
				sc.next()
			}
		default:
			return
		}
	}
}

// header reads a [table] or [[array]] header and returns its path.
func (sc *scanner) header() keyPath {
	line := sc.line
	sc.next()
	array := sc.peek() == '['
	if array {
		sc.next()
	}
	names := sc.keys()
	sc.space(false)
	for sc.peek() == ']' {
		sc.next()
	}
	var p keyPath
	for j, n := range names {
		p = p.with(n)
		k := p.indexed()
		if j == len(names)-1 && array {
			if _, ok := sc.pos.at[k]; !ok {
				sc.pos.at[k] = line
			}
			p = p.at(sc.arrays[k])
			sc.arrays[k]++
		} else if n := sc.arrays[k]; n > 0 {
			p = p.at(n - 1)
		}
	}
	if len(p) > 0 {
		sc.record(p, line)
	}
	return p
}

// keyValue reads key = value in table.
func (sc *scanner) keyValue(table keyPath) {
	line := sc.line
	names := sc.keys()
	sc.space(false)
	if len(names) == 0 || sc.peek() != '=' {
		for sc.i < len(sc.s) && sc.s[sc.i] != '\n' {
			sc.next()
		}
		return
	}
	sc.next()
	p := table.with(names...)
	sc.record(p, line)
	sc.value(p)
}

// keys reads a dotted key.
func (sc *scanner) keys() []string {
	var names []string
	for {
		sc.space(false)
		n, ok := sc.key()
		if !ok {
			return names
		}
		names = append(names, n)
		sc.space(false)
		if sc.peek() != '.' {
			return names
		}
		sc.next()
	}
}

// key reads one part of a key: bare, "basic" or 'literal'.
func (sc *scanner) key() (string, bool) {
	switch c := sc.peek(); {
	case c == '"':
		return sc.str('"'), true
	case c == '\'':
		return sc.str('\''), true
	}
	start := sc.i
	for sc.i < len(sc.s) && bareKeyByte(sc.s[sc.i]) {
		sc.next()
	}
	return sc.s[start:sc.i], sc.i > start
}

func bareKeyByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c >= 0x80
}

// str reads a string quoted by q (" or '), one-line or multi-line, and
// returns its contents, unescaped as well as a one-line key needs.
func (sc *scanner) str(q byte) string {
	three := strings.Repeat(string(q), 3)
	if strings.HasPrefix(sc.s[sc.i:], three) {
		sc.skip(3)
		start := sc.i
		for sc.i < len(sc.s) && !strings.HasPrefix(sc.s[sc.i:], three) {
			if q == '"' && sc.s[sc.i] == '\\' {
				sc.next()
			}
			sc.next()
		}
		end := min(sc.i, len(sc.s))
		sc.skip(3)
		for n := 0; n < 2 && sc.peek() == q; n++ { // """a"""" ends in a quote
			sc.next()
			end++
		}
		return sc.s[start:min(end, len(sc.s))]
	}
	sc.next()
	start := sc.i
	for sc.i < len(sc.s) && sc.s[sc.i] != q && sc.s[sc.i] != '\n' {
		if q == '"' && sc.s[sc.i] == '\\' && sc.i+1 < len(sc.s) && sc.s[sc.i+1] != '\n' {
			sc.next()
		}
		sc.next()
	}
	raw := sc.s[start:sc.i]
	if sc.peek() == q {
		sc.next()
	}
	if q == '"' && strings.Contains(raw, `\`) {
		if u, err := strconv.Unquote(`"` + raw + `"`); err == nil {
			return u
		}
	}
	return raw
}

// value reads the value of the key at p, recording the keys of inline
// tables in it.
func (sc *scanner) value(p keyPath) {
	sc.space(false)
	switch sc.peek() {
	case '"', '\'':
		sc.str(sc.peek())
	case '[':
		sc.array(p)
	case '{':
		sc.inline(p)
	default:
		for sc.i < len(sc.s) && !strings.ContainsRune(",]}#\n", rune(sc.s[sc.i])) {
			sc.next()
		}
	}
}

func (sc *scanner) array(p keyPath) {
	sc.next()
	for n := 0; sc.i < len(sc.s); {
		sc.space(true)
		switch sc.peek() {
		case ']':
			sc.next()
			return
		case ',':
			sc.next()
			n++
			continue
		}
		start := sc.i
		sc.value(p.at(n))
		if sc.i == start {
			sc.next()
		}
	}
}

func (sc *scanner) inline(p keyPath) {
	sc.next()
	for sc.i < len(sc.s) {
		sc.space(true)
		switch sc.peek() {
		case '}':
			sc.next()
			return
		case ',':
			sc.next()
			continue
		}
		start, line := sc.i, sc.line
		names := sc.keys()
		sc.space(false)
		if len(names) > 0 && sc.peek() == '=' {
			sc.next()
			q := p.with(names...)
			sc.record(q, line)
			sc.value(q)
		}
		if sc.i == start {
			sc.next()
		}
	}
}
