package hook

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// Codex reads hooks from inline tables in config.toml ([[hooks.Stop]] and
// [[hooks.Stop.hooks]], the real sample in the fixtures). tine appends its
// entries as one block between two marker comments and removes exactly
// that block, so the rest of the file, comments included, stays byte for
// byte. The result is decoded before it is written: a file that defines
// hooks in a way a block cannot extend (hooks.PreToolUse = [...]) is
// refused with the reason.
const (
	codexBegin = "# >>> tine hooks: added by `tine setup codex`, removed by `tine setup codex --remove` >>>"
	codexEnd   = "# <<< tine hooks <<<"
)

// codexBlock is tine's block for command.
func codexBlock(command string) string {
	var b strings.Builder
	b.WriteString(codexBegin + "\n")
	for _, s := range specs[Codex] {
		fmt.Fprintf(&b, "[[hooks.%s]]\n", s.Event)
		if s.Matcher != "" {
			fmt.Fprintf(&b, "matcher = %s\n", strconv.Quote(s.Matcher))
		}
		fmt.Fprintf(&b, "[[hooks.%s.hooks]]\ntype = \"command\"\ncommand = %s\ntimeout = %d\n",
			s.Event, tomlString(command), HookTimeout)
	}
	b.WriteString(codexEnd + "\n")
	return b.String()
}

// tomlString quotes s as a TOML literal string, or a basic one when s
// holds a quote or a control character.
func tomlString(s string) string {
	if !strings.ContainsAny(s, "'\n\r\t") {
		return "'" + s + "'"
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}

// codexConfig is the part of config.toml tine reads.
type codexConfig struct {
	Hooks map[string][]struct {
		Hooks []struct {
			Command string `toml:"command"`
		} `toml:"hooks"`
	} `toml:"hooks"`
}

// decodeCodex reads config.toml and counts the handlers running tine's
// hook for Codex.
func decodeCodex(doc []byte) (int, error) {
	var c codexConfig
	if err := toml.Unmarshal(doc, &c); err != nil {
		return 0, fmt.Errorf("not valid TOML: %s", firstLine(err.Error()))
	}
	n := 0
	for _, groups := range c.Hooks {
		for _, g := range groups {
			for _, h := range g.Hooks {
				if IsTineCommand(h.Command, Codex) {
					n++
				}
			}
		}
	}
	return n, nil
}

// mergeCodex appends tine's block unless the file already runs tine's hook.
func mergeCodex(doc []byte, command string) ([]byte, bool, error) {
	n, err := decodeCodex(doc)
	if err != nil {
		return nil, false, err
	}
	if n > 0 || bytes.Contains(doc, []byte(codexBegin)) {
		return doc, false, nil
	}
	out := bytes.Clone(doc)
	if len(out) > 0 {
		if !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, '\n')
		}
		out = append(out, '\n')
	}
	out = append(out, codexBlock(command)...)
	if got, err := decodeCodex(out); err != nil || got != len(specs[Codex]) {
		return nil, false, fmt.Errorf("cannot extend the hooks this file defines (%v); add tine's hooks by hand:\n%s", err, codexBlock(command))
	}
	return out, true, nil
}

// unmergeCodex removes tine's block and the blank line put before it.
func unmergeCodex(doc []byte) ([]byte, bool, error) {
	n, err := decodeCodex(doc)
	if err != nil {
		return nil, false, err
	}
	start := bytes.Index(doc, []byte(codexBegin))
	if start < 0 {
		if n > 0 {
			return nil, false, errors.New("runs tine's hook outside the block tine setup writes; remove those entries by hand")
		}
		return doc, false, nil
	}
	end := bytes.Index(doc[start:], []byte(codexEnd))
	if end < 0 {
		return nil, false, errors.New("tine's hook block has no end marker; fix the file by hand")
	}
	end += start + len(codexEnd)
	if end < len(doc) && doc[end] == '\n' {
		end++
	}
	if start >= 2 && doc[start-1] == '\n' && doc[start-2] == '\n' {
		start--
	}
	out := append(bytes.Clone(doc[:start]), doc[end:]...)
	if _, err := decodeCodex(out); err != nil {
		return nil, false, fmt.Errorf("removing tine's block would leave invalid TOML: %w", err)
	}
	return out, true, nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
