package agent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxLineBytes bounds one line of agent output read by [Consume]; a longer
// line is cut there and reported as malformed by the parser.
const MaxLineBytes = 16 << 20

// Consume feeds every line of r through p into ev, recording parse
// warnings, until EOF. It returns only read errors.
func Consume(r io.Reader, p Parser, ev *Evidence) error {
	return ConsumeFunc(r, p, ev, nil)
}

// ConsumeFunc is [Consume] that also calls after (when not nil) with each
// event once ev has recorded it: where a budget watcher charges cost.
func ConsumeFunc(r io.Reader, p Parser, ev *Evidence, after func(Event)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			evs, perr := p.Feed(line)
			ev.Warn(perr)
			for _, e := range evs {
				ev.Add(e)
				if after != nil {
					after(e)
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read agent output: %w", err)
		}
	}
}

// MaxStringBytes bounds one JSON string of a line of agent output: a
// longer one (a final result of many megabytes) is cut there, at a
// character's boundary, and ends in "…", so the line stays valid JSON and
// its event (the result line with the agent's cost and status) is kept.
const MaxStringBytes = 1 << 20

// readLine returns the next line without its newline, its JSON strings
// cut to MaxStringBytes, and at most MaxLineBytes of it; the rest of an
// overlong line is dropped.
func readLine(br *bufio.Reader) ([]byte, error) {
	var sk skimmer
	for {
		chunk, isPrefix, err := br.ReadLine()
		for _, b := range chunk {
			if len(sk.out) >= MaxLineBytes {
				break
			}
			sk.add(b)
		}
		if err != nil || !isPrefix {
			return sk.out, err
		}
	}
}

// skimmer copies a line of JSON byte by byte, cutting each string longer
// than MaxStringBytes: it needs no more memory than what it keeps.
type skimmer struct {
	out     []byte
	inStr   bool
	escape  int // hex digits of a \uXXXX escape still to come
	strLen  int // bytes of the current string kept
	cut     bool
	pending bool // the byte after a backslash decides the escape's length
}

func (s *skimmer) add(b byte) {
	if !s.inStr {
		if b == '"' {
			s.inStr, s.strLen, s.cut = true, 0, false
		}
		s.out = append(s.out, b)
		return
	}
	switch {
	case s.pending:
		s.pending, s.escape = false, 0
		if b == 'u' {
			s.escape = 4
		}
	case s.escape > 0:
		s.escape--
	case b == '\\':
		s.pending = true
		s.cut = s.cut || s.strLen >= MaxStringBytes
	case b == '"':
		s.inStr = false
		if s.cut {
			s.out = append(s.out, "…"...)
		}
		s.out = append(s.out, b)
		return
	default:
		// A boundary: not inside an escape, not a UTF-8 continuation byte.
		if s.strLen >= MaxStringBytes && b&0xC0 != 0x80 {
			s.cut = true
		}
	}
	if s.cut {
		return
	}
	s.out = append(s.out, b)
	s.strLen++
}
