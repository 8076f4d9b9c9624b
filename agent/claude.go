package agent

import (
	"bytes"
	"encoding/json"
)

// claudeParser reads Claude Code's stream-json (and the messages of
// --output-format json, one object or one array per line).
type claudeParser struct {
	opts    options
	n       int
	session string
	seen    map[string]bool // message ids whose usage was counted
}

type claudeLine struct {
	Type      string         `json:"type"`
	SessionID string         `json:"session_id"`
	Message   *claudeMessage `json:"message"`
	IsError   bool           `json:"is_error"`
	Result    string         `json:"result"`
	TotalCost *float64       `json:"total_cost_usd"`
	Usage     *claudeUsage   `json:"usage"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
	Usage   *claudeUsage    `json:"usage"`
}

type claudeUsage struct {
	Input         int64 `json:"input_tokens"`
	Output        int64 `json:"output_tokens"`
	CacheRead     int64 `json:"cache_read_input_tokens"`
	CacheCreation int64 `json:"cache_creation_input_tokens"`
	Breakdown     *struct {
		OneHour int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
}

func (u claudeUsage) usage() Usage {
	out := Usage{InputTokens: u.Input, OutputTokens: u.Output,
		CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheCreation}
	if u.Breakdown != nil {
		out.CacheWrite1hTokens = u.Breakdown.OneHour
	}
	return out
}

// Feed parses one line.
func (p *claudeParser) Feed(line []byte) ([]Event, error) {
	p.n++
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] == '[' {
		return p.feedArray(line)
	}
	var l claudeLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, parseError(p.n, line, err)
	}
	return p.events(&l), nil
}

// feedArray handles --output-format json --verbose: every message in one
// JSON array.
func (p *claudeParser) feedArray(line []byte) ([]Event, error) {
	var ls []claudeLine
	if err := json.Unmarshal(line, &ls); err != nil {
		return nil, parseError(p.n, line, err)
	}
	var evs []Event
	for i := range ls {
		evs = append(evs, p.events(&ls[i])...)
	}
	return evs, nil
}

func (p *claudeParser) events(l *claudeLine) []Event {
	switch l.Type {
	case "system":
		return p.sessionEvent(l.SessionID)
	case "assistant":
		return p.assistant(l.Message)
	case "user":
		return p.user(l.Message)
	case "result":
		return p.result(l)
	}
	return nil
}

// sessionEvent reports id when it is new.
func (p *claudeParser) sessionEvent(id string) []Event {
	if id == "" || id == p.session {
		return nil
	}
	p.session = id
	return []Event{{Kind: EventSession, SessionID: id}}
}

func blocks(raw json.RawMessage) []claudeBlock {
	var bs []claudeBlock
	if len(raw) > 0 && raw[0] == '[' {
		_ = json.Unmarshal(raw, &bs) // a block list that fails to decode holds nothing we read
	}
	return bs
}

// assistant yields one line's content block and, the first time a message
// id is seen, its usage: parallel blocks of one message repeat the usage.
func (p *claudeParser) assistant(m *claudeMessage) []Event {
	if m == nil {
		return nil
	}
	var evs []Event
	for _, b := range blocks(m.Content) {
		switch b.Type {
		case "text":
			evs = append(evs, Event{Kind: EventText, Text: b.Text})
		case "tool_use":
			evs = append(evs, Event{Kind: EventToolCall, ToolID: b.ID,
				ToolName: b.Name, Command: bashCommand(b.Name, b.Input)})
		}
	}
	if m.Usage == nil || (m.ID != "" && p.seen[m.ID]) {
		return evs
	}
	p.seen[m.ID] = true
	u := m.Usage.usage()
	evs = append(evs, Event{Kind: EventUsage, Usage: u})
	return append(evs, p.opts.estimate(m.Model, u)...)
}

func bashCommand(name string, input json.RawMessage) string {
	if name != "Bash" {
		return ""
	}
	var in struct {
		Command string `json:"command"`
	}
	_ = json.Unmarshal(input, &in) // no command field: nothing to report
	return in.Command
}

func (p *claudeParser) user(m *claudeMessage) []Event {
	if m == nil {
		return nil
	}
	var evs []Event
	for _, b := range blocks(m.Content) {
		if b.Type == "tool_result" {
			evs = append(evs, Event{Kind: EventToolResult, ToolID: b.ToolUseID, IsError: b.IsError})
		}
	}
	return evs
}

// result yields the final totals, which replace the running sums, and the
// verdict, decided by is_error (an API error arrives as subtype success).
func (p *claudeParser) result(l *claudeLine) []Event {
	evs := p.sessionEvent(l.SessionID)
	if l.Usage != nil {
		evs = append(evs, Event{Kind: EventUsage, Usage: l.Usage.usage(), Final: true})
	}
	if l.TotalCost != nil {
		evs = append(evs, Event{Kind: EventCost, CostUSD: SafeCost(*l.TotalCost), Final: true})
	}
	return append(evs, Event{Kind: EventResult, Text: l.Result, IsError: l.IsError})
}
