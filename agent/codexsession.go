package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tinehq/tine/fstree"
)

// ErrNoCodexSession is returned by [LatestCodexSession] when no session
// was started in the directory.
var ErrNoCodexSession = errors.New("no codex session")

// CodexSession is one of Codex's sessions, as its rollout file records it.
type CodexSession struct {
	ID       string    // the thread id codex exec resume and fork take
	Rollout  string    // its file, CODEX_HOME/sessions/YYYY/MM/DD/rollout-TIME-ID.jsonl
	Cwd      string    // where it was started
	Modified time.Time // the rollout's last write: the session's last activity
}

// LatestCodexSession returns the session of codexHome's store most
// recently active (by its rollout's time) that was started in dir or a
// directory below it; sessions skip reports true for are left out.
func LatestCodexSession(codexHome, dir string, skip func(id string) bool) (CodexSession, error) {
	dir = filepath.Clean(dir)
	root := filepath.Join(codexHome, "sessions")
	files, _ := filepath.Glob(filepath.Join(root, "*", "*", "*", "rollout-*.jsonl"))
	var best CodexSession
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil || !st.ModTime().After(best.Modified) {
			continue
		}
		s, err := readCodexMeta(f)
		if err != nil || (skip != nil && skip(s.ID)) || !(filepath.IsAbs(s.Cwd) && fstree.Within(s.Cwd, dir)) {
			continue
		}
		s.Rollout, s.Modified = f, st.ModTime()
		best = s
	}
	if best.ID == "" {
		return best, fmt.Errorf("%w started in %s or below it, in %s", ErrNoCodexSession, dir, root)
	}
	return best, nil
}

// readCodexMeta reads the session id and directory of a rollout's first
// line (type session_meta).
func readCodexMeta(path string) (CodexSession, error) {
	f, err := os.Open(path)
	if err != nil {
		return CodexSession{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	if !sc.Scan() {
		return CodexSession{}, fmt.Errorf("%s: empty: %w", path, ErrNoCodexSession)
	}
	var l struct {
		Type    string `json:"type"`
		Payload struct {
			ID  string `json:"id"`
			Cwd string `json:"cwd"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Type != "session_meta" || l.Payload.ID == "" {
		return CodexSession{}, fmt.Errorf("%s: no session_meta first: %w", path, ErrNoCodexSession)
	}
	return CodexSession{ID: l.Payload.ID, Cwd: l.Payload.Cwd}, nil
}
