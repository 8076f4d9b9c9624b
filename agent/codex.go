package agent

import (
	"bytes"
	"encoding/json"
	"strings"
)

// codexParser reads codex exec --json.
type codexParser struct {
	opts    options
	n       int
	started map[string]bool // item ids whose call was reported
	last    string          // the last agent message, the final answer
}

type codexLine struct {
	Type     string      `json:"type"`
	ThreadID string      `json:"thread_id"`
	Item     *codexItem  `json:"item"`
	Usage    *codexUsage `json:"usage"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
	Message string `json:"message"`
}

type codexItem struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	ItemType string `json:"item_type"` // the first published name of type
	Text     string `json:"text"`
	Command  string `json:"command"`
	ExitCode *int   `json:"exit_code"`
	Status   string `json:"status"`
	Changes  []struct {
		Path string `json:"path"`
		Kind string `json:"kind"`
	} `json:"changes"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
}

type codexUsage struct {
	Input  int64 `json:"input_tokens"`
	Cached int64 `json:"cached_input_tokens"`
	Output int64 `json:"output_tokens"`
}

// Feed parses one line.
func (p *codexParser) Feed(line []byte) ([]Event, error) {
	p.n++
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	var l codexLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, parseError(p.n, line, err)
	}
	return p.events(&l), nil
}

func (p *codexParser) events(l *codexLine) []Event {
	switch l.Type {
	case "thread.started":
		if l.ThreadID != "" {
			return []Event{{Kind: EventSession, SessionID: l.ThreadID}}
		}
	case "item.started", "item.updated":
		return p.itemStarted(l.Item)
	case "item.completed":
		return p.itemCompleted(l.Item)
	case "turn.completed":
		return p.turnCompleted(l.Usage)
	case "turn.failed":
		return []Event{{Kind: EventResult, IsError: true, Text: errText(l)}}
	case "error":
		return []Event{{Kind: EventText, Text: "error: " + errText(l)}}
	}
	return nil
}

func errText(l *codexLine) string {
	if l.Error != nil {
		return l.Error.Message
	}
	return l.Message
}

func (it *codexItem) kind() string {
	if it.Type != "" {
		return it.Type
	}
	return it.ItemType
}

// call returns the tool call an item stands for, if it is one.
func (it *codexItem) call() (Event, bool) {
	ev := Event{Kind: EventToolCall, ToolID: it.ID, ToolName: it.kind()}
	switch ev.ToolName {
	case "command_execution":
		ev.Command = it.Command
	case "file_change":
		var parts []string
		for _, c := range it.Changes {
			parts = append(parts, c.Kind+" "+c.Path)
		}
		ev.Command = strings.Join(parts, ", ")
	case "mcp_tool_call":
		ev.Command = it.Server + "/" + it.Tool
	default:
		return Event{}, false
	}
	return ev, true
}

func (p *codexParser) itemStarted(it *codexItem) []Event {
	if it == nil || p.started[it.ID] {
		return nil
	}
	ev, ok := it.call()
	if !ok {
		return nil
	}
	p.started[it.ID] = true
	return []Event{ev}
}

// itemCompleted yields the text of a message, or the call (if its start
// was not seen) and the result of a tool item. Reasoning is not output.
func (p *codexParser) itemCompleted(it *codexItem) []Event {
	if it == nil {
		return nil
	}
	switch it.kind() {
	case "agent_message", "assistant_message":
		p.last = it.Text
		return []Event{{Kind: EventText, Text: it.Text}}
	}
	evs := p.itemStarted(it)
	if _, ok := it.call(); !ok {
		return evs
	}
	failed := it.Status == "failed" || (it.ExitCode != nil && *it.ExitCode != 0)
	return append(evs, Event{Kind: EventToolResult, ToolID: it.ID,
		ToolName: it.kind(), ExitCode: it.ExitCode, IsError: failed})
}

// turnCompleted yields the turn's usage, its cost when priced, and the
// result: codex exec runs one turn.
func (p *codexParser) turnCompleted(cu *codexUsage) []Event {
	var evs []Event
	if cu != nil {
		u := Usage{InputTokens: max(cu.Input-cu.Cached, 0),
			CacheReadTokens: cu.Cached, OutputTokens: cu.Output}
		evs = append(evs, Event{Kind: EventUsage, Usage: u})
		evs = append(evs, p.opts.estimate("", u)...)
	}
	return append(evs, Event{Kind: EventResult, Text: p.last})
}
