package egress

import (
	"bufio"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"time"
)

// Record is one refusal: a connection to a destination no rule allows, or
// a name the resolver would not answer.
type Record struct {
	Time  time.Time `json:"time"`
	Kind  string    `json:"kind"`           // "connect" or "dns"
	Host  string    `json:"host,omitempty"` // the name asked for, or the one that resolved to Addr
	Addr  string    `json:"addr,omitempty"`
	Port  uint16    `json:"port,omitempty"`
	Proto string    `json:"proto,omitempty"` // "tcp", "udp"
	// Note says why, where the rules alone do not: a port of the host's
	// loopback that is not forwarded.
	Note string `json:"note,omitempty"`
}

// Append adds rec to the JSON-lines file at path.
func Append(path string, rec Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

// Read returns the records of the file at path; a missing file has none,
// and a line cut short by a crash is skipped.
func Read(path string) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r Record
		if json.Unmarshal(sc.Bytes(), &r) == nil {
			out = append(out, r)
		}
	}
	return out, sc.Err()
}
