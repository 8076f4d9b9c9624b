package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// consumeFile runs one fixture through a parser into a fresh Evidence.
// A pretty-printed .json file is compacted to one line first.
func consumeFile(t *testing.T, kind Kind, name string, opts ...Option) Snapshot {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".json") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			t.Fatal(err)
		}
		data = buf.Bytes()
	}
	p, err := NewParser(kind, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ev := NewEvidence(0, 0)
	if err := Consume(bytes.NewReader(data), p, ev); err != nil {
		t.Fatal(err)
	}
	return ev.Snapshot()
}

func closeTo(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

func TestParser_Fixtures(t *testing.T) {
	tests := []struct {
		kind      Kind
		file      string
		calls     []string // tool names, in order
		commands  []string
		tokens    Usage
		cost      float64
		costFinal bool
		session   string
		result    string
	}{
		{Claude, "claude/01-basic-text.gleam-golden.jsonl", nil, nil,
			Usage{InputTokens: 10, OutputTokens: 25, CacheWriteTokens: 21570},
			0.1354875, true, "1d1e46f9-35c7-4834-b529-846d5bb82288", "success"},
		{Claude, "claude/02-bash-tool-use.gleam-assembled.jsonl", []string{"Bash"}, []string{"ls -la"},
			Usage{InputTokens: 18, OutputTokens: 424, CacheReadTokens: 17254, CacheWriteTokens: 25067},
			0.24722425, true, "40e7b02d-c0f9-4876-9010-f514d4eb0603", "success"},
		{Claude, "claude/03-multi-tool-read-glob-bash.vecsum.jsonl",
			[]string{"Read", "Glob", "Glob", "Read", "Read", "Bash", "Bash", "Bash", "Bash"},
			[]string{`ls -la ./tools/compiler/ 2>/dev/null || echo "No compiler directory exists yet"`,
				"./tools/compiler/dotnet.exe --version", "./tools/compiler/dotnet.exe --list-sdks",
				"./tools/compiler/dotnet.exe --list-runtimes"},
			Usage{InputTokens: 25, OutputTokens: 1108, CacheReadTokens: 161934, CacheWriteTokens: 14149},
			0.29084019999999994, true, "47e6a6c9-6062-4222-94ef-54e55d3664c2", "success"},
		{Claude, "claude/04-api-error-529-is_error.vecsum.jsonl", nil, nil, Usage{},
			0.0176027, true, "7942dfb7-97da-4b14-97f2-4bd255fc8c94", "error"},
		{Claude, "claude/result-success.agentcmd-2.0.28.json", nil, nil,
			Usage{InputTokens: 3, OutputTokens: 13, CacheWriteTokens: 21588},
			0.08264239999999999, true, "45929484-a577-456f-933c-a5aff0d315b0", "success"},
		{Codex, "codex/01-docs-sample.openai-codex.jsonl", []string{"command_execution"}, []string{"bash -lc ls"},
			Usage{InputTokens: 315, OutputTokens: 122, CacheReadTokens: 24448},
			0, false, "0199a213-81c0-7800-8aa1-bbab2a035a53", "success"},
		{Codex, "codex/02-simple-answer.agentcmd.jsonl", nil, nil,
			Usage{InputTokens: 2946, OutputTokens: 7},
			0, false, "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5", "success"},
		{Codex, "codex/03-command-execution-ls.agentcmd.jsonl", []string{"command_execution"}, []string{"bash -lc ls"},
			Usage{InputTokens: 1048, OutputTokens: 129, CacheReadTokens: 4992},
			0, false, "019a2d7a-6455-7170-a661-c6d8b94c630a", "success"},
		{Codex, "codex/04-file-change-add.agentcmd.jsonl", []string{"file_change"}, nil,
			Usage{InputTokens: 1912, OutputTokens: 51, CacheReadTokens: 4096},
			0, false, "019a2d7a-8e1c-7111-b1a6-8cec551a55a0", "success"},
		{Codex, "codex/05-command-cat-two-reasoning.agentcmd.jsonl", []string{"command_execution"},
			[]string{"bash -lc 'cat test.js'"},
			Usage{InputTokens: 967, OutputTokens: 204, CacheReadTokens: 5120},
			0, false, "019a2d7b-231d-7290-acc1-6bc6571440da", "success"},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			var opts []Option
			if tt.kind == Codex {
				opts = append(opts, WithPrices(nil)) // tokens only: prices are TestParser_CodexDefaultPrices's
			}
			s := consumeFile(t, tt.kind, tt.file, opts...)
			var names []string
			for _, c := range s.ToolCalls {
				names = append(names, c.Name)
				if !c.Done || c.IsError {
					t.Errorf("call %+v: want done without error", c)
				}
			}
			if !slices.Equal(names, tt.calls) || s.ToolCallsTotal != len(tt.calls) {
				t.Errorf("calls = %v (total %d), want %v", names, s.ToolCallsTotal, tt.calls)
			}
			if !slices.Equal(s.Commands, tt.commands) {
				t.Errorf("commands = %q, want %q", s.Commands, tt.commands)
			}
			if s.Tokens != tt.tokens {
				t.Errorf("tokens = %+v, want %+v", s.Tokens, tt.tokens)
			}
			if s.CostUSD != tt.cost || s.CostFinal != tt.costFinal {
				t.Errorf("cost = %v final %v, want %v final %v", s.CostUSD, s.CostFinal, tt.cost, tt.costFinal)
			}
			if s.SessionID != tt.session || s.Result != tt.result {
				t.Errorf("session, result = %q, %q; want %q, %q", s.SessionID, s.Result, tt.session, tt.result)
			}
			if s.WarningsTotal != 0 {
				t.Errorf("warnings %v", s.Warnings)
			}
		})
	}
}

// feedAll feeds lines until (not including) the first that contains stop.
func feedUntil(t *testing.T, kind Kind, file, stop string, opts ...Option) Snapshot {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := NewParser(kind, opts...)
	ev := NewEvidence(0, 0)
	for line := range bytes.Lines(data) {
		if bytes.Contains(line, []byte(stop)) {
			break
		}
		evs, err := p.Feed(line)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			ev.Add(e)
		}
	}
	return ev.Snapshot()
}

// TestParser_ClaudeLive checks the live sums before the result line: usage
// deduplicated by message id, and the estimate priced by AnthropicPrices,
// against the recorded totals and modelUsage costs.
func TestParser_ClaudeLive(t *testing.T) {
	tests := []struct {
		file   string
		tokens Usage
		cost   float64
	}{
		// 10*5 + 5*25 + 21570*6.25 per MTok (claude-opus-4-5).
		{"claude/01-basic-text.gleam-golden.jsonl",
			Usage{InputTokens: 10, OutputTokens: 5, CacheWriteTokens: 21570}, 0.1349875},
		// Equal to the result's usage and to modelUsage costUSD of claude-sonnet-4-5.
		{"claude/03-multi-tool-read-glob-bash.vecsum.jsonl",
			Usage{InputTokens: 25, OutputTokens: 1108, CacheReadTokens: 161934, CacheWriteTokens: 14149}, 0.11833395},
		// "<synthetic>" model: no price, no estimate.
		{"claude/04-api-error-529-is_error.vecsum.jsonl", Usage{}, 0},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.file), func(t *testing.T) {
			s := feedUntil(t, Claude, tt.file, `"type":"result"`)
			if s.Tokens != tt.tokens || !closeTo(s.CostUSD, tt.cost) || s.CostFinal {
				t.Errorf("live tokens %+v cost %v final %v; want %+v %v", s.Tokens, s.CostUSD, s.CostFinal, tt.tokens, tt.cost)
			}
		})
	}
}

// TestAnthropicPrices checks the table against modelUsage entries recorded
// in the fixtures (claude/result-success..., claude/04-...).
func TestAnthropicPrices(t *testing.T) {
	tests := []struct {
		model string
		u     Usage
		want  float64
	}{
		{"claude-haiku-4-5-20251001", Usage{InputTokens: 3, OutputTokens: 200, CacheReadTokens: 4804}, 0.0014834},
		{"claude-sonnet-4-5-20250929", Usage{InputTokens: 3, OutputTokens: 13, CacheWriteTokens: 21588}, 0.081159},
		{"claude-haiku-4-5-20251001", Usage{InputTokens: 2, OutputTokens: 122, CacheReadTokens: 14932}, 0.0021052},
		{"claude-opus-4-5-20251101", Usage{InputTokens: 4, OutputTokens: 160, CacheReadTokens: 22955}, 0.0154975},
	}
	for _, tt := range tests {
		p, ok := AnthropicPrices().Lookup(tt.model)
		if got := p.Cost(tt.u); !ok || !closeTo(got, tt.want) {
			t.Errorf("%s: cost %v (found %v), want %v", tt.model, got, ok, tt.want)
		}
	}
	if _, ok := AnthropicPrices().Lookup("claude-3-opus"); ok {
		t.Error("unknown model priced")
	}
}

func TestParser_CodexPriced(t *testing.T) {
	table := PriceTable{"gpt-5": {InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125}}
	s := consumeFile(t, Codex, "codex/01-docs-sample.openai-codex.jsonl", WithPrices(table), WithModel("gpt-5-codex"))
	want := (315*1.25 + 122*10 + 24448*0.125) / 1e6
	// The usage of turn.completed, priced, replaces the live estimate.
	if !closeTo(s.CostUSD, want) || !s.CostFinal {
		t.Errorf("cost %v final %v, want %v", s.CostUSD, s.CostFinal, want)
	}
	s = consumeFile(t, Claude, "claude/01-basic-text.gleam-golden.jsonl", WithPrices(nil))
	if s.CostUSD != 0.1354875 {
		t.Errorf("claude without prices: cost %v, want the final total", s.CostUSD)
	}
}

func TestParser_CodexDefaultPrices(t *testing.T) {
	s := consumeFile(t, Codex, "codex/01-docs-sample.openai-codex.jsonl", WithModel("gpt-5-codex"))
	if want := (315*1.25 + 122*10 + 24448*0.125) / 1e6; !closeTo(s.CostUSD, want) {
		t.Errorf("gpt-5-codex at list prices: cost %v, want %v", s.CostUSD, want)
	}
	// No model: codex's default one, gpt-6.2-sol.
	if s = consumeFile(t, Codex, "codex/01-docs-sample.openai-codex.jsonl"); !closeTo(s.CostUSD, (315*1.75+122*14+24448*0.175)/1e6) {
		t.Errorf("no model: cost %v, want codex's default model's price", s.CostUSD)
	}
	// An unknown model: the most expensive known rate, said once.
	var unknown []string
	s = consumeFile(t, Codex, "codex/01-docs-sample.openai-codex.jsonl", WithModel("llama-3"),
		WithUnknownModel(func(m string) { unknown = append(unknown, m) }))
	if mx := OpenAIPrices().Max(); !closeTo(s.CostUSD, mx.Cost(Usage{InputTokens: 315, OutputTokens: 122, CacheReadTokens: 24448})) || len(unknown) != 1 || unknown[0] != "llama-3" {
		t.Errorf("unknown model: cost %v, unknown %q", s.CostUSD, unknown)
	}
	for _, c := range []struct {
		kind  Kind
		model string
		want  bool
	}{{Claude, "", true}, {Codex, "", true}, {Codex, "gpt-5-codex", true}, {Codex, "llama-3", true}, {CommandKind, "", false}} {
		if got := Priced(c.kind, c.model); got != c.want {
			t.Errorf("Priced(%s, %q) = %v", c.kind, c.model, got)
		}
	}
}

func TestParser_Malformed(t *testing.T) {
	tests := []struct {
		kind Kind
		line string
	}{
		{Claude, `{"type":"assistant",`},
		{Claude, `not json`},
		{Claude, `[{"type":"result"`},
		{Codex, `{"type":"turn.completed","usage":{"input_tokens":"x"}}`},
		{Codex, `}`},
		{CommandKind, `{"tine_cost_usd": "0.5"}`},
		{CommandKind, `{"tine_cost_usd": true}`},
	}
	for _, tt := range tests {
		p, _ := NewParser(tt.kind)
		evs, err := p.Feed([]byte(tt.line))
		var pe *ParseError
		if !errors.Is(err, ErrMalformed) || !errors.As(err, &pe) || pe.Line != 1 || len(evs) != 0 {
			t.Errorf("%s %q: events %v, err %v; want a line-1 ParseError", tt.kind, tt.line, evs, err)
		}
		// The parser goes on after a malformed line.
		if _, err := p.Feed([]byte(`{"type":"unknown.event"}`)); err != nil {
			t.Errorf("%s: after malformed line: %v", tt.kind, err)
		}
	}
}

func TestParser_UnknownIgnored(t *testing.T) {
	lines := map[Kind][]string{
		Claude: {`{"type":"stream_event","event":{}}`, `{"type":"system","subtype":"hook_started"}`, `{}`, ``},
		Codex:  {`{"type":"turn.started"}`, `{"type":"item.completed","item":{"id":"i","type":"reasoning","text":"x"}}`, `{"type":"future"}`},
	}
	for kind, ls := range lines {
		p, _ := NewParser(kind)
		for _, l := range ls {
			if evs, err := p.Feed([]byte(l)); err != nil || len(evs) != 0 {
				t.Errorf("%s %q: %v, %v; want nothing", kind, l, evs, err)
			}
		}
	}
}

func TestParser_CodexFailures(t *testing.T) {
	p, _ := NewParser(Codex)
	lines := []string{
		`{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"bash -lc false","aggregated_output":"","exit_code":1,"status":"completed"}}`,
		`{"type":"turn.failed","error":{"message":"boom"}}`,
	}
	ev := NewEvidence(0, 0)
	for _, l := range lines {
		evs, err := p.Feed([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			ev.Add(e)
		}
	}
	s := ev.Snapshot()
	c := s.ToolCalls[0]
	if len(s.ToolCalls) != 1 || !c.IsError || c.ExitCode == nil || *c.ExitCode != 1 {
		t.Errorf("calls %+v: want one failed call with exit 1", s.ToolCalls)
	}
	if s.Result != "error" || s.ResultText != "boom" {
		t.Errorf("result %q %q", s.Result, s.ResultText)
	}
}

func TestParser_ClaudeNegativeTotal(t *testing.T) {
	p, _ := NewParser(Claude)
	evs, err := p.Feed([]byte(`{"type":"result","is_error":false,"total_cost_usd":-3}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := NewEvidence(0, 0)
	ev.Add(Event{Kind: EventCost, CostUSD: 0.5})
	for _, e := range evs {
		ev.Add(e)
	}
	if usd, final := ev.Cost(); usd != 0 || !final {
		t.Errorf("cost %v final %v, want 0 final", usd, final)
	}
}

func TestParser_CommandCost(t *testing.T) {
	tests := []struct {
		line     string
		kind     EventKind
		cost     float64
		wantText string
	}{
		{`{"tine_cost_usd": 0.25}`, EventCost, 0.25, ""},
		{`  {"tine_cost_usd":1e-3}  `, EventCost, 0.001, ""},
		{`{"tine_cost_usd": -2}`, EventCost, 0, ""},
		{`{"tine_cost_usd": NaN}`, EventCost, 0, ""},
		{`{"tine_cost_usd": +Inf}`, EventCost, 0, ""},
		{`{"other": 1}`, EventText, 0, `{"other": 1}`},
		{`hello tine_cost_usd`, EventText, 0, "hello tine_cost_usd"},
		{"plain output\r\n", EventText, 0, "plain output"},
	}
	for _, tt := range tests {
		p, _ := NewParser(CommandKind)
		evs, err := p.Feed([]byte(tt.line))
		if err != nil || len(evs) != 1 {
			t.Fatalf("%q: %v, %v", tt.line, evs, err)
		}
		e := evs[0]
		if e.Kind != tt.kind || e.CostUSD != tt.cost || e.Text != tt.wantText {
			t.Errorf("%q: got %+v", tt.line, e)
		}
	}
}

func TestConsume_Command(t *testing.T) {
	in := "working\n{\"tine_cost_usd\": 0.5}\n{\"tine_cost_usd\": NaN}\n{\"tine_cost_usd\": 0.25}\n{\"tine_cost_usd\": \"x\"}\ndone"
	p, _ := NewParser(CommandKind)
	ev := NewEvidence(0, 0)
	if err := Consume(strings.NewReader(in), p, ev); err != nil {
		t.Fatal(err)
	}
	s := ev.Snapshot()
	if s.CostUSD != 0.75 || s.CostFinal || s.Output != "working\ndone\n" || s.WarningsTotal != 1 {
		t.Errorf("snapshot %+v", s)
	}
}

func TestNewParser_UnknownKind(t *testing.T) {
	if _, err := NewParser("gemini"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("err %v, want ErrUnknownKind", err)
	}
}
