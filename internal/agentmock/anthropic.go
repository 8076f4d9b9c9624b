// Package agentmock holds mock model APIs for tests that drive the real
// agent CLIs (Claude Code, Codex) without reaching the internet: each is
// an HTTP server on the loopback interface, scripted per test.
package agentmock

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Turn is one scripted answer of the Anthropic Messages API: text, a
// tool call, or an API error. Exactly one of Text, Tool and Error is
// normally set; a Tool turn may also carry Text, sent first.
type Turn struct {
	// Text is the assistant's text.
	Text string
	// Tool is a tool_use block: the tool's name (as in the request's tools
	// list, e.g. "Write", "Edit", "Bash") and its input. Every string in
	// Input has "{cwd}" replaced by the agent's working directory, read
	// from the request's system prompt.
	Tool *ToolUse
	// Error, when set, answers with this HTTP status and an Anthropic
	// error body instead of a message.
	Error *APIError
	// InputTokens and OutputTokens are the usage reported; zero means 10
	// and 5.
	InputTokens, OutputTokens int64
}

// ToolUse is a scripted tool call.
type ToolUse struct {
	Name  string
	Input map[string]any
}

// APIError is a scripted error answer.
type APIError struct {
	Status  int    // HTTP status, e.g. 400 (not retried) or 529 (retried)
	Type    string // e.g. "invalid_request_error", "overloaded_error"
	Message string
}

// Request is one request the mock received.
type Request struct {
	Path   string
	Stream bool
	Model  string
	// Tools are the names of the tools offered; empty for side requests
	// (titles, summaries).
	Tools []string
	// Turn is the number of assistant messages in the conversation so far,
	// which picks the scripted turn.
	Turn int
	// Cwd is the working directory the agent reported, "" if none.
	Cwd string
	// Prompt is the text of the first user message: the task (with the
	// fork's approach).
	Prompt string
	// ToolResults are the tool results in the last user message.
	ToolResults []ToolResult
	// Body is the raw request body.
	Body []byte
}

// ToolResult is a tool_result block sent back to the model.
type ToolResult struct {
	ToolUseID string
	IsError   bool
	Content   string
}

// Anthropic is a mock Anthropic Messages API. Conversation requests (those
// that offer tools) are answered from the script by turn number: the
// request with k assistant messages gets Script[k], and once the script
// is used up, a final text "done". Requests without tools (Claude Code's
// side calls: titles, summaries) get a short text; count_tokens gets a
// count. It is safe for concurrent use, so N forks can share one.
type Anthropic struct {
	// URL is the base URL, e.g. http://127.0.0.1:PORT, for
	// ANTHROPIC_BASE_URL.
	URL string

	srv    *httptest.Server
	script func(Request) (Turn, bool)
	ids    atomic.Int64

	mu       sync.Mutex
	requests []Request
}

// NewAnthropic starts a mock on 127.0.0.1 answering with script; Close
// stops it.
func NewAnthropic(script ...Turn) *Anthropic {
	return NewAnthropicFunc(func(r Request) (Turn, bool) {
		if r.Turn < len(script) {
			return script[r.Turn], true
		}
		return Turn{}, false
	})
}

// NewAnthropicFunc is [NewAnthropic] with a script that decides each
// conversation turn from the request (its Turn, Prompt, Cwd); false
// means the script is used up (the answer is a final "done").
func NewAnthropicFunc(script func(Request) (Turn, bool)) *Anthropic {
	a := &Anthropic{script: script}
	a.srv = httptest.NewUnstartedServer(http.HandlerFunc(a.serve))
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("agentmock: listen on loopback: %v", err))
	}
	a.srv.Listener = l
	a.srv.Start()
	a.URL = a.srv.URL
	return a
}

// Close stops the server.
func (a *Anthropic) Close() { a.srv.Close() }

// Env returns the environment that points Claude Code at the mock and
// keeps it off the network: a test key, no telemetry, no auto-update, no
// non-essential traffic, and home as HOME (a temporary directory, so the
// user's settings and sessions are not used).
func (a *Anthropic) Env(home string) []string {
	return []string{
		"ANTHROPIC_BASE_URL=" + a.URL,
		"ANTHROPIC_API_KEY=test",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
		"HOME=" + home,
	}
}

// Requests returns a copy of the requests received so far.
func (a *Anthropic) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Request(nil), a.requests...)
}

// Conversation returns the requests that offered tools: the agent's own
// turns, not its side calls.
func (a *Anthropic) Conversation() []Request {
	var out []Request
	for _, r := range a.Requests() {
		if len(r.Tools) > 0 {
			out = append(out, r)
		}
	}
	return out
}

type messagesBody struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	System json.RawMessage `json:"system"`
	Tools  []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"`
}

func (a *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages/count_tokens"):
		a.record(Request{Path: r.URL.Path, Body: body})
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 10})
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/v1/messages"):
		a.messages(w, r.URL.Path, body)
	default:
		a.record(Request{Path: r.URL.Path, Body: body})
		writeJSON(w, http.StatusNotFound, errorBody("not_found_error", "agentmock: no "+r.Method+" "+r.URL.Path))
	}
}

func (a *Anthropic) record(req Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests = append(a.requests, req)
}

func (a *Anthropic) messages(w http.ResponseWriter, path string, body []byte) {
	var mb messagesBody
	if err := json.Unmarshal(body, &mb); err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("invalid_request_error", "agentmock: "+err.Error()))
		return
	}
	req := Request{Path: path, Stream: mb.Stream, Model: mb.Model, Body: body}
	for _, t := range mb.Tools {
		req.Tools = append(req.Tools, t.Name)
	}
	for _, m := range mb.Messages {
		if m.Role == "assistant" {
			req.Turn++
		}
		req.Cwd = cmp(req.Cwd, findCwd(m.Content))
	}
	req.Cwd = cmp(findCwd(mb.System), req.Cwd)
	if len(mb.Messages) > 0 {
		req.Prompt = textOf(mb.Messages[0].Content)
	}
	if n := len(mb.Messages); n > 0 && mb.Messages[n-1].Role == "user" {
		req.ToolResults = toolResults(mb.Messages[n-1].Content)
	}
	a.record(req)
	turn := Turn{Text: "done"}
	if len(req.Tools) == 0 {
		turn = Turn{Text: "Mock title"}
	} else if t, ok := a.script(req); ok {
		turn = t
	}
	if turn.Error != nil {
		st := turn.Error.Status
		if st == 0 {
			st = http.StatusBadRequest
		}
		writeJSON(w, st, errorBody(cmp(turn.Error.Type, "invalid_request_error"), turn.Error.Message))
		return
	}
	a.answer(w, req, turn)
}

// cmp returns the first non-empty string.
func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var cwdLine = regexp.MustCompile(`(?m)(?:Primary working directory|Working directory): *([^\s"\\]+)`)

// findCwd finds the working directory Claude Code names in its prompt.
func findCwd(raw json.RawMessage) string {
	m := cwdLine.FindSubmatch(raw)
	if m == nil {
		return ""
	}
	var s string
	if json.Unmarshal([]byte(`"`+string(m[1])+`"`), &s) != nil {
		return string(m[1])
	}
	return strings.TrimRight(s, `\`)
}

// textOf joins the text blocks of a message's content (or returns it, if
// it is a string).
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var bs []block
	_ = json.Unmarshal(raw, &bs) // content of another shape holds no text
	var parts []string
	for _, b := range bs {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func toolResults(raw json.RawMessage) []ToolResult {
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	var out []ToolResult
	for _, b := range bs {
		if b.Type != "tool_result" {
			continue
		}
		tr := ToolResult{ToolUseID: b.ToolUseID, IsError: b.IsError}
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			tr.Content = s
		} else {
			var parts []block
			_ = json.Unmarshal(b.Content, &parts) // content of another shape: kept empty
			for _, p := range parts {
				tr.Content += p.Text
			}
		}
		out = append(out, tr)
	}
	return out
}

func errorBody(typ, msg string) map[string]any {
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // the client went away: nothing to do
}

// content returns the turn's content blocks, with {cwd} filled in.
func (a *Anthropic) content(req Request, t Turn) []map[string]any {
	var cs []map[string]any
	if t.Text != "" {
		cs = append(cs, map[string]any{"type": "text", "text": t.Text})
	}
	if t.Tool != nil {
		in := map[string]any{}
		for k, v := range t.Tool.Input {
			if s, ok := v.(string); ok {
				v = strings.ReplaceAll(s, "{cwd}", req.Cwd)
			}
			in[k] = v
		}
		cs = append(cs, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_mock%06d", a.ids.Add(1)),
			"name": t.Tool.Name, "input": in})
	}
	return cs
}

// answer sends the turn as one message, streamed as server-sent events
// when the request asked for a stream.
func (a *Anthropic) answer(w http.ResponseWriter, req Request, t Turn) {
	in, out := t.InputTokens, t.OutputTokens
	if in == 0 {
		in = 10
	}
	if out == 0 {
		out = 5
	}
	stop := "end_turn"
	if t.Tool != nil {
		stop = "tool_use"
	}
	model := cmp(req.Model, "claude-sonnet-4-5")
	id := fmt.Sprintf("msg_mock%06d", a.ids.Add(1))
	content := a.content(req, t)
	usage := map[string]any{"input_tokens": in, "output_tokens": out,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if fl != nil {
			fl.Flush()
		}
	}
	send("message_start", map[string]any{"message": map[string]any{"id": id, "type": "message", "role": "assistant",
		"model": model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": in, "output_tokens": 1,
			"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}})
	for i, c := range content {
		switch c["type"] {
		case "text":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		case "tool_use":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use",
				"id": c["id"], "name": c["name"], "input": map[string]any{}}})
			js, _ := json.Marshal(c["input"])
			half := len(js) / 2 // two deltas, as a real stream splits its JSON
			for half > 0 && !utf8.RuneStart(js[half]) {
				half--
			}
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(js[:half])}})
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": string(js[half:])}})
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": out}})
	send("message_stop", map[string]any{})
}
