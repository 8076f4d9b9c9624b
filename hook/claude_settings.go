package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// hookSpec is one entry tine adds: an event and the tool matcher.
type hookSpec struct {
	Event   string
	Matcher string
}

// specs are the entries tine installs for each agent. Claude Code sends
// PostToolUseFailure instead of PostToolUse when a command fails, and a
// failed test run is evidence too.
var specs = map[Agent][]hookSpec{
	Claude: {{"PreToolUse", "Bash"}, {"PostToolUse", "Bash"}, {"PostToolUseFailure", "Bash"},
		{"UserPromptSubmit", ""}, {"Stop", ""}},
	Codex: {{"PreToolUse", "Bash"}, {"PostToolUse", "Bash"}, {"UserPromptSubmit", ""}, {"Stop", ""}},
}

// HookTimeout is the timeout, in seconds, written for tine's handlers.
const HookTimeout = 10

// Events lists the hook events tine installs for agent.
func Events(agent Agent) []string {
	var out []string
	for _, s := range specs[agent] {
		out = append(out, s.Event)
	}
	return out
}

// HookCommand is the command line an agent runs: bin hook agent, bin
// quoted for the shell when it needs to be.
func HookCommand(bin string, agent Agent) string {
	if strings.ContainsAny(bin, " \t\n'\"\\$`&;|<>()*?[]#~") {
		bin = shellQuote(bin)
	}
	return bin + " hook " + string(agent)
}

// IsTineCommand reports whether a handler's command runs tine's hook for
// agent, whatever tine binary it names.
func IsTineCommand(cmd string, agent Agent) bool {
	f := strings.Fields(cmd)
	if len(f) < 3 || f[len(f)-2] != "hook" || f[len(f)-1] != string(agent) {
		return false
	}
	bin := strings.Join(f[:len(f)-2], " ")
	switch {
	case len(bin) > 1 && bin[0] == '\'' && bin[len(bin)-1] == '\'': // as HookCommand quotes it
		bin = strings.ReplaceAll(bin[1:len(bin)-1], `'\''`, "'")
	case len(bin) > 1 && bin[0] == '"' && bin[len(bin)-1] == '"':
		bin = bin[1 : len(bin)-1]
	case len(f) != 3:
		return false // more than one word: another command running tine
	}
	return filepath.Base(bin) == "tine"
}

// group is one entry of an event's list in the JSON hooks format.
type group struct {
	Matcher string    `json:"matcher,omitempty"`
	Hooks   []handler `json:"hooks"`
}

type handler struct {
	Type    string `json:"type"`
	Command string `json:"command"`
	Timeout int    `json:"timeout,omitempty"`
}

// mergeJSON adds tine's entries to a settings document in the JSON hooks
// format ({"hooks":{"Event":[{"matcher":...,"hooks":[...]}]}}), keeping
// every other key and entry. An event that already runs tine's hook for
// agent is left as it is.
func mergeJSON(doc []byte, agent Agent, command string) ([]byte, bool, error) {
	root, hooks, err := hooksOf(doc)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for _, s := range specs[agent] {
		groups, err := groupsOf(hooks, s.Event)
		if err != nil {
			return nil, false, err
		}
		if hasTine(groups, agent) {
			continue
		}
		g := group{Matcher: s.Matcher, Hooks: []handler{{"command", command, HookTimeout}}}
		hooks = hooks.set(s.Event, marshal(append(groups, marshal(g))))
		changed = true
	}
	return finish(doc, root, hooks, changed)
}

// unmergeJSON removes every handler that runs tine's hook for agent, then
// the entries, events and hooks object that held only those.
func unmergeJSON(doc []byte, agent Agent) ([]byte, bool, error) {
	root, hooks, err := hooksOf(doc)
	if err != nil {
		return nil, false, err
	}
	changed := false
	for _, m := range slices.Clone(hooks) { // hooks shrinks as it goes
		groups, err := groupsOf(hooks, m.key)
		if err != nil {
			return nil, false, err
		}
		kept, removed := withoutTine(groups, agent)
		if !removed {
			continue
		}
		changed = true
		if len(kept) == 0 {
			hooks = hooks.del(m.key)
		} else {
			hooks = hooks.set(m.key, marshal(kept))
		}
	}
	return finish(doc, root, hooks, changed)
}

// hooksOf decodes the document and its "hooks" object (empty if absent).
func hooksOf(doc []byte) (object, object, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		doc = []byte("{}")
	}
	root, err := decodeObject(doc)
	if err != nil {
		return nil, nil, err
	}
	raw, ok := root.get("hooks")
	if !ok {
		return root, object{}, nil
	}
	hooks, err := decodeObject(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("\"hooks\": %w", err)
	}
	return root, hooks, nil
}

// groupsOf returns the list of entries of event.
func groupsOf(hooks object, event string) ([]json.RawMessage, error) {
	raw, ok := hooks.get(event)
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, fmt.Errorf("hooks.%s is not a list of entries", event)
	}
	return groups, nil
}

// finish writes hooks back into root; an emptied hooks object goes.
func finish(doc []byte, root, hooks object, changed bool) ([]byte, bool, error) {
	if !changed {
		return doc, false, nil
	}
	if len(hooks) == 0 {
		root = root.del("hooks")
	} else {
		root = root.set("hooks", hooks.raw())
	}
	out, err := pretty(root.raw())
	return out, true, err
}

// hasTine reports whether any entry runs tine's hook for agent.
func hasTine(groups []json.RawMessage, agent Agent) bool {
	for _, g := range groups {
		var v struct{ Hooks []handler }
		if json.Unmarshal(g, &v) == nil {
			for _, h := range v.Hooks {
				if IsTineCommand(h.Command, agent) {
					return true
				}
			}
		}
	}
	return false
}

// withoutTine drops tine's handlers from each entry, and entries left
// with no handler by that.
func withoutTine(groups []json.RawMessage, agent Agent) ([]json.RawMessage, bool) {
	var kept []json.RawMessage
	removed := false
	for _, g := range groups {
		ng, n := groupWithoutTine(g, agent)
		removed = removed || n > 0
		if ng != nil {
			kept = append(kept, ng)
		}
	}
	return kept, removed
}

// groupWithoutTine returns g without tine's handlers (nil when none is
// left because of that) and how many it dropped.
func groupWithoutTine(g json.RawMessage, agent Agent) (json.RawMessage, int) {
	obj, err := decodeObject(g)
	if err != nil {
		return g, 0 // not an entry tine wrote; keep it as it is
	}
	raw, ok := obj.get("hooks")
	var hs []json.RawMessage
	if !ok || json.Unmarshal(raw, &hs) != nil {
		return g, 0
	}
	var kept []json.RawMessage
	for _, h := range hs {
		var v handler
		if json.Unmarshal(h, &v) == nil && IsTineCommand(v.Command, agent) {
			continue
		}
		kept = append(kept, h)
	}
	switch n := len(hs) - len(kept); {
	case n == 0:
		return g, 0
	case len(kept) == 0:
		return nil, n
	default:
		return obj.set("hooks", marshal(kept)).raw(), n
	}
}
