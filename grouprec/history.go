package grouprec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tinehq/tine/layout"
	"golang.org/x/sys/unix"
)

// History is the state directory's history.jsonl: one Resolution a line,
// oldest first.
type History struct{ path string }

// HistoryIn returns the history of the state directory laid out as l.
func HistoryIn(l layout.Layout) History { return History{path: l.History()} }

// Append adds line h, holding an exclusive lock on the file so that lines
// of concurrent writers (other processes too) never interleave.
func (hs History) Append(h Resolution) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(hs.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", filepath.Base(hs.path), err)
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	_, err = f.Write(append(b, '\n'))
	return err
}

// Read returns the lines, oldest first; none when there is no history yet.
// On a line that cannot be decoded it returns the lines before it and the
// error.
func (hs History) Read() ([]Resolution, error) {
	b, err := os.ReadFile(hs.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Resolution
	dec := json.NewDecoder(bytes.NewReader(b))
	for dec.More() {
		var h Resolution
		if err := dec.Decode(&h); err != nil {
			return out, fmt.Errorf("%s: %w", filepath.Base(hs.path), err)
		}
		out = append(out, h)
	}
	return out, nil
}
