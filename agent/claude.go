package agent

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"
)

// Claude Code's permission modes that tine sets (claude --permission-mode).
const (
	// ClaudeBypass lets the agent use every tool without asking; Claude
	// refuses it when it runs as root.
	ClaudeBypass = "bypassPermissions"
	// ClaudeAcceptEdits lets the agent edit files without asking; tine adds
	// --allowedTools Bash so that it may also run commands.
	ClaudeAcceptEdits = "acceptEdits"
)

// ClaudePermissions returns the permission arguments tine gives Claude
// Code by default, so that an agent may work freely inside a fork (which
// is disposable; nothing leaves it without a merge, and tine's hooks deny
// external effects): --permission-mode bypassPermissions for a user, and
// as root, where Claude refuses bypassPermissions and
// --dangerously-skip-permissions, --permission-mode acceptEdits
// --allowedTools Bash (edits and every shell command; other tools, such
// as web fetches, are still denied and show as permission denials).
func ClaudePermissions(root bool) []string {
	if root {
		return []string{"--permission-mode", ClaudeAcceptEdits, "--allowedTools", "Bash"}
	}
	return []string{"--permission-mode", ClaudeBypass}
}

// setsPermissions reports whether args choose Claude's permissions
// themselves, so that tine adds none.
func setsPermissions(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool {
		return a == "--permission-mode" || strings.HasPrefix(a, "--permission-mode=") ||
			a == "--dangerously-skip-permissions"
	})
}

func claudeArgv(bin string, cfg Config, prompt, session string) []string {
	// --include-partial-messages: the stream events carry each message's
	// output usage as it grows (message_delta) and its content as it
	// streams, which the budget watches; the assistant lines carry only
	// the usage of each message's start.
	argv := []string{bin, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}
	if cfg.Model != "" {
		argv = append(argv, "--model", cfg.Model)
	}
	if session != "" {
		argv = append(argv, "--resume", session, "--fork-session")
	}
	if !setsPermissions(cfg.Args) {
		argv = append(argv, ClaudePermissions(cfg.Root)...)
	}
	argv = append(argv, cfg.Args...)
	return append(argv, "--", prompt)
}

// claudeParser reads Claude Code's stream-json (and the messages of
// --output-format json, one object or one array per line).
type claudeParser struct {
	opts    options
	n       int
	session string
	msgs    map[string]*claudeMsg // by message id: what was charged
	baseUSD float64               // the running total of the resumed session
	// streaming is the id of the message the stream's last message_start
	// opened: the message of the events after it that name none (Claude
	// Code releases before api_message_id, such as 2.1.197).
	streaming string
}

// NewClaudeForkParser is a Claude parser for a run that resumes (with
// --fork-session) a session whose running total was baseUSD (see
// [ClaudeSession.CostUSD]): Claude Code's total_cost_usd carries on from
// the resumed session's, so the parser charges the run only what exceeds
// baseUSD. The usage counts of its result line are the run's own.
func NewClaudeForkParser(baseUSD float64, opts ...Option) Parser {
	p, _ := NewParser(Claude, opts...)
	cp := p.(*claudeParser)
	cp.baseUSD = SafeCost(baseUSD)
	return cp
}

// claudeMsg is one assistant message as far as it was charged: its model,
// the usage charged so far and the content seen, whose length (chars/4)
// estimates output tokens until the message's real usage arrives.
type claudeMsg struct {
	model       string
	charged     Usage
	streamChars int64 // content of the stream events' deltas
	lineChars   int64 // content of the assistant lines
	final       bool  // message_delta gave the real output usage
}

// claudeSynthetic is the model of the messages Claude Code makes up
// itself (an API error shown as a message): nothing was billed.
const claudeSynthetic = "<synthetic>"

// charsPerToken is the estimate of output tokens from streamed content.
const charsPerToken = 4

// estimateStep bounds how often a streaming message's estimate is
// charged: every this many estimated tokens.
const estimateStep = 64

type claudeLine struct {
	Type      string         `json:"type"`
	SessionID string         `json:"session_id"`
	Message   *claudeMessage `json:"message"`
	IsError   bool           `json:"is_error"`
	Result    string         `json:"result"`
	TotalCost *float64       `json:"total_cost_usd"`
	Usage     *claudeUsage   `json:"usage"`
	Denials   []claudeDenial `json:"permission_denials"`
	// Event and APIMessageID are a stream_event line's (with
	// --include-partial-messages): the raw Messages API event and the id
	// of the message it belongs to.
	Event        *claudeStreamEvent `json:"event"`
	APIMessageID string             `json:"api_message_id"`
}

// claudeStreamEvent is a Messages API streaming event.
type claudeStreamEvent struct {
	Type    string         `json:"type"`
	Message *claudeMessage `json:"message"` // message_start
	Delta   struct {
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
	} `json:"delta"` // content_block_delta
	Usage *claudeUsage `json:"usage"` // message_delta: output so far
}

// claudeDenial is one entry of the result line's permission_denials.
type claudeDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
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
	case "stream_event":
		return p.streamEvent(l)
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

// assistant yields one line's content block and the usage of its
// message not charged yet: parallel blocks of one message repeat its
// usage, and the usage of an assistant line is the message's start
// (output_tokens 1), so output is estimated from the content (chars/4)
// until the stream's message_delta gives the real count.
func (p *claudeParser) assistant(m *claudeMessage) []Event {
	if m == nil {
		return nil
	}
	var evs []Event
	var chars int64
	for _, b := range blocks(m.Content) {
		switch b.Type {
		case "text":
			chars += int64(len(b.Text))
			evs = append(evs, Event{Kind: EventText, Text: b.Text})
		case "tool_use":
			chars += int64(len(b.Input))
			evs = append(evs, Event{Kind: EventToolCall, ToolID: b.ID,
				ToolName: b.Name, Command: bashCommand(b.Name, b.Input)})
		}
	}
	if m.Usage == nil {
		return evs
	}
	msg := p.msg(m.ID, m.Model)
	msg.lineChars += chars
	want := m.Usage.usage()
	if !msg.final && m.Model != claudeSynthetic {
		want.OutputTokens = max(want.OutputTokens, max(msg.lineChars, msg.streamChars)/charsPerToken)
	}
	return append(evs, p.charge(msg, want)...)
}

// msg returns the record of message id, made on first sight.
func (p *claudeParser) msg(id, model string) *claudeMsg {
	m, ok := p.msgs[id]
	if !ok {
		m = &claudeMsg{}
		p.msgs[id] = m
	}
	if m.model == "" {
		m.model = model
	}
	return m
}

// charge yields the usage of want not yet charged for m, and its cost:
// each count only grows (an estimate above the real count stands until
// the final total replaces it).
func (p *claudeParser) charge(m *claudeMsg, want Usage) []Event {
	c := m.charged
	d := Usage{
		InputTokens:        max(want.InputTokens-c.InputTokens, 0),
		OutputTokens:       max(want.OutputTokens-c.OutputTokens, 0),
		CacheReadTokens:    max(want.CacheReadTokens-c.CacheReadTokens, 0),
		CacheWriteTokens:   max(want.CacheWriteTokens-c.CacheWriteTokens, 0),
		CacheWrite1hTokens: max(want.CacheWrite1hTokens-c.CacheWrite1hTokens, 0),
	}
	if d == (Usage{}) {
		return nil
	}
	m.charged = c.Add(d)
	return append([]Event{{Kind: EventUsage, Usage: d}}, p.opts.estimate(m.model, d)...)
}

// streamEvent reads a stream_event line (--include-partial-messages):
// message_start charges the message's input, content deltas an estimate
// of its output (chars/4, every estimateStep tokens), and message_delta
// its real output so far; the deltas belong to the message their
// api_message_id names, or else the one message_start opened last.
func (p *claudeParser) streamEvent(l *claudeLine) []Event {
	ev := l.Event
	if ev == nil {
		return nil
	}
	switch ev.Type {
	case "message_start":
		if ev.Message == nil {
			return nil
		}
		p.streaming = ev.Message.ID
		msg := p.msg(ev.Message.ID, ev.Message.Model)
		if ev.Message.Usage == nil {
			return nil
		}
		return p.charge(msg, ev.Message.Usage.usage())
	case "content_block_delta":
		msg := p.msg(p.streamingID(l), "")
		msg.streamChars += int64(len(ev.Delta.Text) + len(ev.Delta.PartialJSON) + len(ev.Delta.Thinking))
		est := msg.streamChars / charsPerToken
		if msg.final || est < msg.charged.OutputTokens+estimateStep {
			return nil
		}
		want := msg.charged
		want.OutputTokens = est
		return p.charge(msg, want)
	case "message_delta":
		if ev.Usage == nil {
			return nil
		}
		msg := p.msg(p.streamingID(l), "")
		msg.final = true
		want := msg.charged
		want.OutputTokens = ev.Usage.Output
		// A message_delta may also carry the input counts; they only grow.
		want.InputTokens = max(want.InputTokens, ev.Usage.Input)
		want.CacheReadTokens = max(want.CacheReadTokens, ev.Usage.CacheRead)
		want.CacheWriteTokens = max(want.CacheWriteTokens, ev.Usage.CacheCreation)
		return p.charge(msg, want)
	}
	return nil
}

// streamingID is the id of the message stream event l belongs to: the one
// it names, else the one the stream's last message_start opened (the
// stream's own boundaries; older Claude Code names none).
func (p *claudeParser) streamingID(l *claudeLine) string {
	if l.APIMessageID != "" {
		return l.APIMessageID
	}
	return p.streaming
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
		evs = append(evs, Event{Kind: EventCost, CostUSD: SafeCost(*l.TotalCost - p.baseUSD), Final: true})
	}
	for _, d := range l.Denials {
		evs = append(evs, Event{Kind: EventPermissionDenied, ToolID: d.ToolUseID, ToolName: d.ToolName,
			Command: describeInput(d.ToolInput)})
	}
	return append(evs, Event{Kind: EventResult, Text: l.Result, IsError: l.IsError})
}

// maxDescribed bounds the description of a denied tool call.
const maxDescribed = 200

// describeInput says in a line what a tool call asked for: a shell
// command, a file path, or else its input as JSON.
func describeInput(input json.RawMessage) string {
	var in struct {
		Command  string `json:"command"`
		FilePath string `json:"file_path"`
		Path     string `json:"notebook_path"`
		URL      string `json:"url"`
	}
	_ = json.Unmarshal(input, &in) // an input of another shape is shown as JSON
	s := in.Command
	for _, v := range []string{in.FilePath, in.Path, in.URL} {
		if s == "" {
			s = v
		}
	}
	if s == "" && len(input) > 0 && string(input) != "null" {
		var b bytes.Buffer
		if json.Compact(&b, input) == nil {
			s = b.String()
		}
	}
	if len(s) > maxDescribed {
		cut := maxDescribed
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
