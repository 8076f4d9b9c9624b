package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"

	"github.com/tinehq/tine/fstree"
)

// Claude Code 2.1 keeps each session's transcript in
// CONFIG/projects/PROJECT/SESSION.jsonl, where CONFIG is $CLAUDE_CONFIG_DIR
// or ~/.claude and PROJECT names the directory the session was started in
// (see [ClaudeProjectName]). Each line is a JSON object; the conversation's
// lines carry "cwd", and a "cost-state" line written at the end of each
// claude process holds the session's running totalCostUSD, which a
// session resumed with --fork-session carries on from.

// ErrNoClaudeSession is returned when Claude's store has no such session
// (or none for a directory).
var ErrNoClaudeSession = errors.New("no such claude session")

// claudeProjectMax is the length Claude Code cuts a project's name at,
// adding a hash of the whole path.
const claudeProjectMax = 200

// ClaudeSession is a session in Claude Code's store.
type ClaudeSession struct {
	ID         string    `json:"id"`
	Transcript string    `json:"transcript"` // its .jsonl file
	Cwd        string    `json:"cwd"`        // the directory it was started in
	Modified   time.Time `json:"modified"`   // when its transcript was last written
	// CostUSD is the running total its last cost-state line recorded: what
	// a claude resuming it adds to its own total_cost_usd.
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// ClaudeConfigDir is the directory Claude Code keeps its sessions in for
// an agent whose whole environment is env (in a run: its owner's HOME,
// the run's variables and the agent's own): its last CLAUDE_CONFIG_DIR,
// else .claude in its last HOME (else in this process's home).
func ClaudeConfigDir(env []string) string {
	if v := lastEnv(env, "CLAUDE_CONFIG_DIR"); v != "" {
		return v
	}
	return filepath.Join(envHome(env), ".claude")
}

// lastEnv is the value of the last non-empty key=... of env, "" without
// one.
func lastEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok && v != "" {
			return v
		}
	}
	return ""
}

// envHome is env's HOME, else this process's home.
func envHome(env []string) string {
	if h := lastEnv(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// ClaudeProjectName is the name of the directory under CONFIG/projects
// that holds the transcripts of sessions started in dir, as Claude Code
// 2.1 makes it: every UTF-16 code unit of dir that is not an ASCII letter
// or digit becomes '-'; a name longer than 200 is cut there and followed
// by '-' and the base-36 of the absolute value of a 32-bit hash of dir
// (h = h*31 + unit over its UTF-16 code units).
func ClaudeProjectName(dir string) string {
	units := utf16.Encode([]rune(dir))
	var b strings.Builder
	var h int32
	for _, u := range units {
		h = h*31 + int32(u)
		if u < 0x80 && isAlnum(byte(u)) {
			b.WriteByte(byte(u))
		} else {
			b.WriteByte('-')
		}
	}
	name := b.String()
	if len(name) <= claudeProjectMax {
		return name
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return name[:claudeProjectMax] + "-" + strconv.FormatInt(abs, 36)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// validSessionID refuses ids that could name another file.
func validSessionID(id string) bool {
	return id != "" && !strings.ContainsAny(id, "/\\*?[") && id != "." && id != ".."
}

// FindClaudeSession returns session id from configDir's store, wherever it
// was started (claude --resume finds a session in any project).
func FindClaudeSession(configDir, id string) (ClaudeSession, error) {
	if !validSessionID(id) {
		return ClaudeSession{}, fmt.Errorf("claude session %q: %w", id, ErrNoClaudeSession)
	}
	matches, _ := filepath.Glob(filepath.Join(configDir, "projects", "*", id+".jsonl"))
	for _, m := range matches {
		if s, err := readClaudeSession(m, true); err == nil {
			return s, nil
		}
	}
	return ClaudeSession{}, fmt.Errorf("claude session %s: %w in %s", id, ErrNoClaudeSession, filepath.Join(configDir, "projects"))
}

// LatestClaudeSession returns the newest session (by its transcript's
// time) started in dir or a directory below it, from configDir's store;
// sessions skip reports true for are left out.
func LatestClaudeSession(configDir, dir string, skip func(id string) bool) (ClaudeSession, error) {
	dir = filepath.Clean(dir)
	prefix := ClaudeProjectName(dir)
	if len(prefix) > claudeProjectMax {
		prefix = prefix[:claudeProjectMax]
	}
	root := filepath.Join(configDir, "projects")
	projects, _ := os.ReadDir(root)
	var best ClaudeSession
	for _, p := range projects {
		// The names of dir's subdirectories start with dir's and a '-' (a
		// '/'); other directories may share it (dir-x), told apart by the
		// transcripts' cwd.
		n := p.Name()
		if !p.IsDir() || !strings.HasPrefix(n, prefix) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(root, n, "*.jsonl"))
		for _, f := range files {
			id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
			st, err := os.Stat(f)
			if err != nil || (skip != nil && skip(id)) || !st.ModTime().After(best.Modified) {
				continue
			}
			s, err := readClaudeSession(f, false)
			if err != nil || !(filepath.IsAbs(s.Cwd) && fstree.Within(s.Cwd, dir)) {
				continue
			}
			best = s
		}
	}
	if best.ID == "" {
		return best, fmt.Errorf("%w started in %s or below it, in %s", ErrNoClaudeSession, dir, root)
	}
	return readClaudeSession(best.Transcript, true)
}

// readClaudeSession reads a transcript's session id (its file name), the
// directory it was started in (the first line with a cwd) and, with cost,
// its last cost-state total. A transcript without a conversation line
// (no cwd) is not a session to continue.
func readClaudeSession(path string, cost bool) (ClaudeSession, error) {
	f, err := os.Open(path)
	if err != nil {
		return ClaudeSession{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ClaudeSession{}, err
	}
	s := ClaudeSession{ID: strings.TrimSuffix(filepath.Base(path), ".jsonl"), Transcript: path, Modified: st.ModTime()}
	br := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := readLine(br)
		if len(line) > 0 {
			s.read(line)
		}
		if err != nil || (!cost && s.Cwd != "") {
			break
		}
	}
	if s.Cwd == "" {
		return s, fmt.Errorf("claude transcript %s: no conversation: %w", path, ErrNoClaudeSession)
	}
	return s, nil
}

// read takes what one transcript line says about its session.
func (s *ClaudeSession) read(line []byte) {
	hasCwd, hasCost := bytes.Contains(line, []byte(`"cwd"`)), bytes.Contains(line, []byte(`"cost-state"`))
	if (s.Cwd != "" || !hasCwd) && !hasCost {
		return
	}
	var l struct {
		Type      string   `json:"type"`
		Cwd       string   `json:"cwd"`
		TotalCost *float64 `json:"totalCostUSD"`
	}
	if json.Unmarshal(line, &l) != nil {
		return
	}
	if s.Cwd == "" && l.Cwd != "" {
		s.Cwd = filepath.Clean(l.Cwd)
	}
	if l.Type == "cost-state" && l.TotalCost != nil {
		s.CostUSD = SafeCost(*l.TotalCost)
	}
}
