package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/engine"
)

// LogServices lists the services of run r that have a log, sorted; with
// only (one name), just that one, which must have a log.
func (m *Manager) LogServices(r engine.Ref, only ...string) ([]string, error) {
	if len(only) == 1 {
		if _, err := os.Stat(m.logPath(r, only[0])); err != nil || !serviceName(only[0]) {
			return nil, fmt.Errorf("%s has no log of a service %q: %w", r.Run.Name, only[0], tine.ErrNotFound)
		}
		return only, nil
	}
	ents, err := os.ReadDir(m.LogDir(r))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	out := []string{}
	for _, ent := range ents {
		if name, ok := strings.CutSuffix(ent.Name(), ".log"); ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadLog returns the whole lines of service's log of run r from byte
// offset on, at most about limit bytes of them (a longer line comes
// whole), and the offset after them: a partial last line waits for its
// newline.
func (m *Manager) ReadLog(r engine.Ref, service string, offset int64, limit int) (string, int64, error) {
	if !serviceName(service) {
		return "", offset, fmt.Errorf("%s has no log of a service %q: %w", r.Run.Name, service, tine.ErrNotFound)
	}
	f, err := os.Open(m.logPath(r, service))
	if err != nil {
		return "", offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return "", offset, err
	}
	var b strings.Builder
	br := bufio.NewReader(f)
	for b.Len() < limit {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		b.WriteString(line)
	}
	return b.String(), offset + int64(b.Len()), nil
}

func (m *Manager) logPath(r engine.Ref, service string) string {
	return m.lay.Run(r.Workspace.ID, r.Run.ID).Log(service)
}

// serviceName reports whether s can name a service's log: a name, not a
// path that leads elsewhere.
func serviceName(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, "/\x00")
}
