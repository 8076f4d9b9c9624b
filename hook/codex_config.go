package hook

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
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

// codexLabel is Codex's snake_case name of a hook event, used in the keys
// and hashes of its hook trust state.
var codexLabel = map[string]string{
	"PreToolUse": "pre_tool_use", "PostToolUse": "post_tool_use",
	"UserPromptSubmit": "user_prompt_submit", "Stop": "stop",
}

// codexTrust is one entry of Codex's hook trust state: the handler's key
// (CONFIG:EVENT:GROUP:HANDLER) and the hash of its definition.
type codexTrust struct{ Key, Hash string }

// CodexTrustHash is the hash Codex 0.171 records as trusted_hash for a
// command handler reviewed in /hooks: "sha256:" and the hex SHA-256 of the
// canonical JSON (keys sorted, no spaces) of
// {"event_name":EVENT,"hooks":[{"async":false,"command":...,"timeout":...,"type":"command"}],"matcher":...},
// matcher left out when the entry has none. Checked against the
// currentHash the real codex reports (codex app-server, hooks/list).
func CodexTrustHash(event, matcher, command string, timeout int) string {
	handler := map[string]any{"async": false, "command": command, "timeout": timeout, "type": "command"}
	identity := map[string]any{"event_name": codexLabel[event], "hooks": []any{handler}}
	if matcher != "" {
		identity["matcher"] = matcher
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // map keys come out sorted
	enc.SetEscapeHTML(false)   // serde_json does not escape <, >, &
	if err := enc.Encode(identity); err != nil {
		panic(err) // plain strings and numbers
	}
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// codexBlock is tine's block for command, with the trust entries and,
// with mcpBin, tine's MCP server (codexMCP).
func codexBlock(command string, trust []codexTrust, mcpBin string) string {
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
	for _, t := range trust {
		fmt.Fprintf(&b, "[hooks.state.%s]\ntrusted_hash = %s\n", tomlString(t.Key), strconv.Quote(t.Hash))
	}
	if mcpBin != "" {
		b.WriteString(codexMCP(mcpBin))
	}
	b.WriteString(codexEnd + "\n")
	return b.String()
}

// CodexMCPServer is the name tine's MCP server has in Codex's config.
const CodexMCPServer = "tine"

// codexMCP is tine's MCP server in Codex's config: `tine mcp`, given the
// run's socket and capability (Codex passes an MCP server only the
// variables it names). Codex starts MCP servers outside its sandbox, which
// refuses every socket, tine's too: from there the tools are how an agent
// in a run reaches tine (effect, fork_run). The effect tool is approved in
// Codex (else codex exec refuses it: "approval policy is never"), since
// tine asks a person for every effect itself.
func codexMCP(bin string) string {
	return fmt.Sprintf("[mcp_servers.%s]\ncommand = %s\nargs = [\"mcp\"]\nenv_vars = [\"TINE_SOCKET\", \"TINE_CAPABILITY\"]\n"+
		"[mcp_servers.%s.tools.effect]\napproval_mode = \"approve\"\n", CodexMCPServer, tomlString(bin), CodexMCPServer)
}

// CodexHasMCP reports whether the Codex config doc defines an MCP server
// named tine (tine's, or one of the user's by that name).
func CodexHasMCP(doc []byte) bool {
	var c struct {
		MCP map[string]any `toml:"mcp_servers"`
	}
	if toml.Unmarshal(doc, &c) != nil {
		return false
	}
	_, ok := c.MCP[CodexMCPServer]
	return ok
}

// CodexBlockHasMCP reports whether tine's own block in the Codex config
// doc (what tine setup codex wrote) defines tine's MCP server, rather
// than the file having a server of that name of the user's.
func CodexBlockHasMCP(doc []byte) bool {
	start := bytes.Index(doc, []byte(codexBegin))
	if start < 0 {
		return false
	}
	end := bytes.Index(doc[start:], []byte(codexEnd))
	return end >= 0 && CodexHasMCP(doc[start:start+end])
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

// codexConfig is the part of config.toml tine reads: hooks.EVENT lists of
// entries (hooks.state, Codex's trust state, is a table, not a list).
type codexConfig struct {
	Hooks map[string]any `toml:"hooks"`
}

// codexGroups returns the entries of one event as decoded, whether written
// as [[hooks.EVENT]] tables or as an inline array.
func codexGroups(v any) []map[string]any {
	switch v := v.(type) {
	case []map[string]any:
		return v
	case []any:
		var out []map[string]any
		for _, g := range v {
			if m, ok := g.(map[string]any); ok {
				out = append(out, m)
			} else {
				out = append(out, nil)
			}
		}
		return out
	}
	return nil
}

// tineHandlers returns, per event, the positions (entry, handler) of the
// handlers running tine's hook for Codex.
func tineHandlers(c codexConfig) map[string][][2]int {
	out := map[string][][2]int{}
	for event, v := range c.Hooks {
		if event == "state" {
			continue
		}
		for gi, g := range codexGroups(v) {
			hs, _ := g["hooks"].([]map[string]any)
			if hs == nil {
				for _, h := range asList(g["hooks"]) {
					m, _ := h.(map[string]any)
					hs = append(hs, m)
				}
			}
			for hi, h := range hs {
				if cmd, _ := h["command"].(string); IsTineCommand(cmd, Codex) {
					out[event] = append(out[event], [2]int{gi, hi})
				}
			}
		}
	}
	return out
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// decodeCodex reads config.toml and counts the handlers running tine's
// hook for Codex.
func decodeCodex(doc []byte) (int, error) {
	pos, err := decodeTine(doc)
	n := 0
	for _, p := range pos {
		n += len(p)
	}
	return n, err
}

func decodeTine(doc []byte) (map[string][][2]int, error) {
	var c codexConfig
	if err := toml.Unmarshal(doc, &c); err != nil {
		return nil, fmt.Errorf("not valid TOML: %s", firstLine(err.Error()))
	}
	return tineHandlers(c), nil
}

// mergeCodex appends tine's block unless the file already runs tine's
// hook, with no trust entries (the config's path is not known) and no MCP
// server.
func mergeCodex(doc []byte, command string) ([]byte, bool, error) {
	return mergeCodexAt(doc, command, "", "")
}

// mergeCodexAt appends tine's block to the config.toml at path and, path
// being known, marks tine's handlers trusted there: Codex 0.171 runs a
// hook only when [hooks.state."PATH:EVENT:GROUP:HANDLER"] holds the
// trusted_hash of its current definition (else `codex exec` skips it
// without a word). A block tine wrote before is replaced, so an install
// without trust, or with a stale hash, is brought up to date; handlers
// added by hand are left alone. With mcpBin the block also defines tine's
// MCP server (codexMCP), unless the file has an MCP server of that name
// or one cannot be added to how it defines mcp_servers.
func mergeCodexAt(doc []byte, command, path, mcpBin string) ([]byte, bool, error) {
	n, err := decodeCodex(doc)
	if err != nil {
		return nil, false, err
	}
	base := doc
	if bytes.Contains(doc, []byte(codexBegin)) {
		if base, _, err = unmergeCodex(doc); err != nil {
			return nil, false, err
		}
		if n, err = decodeCodex(base); err != nil {
			return nil, false, err
		}
	}
	if n > 0 {
		return doc, false, nil // tine's hook, added by hand
	}
	out := appendBlock(base, codexBlock(command, nil, ""))
	pos, err := decodeTine(out)
	if err == nil {
		for _, s := range specs[Codex] {
			if len(pos[s.Event]) != 1 {
				err = fmt.Errorf("hooks.%s does not take tine's entry", s.Event)
			}
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("cannot extend the hooks this file defines (%v); add tine's hooks by hand:\n%s", err, codexBlock(command, nil, ""))
	}
	if path != "" {
		var trust []codexTrust
		for _, s := range specs[Codex] {
			p := pos[s.Event][0]
			trust = append(trust, codexTrust{
				Key:  fmt.Sprintf("%s:%s:%d:%d", path, codexLabel[s.Event], p[0], p[1]),
				Hash: CodexTrustHash(s.Event, s.Matcher, command, HookTimeout),
			})
		}
		out = appendBlock(base, codexBlock(command, trust, ""))
		if _, err := decodeTine(out); err != nil {
			return nil, false, fmt.Errorf("cannot add tine's hook trust to the hooks.state this file defines (%v); add tine's hooks by hand and trust them in Codex's /hooks:\n%s", err, codexBlock(command, nil, ""))
		}
		if mcpBin != "" && !CodexHasMCP(base) {
			if with := appendBlock(base, codexBlock(command, trust, mcpBin)); CodexHasMCP(with) {
				out = with
			}
		}
	}
	return out, !bytes.Equal(out, doc), nil
}

// appendBlock is doc with block after a blank line.
func appendBlock(doc []byte, block string) []byte {
	out := bytes.Clone(doc)
	if len(out) > 0 {
		if !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, '\n')
		}
		out = append(out, '\n')
	}
	return append(out, block...)
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
