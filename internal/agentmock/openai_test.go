package agentmock

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestOpenAI_Stream: the mock answers POST /v1/responses with the
// Responses API's server-sent events, as the script says.
func TestOpenAI_Stream(t *testing.T) {
	m, err := NewOpenAI(func(r *OpenAIRequest) OpenAITurn {
		if r.LastIsToolOutput() {
			return OpenAITurn{Items: []OpenAIItem{Message("done")}, Usage: OpenAIUsage{Input: 10, Cached: 4, Output: 2}}
		}
		return OpenAITurn{Items: []OpenAIItem{FunctionCall("exec_command", map[string]string{"cmd": "true"})}}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	post := func(body string) []map[string]any {
		t.Helper()
		resp, err := http.Post(m.URL+"/responses", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
			t.Fatalf("status %d, content type %q", resp.StatusCode, ct)
		}
		var evs []map[string]any
		sc := bufio.NewScanner(resp.Body)
		event := ""
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				var ev map[string]any
				if err := json.Unmarshal([]byte(v), &ev); err != nil || ev["type"] != event {
					t.Fatalf("data %s under event %q: %v", v, event, err)
				}
				evs = append(evs, ev)
			}
		}
		return evs
	}
	types := func(evs []map[string]any) string {
		var out []string
		for _, ev := range evs {
			out = append(out, ev["type"].(string))
		}
		return strings.Join(out, " ")
	}
	evs := post(`{"model":"m","stream":true,"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}],"tools":[{"type":"function","name":"exec_command"}]}`)
	if got := types(evs); got != "response.created response.output_item.added response.output_item.done response.completed" {
		t.Errorf("tool turn: %s", got)
	}
	item := evs[2]["item"].(map[string]any)
	if item["type"] != "function_call" || item["name"] != "exec_command" || item["arguments"] != `{"cmd":"true"}` || item["call_id"] == "" {
		t.Errorf("function call %v", item)
	}
	evs = post(`{"model":"m","stream":true,"input":[{"type":"function_call_output","call_id":"c","output":"ok"}]}`)
	if got := types(evs); got != "response.created response.output_item.added response.output_text.delta response.output_item.done response.completed" {
		t.Errorf("answer turn: %s", got)
	}
	usage := evs[4]["response"].(map[string]any)["usage"].(map[string]any)
	if usage["input_tokens"] != 10.0 || usage["output_tokens"] != 2.0 || usage["input_tokens_details"].(map[string]any)["cached_tokens"] != 4.0 {
		t.Errorf("usage %v", usage)
	}
	reqs := m.Requests()
	if len(reqs) != 2 || !reqs[0].HasTool("exec_command") || reqs[0].UserTexts()[0] != "hi" || len(reqs[1].ToolOutputs()) != 1 {
		t.Errorf("requests %+v", reqs)
	}
	if resp, err := http.Get(m.URL + "/other"); err != nil || resp.StatusCode != 404 {
		t.Errorf("an unmocked path: %v %v", resp, err)
	}
}
