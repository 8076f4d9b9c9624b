package hook

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tinehq/tine/internal/atomicfile"
)

// SettingsPath is the file tine's hooks go in for agent: in project when
// it is set, else where the agent reads the user's settings.
//
//   - Claude Code: PROJECT/.claude/settings.json, ~/.claude/settings.json
//   - Codex: PROJECT/.codex/config.toml, $CODEX_HOME/config.toml
//     (CODEX_HOME defaults to ~/.codex)
func SettingsPath(agent Agent, project string) (string, error) {
	dir := project
	if agent == Codex && dir == "" {
		if h := os.Getenv("CODEX_HOME"); h != "" {
			abs, err := filepath.Abs(h)
			if err != nil {
				return "", err
			}
			return filepath.Join(abs, "config.toml"), nil
		}
	}
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("finding the home directory: %w", err)
		}
		dir = home
	}
	switch agent {
	case Claude:
		return filepath.Join(dir, ".claude", "settings.json"), nil
	case Codex:
		return filepath.Join(dir, ".codex", "config.toml"), nil
	}
	return "", fmt.Errorf("unknown agent %q", agent)
}

// Merge returns doc, a settings document of agent's, with tine's hook
// entries running command added, and whether anything was added. Entries
// already there are kept and an event already running tine's hook is left
// alone, so merging twice changes nothing.
func Merge(agent Agent, doc []byte, command string) ([]byte, bool, error) {
	switch agent {
	case Claude:
		return mergeJSON(doc, agent, command)
	case Codex:
		return mergeCodex(doc, command)
	}
	return nil, false, fmt.Errorf("unknown agent %q", agent)
}

// Unmerge returns doc without tine's hook entries, and whether any was
// there.
func Unmerge(agent Agent, doc []byte) ([]byte, bool, error) {
	switch agent {
	case Claude:
		return unmergeJSON(doc, agent)
	case Codex:
		return unmergeCodex(doc)
	}
	return nil, false, fmt.Errorf("unknown agent %q", agent)
}

// Install merges tine's hooks, running HookCommand(bin, agent), into the
// settings file at path, creating it (and its directory) if needed. It
// reports whether the file changed. For Codex it also marks tine's
// handlers trusted in that file (see [CodexTrustHash]), since Codex runs
// no hook that was not reviewed, and adds bin's MCP server (`tine mcp`),
// through which an agent in Codex's sandbox reaches tine.
func Install(agent Agent, path, bin string) (bool, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return false, err
	}
	return editFile(abs, true, func(doc []byte) ([]byte, bool, error) {
		command := HookCommand(bin, agent)
		if agent == Codex {
			return mergeCodexAt(doc, command, abs, bin)
		}
		return Merge(agent, doc, command)
	})
}

// Uninstall removes tine's hooks from the settings file at path. A
// missing file has none.
func Uninstall(agent Agent, path string) (bool, error) {
	return editFile(path, false, func(doc []byte) ([]byte, bool, error) {
		return Unmerge(agent, doc)
	})
}

// editFile applies edit to the file at path (through a symlink) and
// replaces it atomically, keeping its permissions. On any error the file
// is left untouched.
func editFile(path string, create bool, edit func([]byte) ([]byte, bool, error)) (bool, error) {
	real, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		real = path
	} else if err != nil {
		return false, err
	}
	doc, mode, err := readSettings(real)
	if errors.Is(err, fs.ErrNotExist) && !create {
		return false, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	out, changed, err := edit(doc)
	if err != nil {
		return false, fmt.Errorf("%s: %w; left untouched", path, err)
	}
	if !changed {
		return false, nil
	}
	return true, writeAtomic(real, out, mode)
}

// readSettings reads a settings file and its permissions (0644 for a new
// one).
func readSettings(path string) ([]byte, fs.FileMode, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, 0o644, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, 0, err
	}
	return doc, fi.Mode().Perm(), nil
}

// writeAtomic replaces path (making its directory) with data, with
// permissions mode exactly, durably.
func writeAtomic(path string, data []byte, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.Write(path, data, mode, atomicfile.ExactMode, atomicfile.Durable); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
