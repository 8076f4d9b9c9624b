package agentmock

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// OpenAI is a mock of the OpenAI Responses API (POST /v1/responses with
// stream: true, answered with server-sent events) listening on loopback.
// Each request is answered by Script, so a test decides which tool calls
// and messages the model "makes" and what usage it reports.
type OpenAI struct {
	// URL is the base URL, http://127.0.0.1:PORT/v1.
	URL string
	// Script answers one request; nil answers every request with a
	// message "done".
	Script func(*OpenAIRequest) OpenAITurn

	srv      *http.Server
	ln       net.Listener
	mu       sync.Mutex
	requests []*OpenAIRequest
	n        int
}

// OpenAIRequest is one request the mock received.
type OpenAIRequest struct {
	// Path is the request's path, e.g. /v1/responses.
	Path string `json:"-"`
	// Body is the raw JSON body.
	Body []byte `json:"-"`
	// Model, Instructions, Input and Tools are decoded from Body.
	Model        string            `json:"model"`
	Instructions string            `json:"instructions"`
	Input        []json.RawMessage `json:"input"`
	Tools        []json.RawMessage `json:"tools"`
	Stream       bool              `json:"stream"`
}

// ToolNames returns the names of the tools the request offers the model.
func (r *OpenAIRequest) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		var v struct {
			Type, Name string
		}
		if json.Unmarshal(t, &v) == nil {
			if v.Name != "" {
				out = append(out, v.Name)
			} else {
				out = append(out, v.Type)
			}
		}
	}
	return out
}

// HasTool reports whether the request offers a tool called name.
func (r *OpenAIRequest) HasTool(name string) bool {
	for _, n := range r.ToolNames() {
		if n == name {
			return true
		}
	}
	return false
}

// InputItem is the part of an input item the scripts look at.
type InputItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Output  any    `json:"output"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// Text returns the item's text content, joined.
func (it InputItem) Text() string {
	var parts []string
	for _, c := range it.Content {
		parts = append(parts, c.Text)
	}
	if s, ok := it.Output.(string); ok {
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n")
}

// Items decodes the request's input items.
func (r *OpenAIRequest) Items() []InputItem {
	out := make([]InputItem, 0, len(r.Input))
	for _, raw := range r.Input {
		var it InputItem
		_ = json.Unmarshal(raw, &it)
		out = append(out, it)
	}
	return out
}

// UserTexts returns the text of every user message of the input, in
// order: the conversation's prompts (and the context codex adds).
func (r *OpenAIRequest) UserTexts() []string {
	var out []string
	for _, it := range r.Items() {
		if it.Type == "message" && it.Role == "user" {
			out = append(out, it.Text())
		}
	}
	return out
}

// ToolOutputs returns the outputs of the tool calls in the input.
func (r *OpenAIRequest) ToolOutputs() []InputItem {
	var out []InputItem
	for _, it := range r.Items() {
		if strings.HasSuffix(it.Type, "_call_output") {
			out = append(out, it)
		}
	}
	return out
}

// LastIsToolOutput reports whether the input ends with a tool call's
// output: the model is to go on after a tool call it made.
func (r *OpenAIRequest) LastIsToolOutput() bool {
	items := r.Items()
	return len(items) > 0 && strings.HasSuffix(items[len(items)-1].Type, "_call_output")
}

// OpenAITurn is the mock model's answer to one request: output items,
// streamed in order, then response.completed with Usage.
type OpenAITurn struct {
	Items []OpenAIItem
	Usage OpenAIUsage
	// Delay, when set, is waited after the items and before
	// response.completed: a model that takes its time.
	Delay time.Duration
	// Status, when not 0, answers with that HTTP status and ErrorBody
	// instead of a stream.
	Status    int
	ErrorBody string
}

// OpenAIItem is one output item: a message or a function call.
type OpenAIItem struct {
	// Message is an assistant message's text (when Name is empty).
	Message string
	// Name and Arguments (JSON) make a function call, of a tool in
	// Namespace if set (codex puts an MCP server's tools in mcp__SERVER).
	Name      string
	Arguments string
	Namespace string
}

// Message is an output item that is an assistant message.
func Message(text string) OpenAIItem { return OpenAIItem{Message: text} }

// FunctionCall is an output item that calls the tool name with args,
// marshalled to JSON.
func FunctionCall(name string, args any) OpenAIItem {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return OpenAIItem{Name: name, Arguments: string(b)}
}

// OpenAIUsage is a response's usage, as the Responses API reports it.
type OpenAIUsage struct {
	Input, Cached, Output, Reasoning int64
}

// NewOpenAI starts the mock on a loopback port; Close stops it.
func NewOpenAI(script func(*OpenAIRequest) OpenAITurn) (*OpenAI, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	m := &OpenAI{Script: script, ln: ln, URL: "http://" + ln.Addr().String() + "/v1"}
	m.srv = &http.Server{Handler: http.HandlerFunc(m.serve)}
	go m.srv.Serve(ln)
	return m, nil
}

// Close stops the server.
func (m *OpenAI) Close() error { return m.srv.Close() }

// Requests returns the requests to /v1/responses received so far.
func (m *OpenAI) Requests() []*OpenAIRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*OpenAIRequest(nil), m.requests...)
}

func (m *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/responses"):
	case strings.HasSuffix(r.URL.Path, "/models"):
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[],"models":[]}`)
		return
	default:
		http.Error(w, `{"error":{"message":"not mocked: `+r.Method+" "+r.URL.Path+`"}}`, http.StatusNotFound)
		return
	}
	req := &OpenAIRequest{Path: r.URL.Path, Body: body}
	if err := json.Unmarshal(body, req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	m.mu.Lock()
	m.requests = append(m.requests, req)
	m.n++
	n := m.n
	script := m.Script
	m.mu.Unlock()
	turn := OpenAITurn{Items: []OpenAIItem{Message("done")}}
	if script != nil {
		turn = script(req)
	}
	if turn.Status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(turn.Status)
		io.WriteString(w, turn.ErrorBody)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	writeTurn(w, fmt.Sprintf("resp_%d", n), req.Model, turn)
}

// writeTurn streams turn as the Responses API does.
func writeTurn(w io.Writer, id, model string, turn OpenAITurn) {
	flush := func() {
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
	}
	send := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, b)
		flush()
	}
	resp := map[string]any{"id": id, "object": "response", "model": model, "status": "in_progress", "output": []any{}}
	send("response.created", map[string]any{"response": resp})
	var output []any
	for i, it := range turn.Items {
		var item map[string]any
		if it.Name != "" {
			item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%s_%d", id, i),
				"call_id": fmt.Sprintf("call_%s_%d", id, i), "name": it.Name, "arguments": it.Arguments, "status": "completed"}
			if it.Namespace != "" {
				item["namespace"] = it.Namespace
			}
			send("response.output_item.added", map[string]any{"output_index": i, "item": item})
		} else {
			msgID := fmt.Sprintf("msg_%s_%d", id, i)
			added := map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "in_progress", "content": []any{}}
			send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			send("response.output_text.delta", map[string]any{"item_id": msgID, "output_index": i, "content_index": 0, "delta": it.Message})
			item = map[string]any{"type": "message", "id": msgID, "role": "assistant", "status": "completed",
				"content": []any{map[string]any{"type": "output_text", "text": it.Message, "annotations": []any{}}}}
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": item})
		output = append(output, item)
	}
	time.Sleep(turn.Delay)
	u := turn.Usage
	resp["status"], resp["output"] = "completed", output
	resp["usage"] = map[string]any{
		"input_tokens":          u.Input,
		"input_tokens_details":  map[string]any{"cached_tokens": u.Cached},
		"output_tokens":         u.Output,
		"output_tokens_details": map[string]any{"reasoning_tokens": u.Reasoning},
		"total_tokens":          u.Input + u.Output,
	}
	send("response.completed", map[string]any{"response": resp})
}
