// Package freezerec is the record a command writes before it freezes a
// run (runs/RUN/frozen.json): who froze it, so that a freeze whose
// freezer died is known for one and thawed. The freezer and its watchdog
// (supervisor) write and read it; tine doctor (engine) only reads it.
package freezerec

import (
	"encoding/json"
	"os"
	"time"

	"github.com/tinehq/tine/internal/atomicfile"
	"github.com/tinehq/tine/internal/procfs"
)

// Record is what a freezer writes before freezing a run's group.
type Record struct {
	Pid      int       `json:"pid"`      // the freezer
	Start    string    `json:"start"`    // its start time (procfs.Stat.StartTime)
	Watchdog int       `json:"watchdog"` // the watchdog's pid, 0 if none could start
	At       time.Time `json:"at"`
}

// Alive reports whether the freezer the record names still runs (the
// same process: its start time tells a reused pid).
func (r Record) Alive() bool { return procfs.Alive("", r.Pid, r.Start) }

// Write replaces the record at path with r.
func Write(path string, r Record) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b, 0o600)
}

// Read returns the record at path; an error wrapping fs.ErrNotExist when
// there is none.
func Read(path string) (Record, error) {
	var r Record
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(b, &r)
}
