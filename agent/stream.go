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

// readLine returns the next line without its newline, at most
// MaxLineBytes of it; the rest of an overlong line is dropped.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line) < MaxLineBytes {
			line = append(line, chunk[:min(len(chunk), MaxLineBytes-len(line))]...)
		}
		if err != nil || !isPrefix {
			return line, err
		}
	}
}
