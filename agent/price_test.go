package agent

import (
	"strconv"
	"strings"
	"testing"
)

// TestAnthropicPrices_Opus55 checks claude-opus-5-5 (Claude Code
// 2.1.332's default model) against the total_cost_usd the real claude
// reported for mock usage: 20 input and 500005 output tokens cost
// $10.00018; 1000000 input and 1 output token $4.00002.
func TestAnthropicPrices_Opus55(t *testing.T) {
	p, ok := AnthropicPrices().Lookup(ClaudeDefaultModel)
	if !ok {
		t.Fatalf("%s has no price", ClaudeDefaultModel)
	}
	for _, c := range []struct {
		u    Usage
		want float64
	}{{Usage{InputTokens: 20, OutputTokens: 500005}, 10.00018}, {Usage{InputTokens: 1000000, OutputTokens: 1}, 4.00002}} {
		if got := p.Cost(c.u); !closeTo(got, c.want) {
			t.Errorf("cost of %+v = %v, want %v", c.u, got, c.want)
		}
	}
	if _, ok := OpenAIPrices().Lookup(CodexDefaultModel); !ok {
		t.Errorf("codex's default model %s has no price", CodexDefaultModel)
	}
}

func TestPriceTable_MaxAndUnknown(t *testing.T) {
	tab := PriceTable{
		"a": {InputPerMTok: 1, OutputPerMTok: 30, CacheReadPerMTok: 0.1, CacheWritePerMTok: 2},
		"b": {InputPerMTok: 5, OutputPerMTok: 10, CacheReadPerMTok: 0.5, CacheWritePerMTok: 1, CacheWrite1hPerMTok: 4},
	}
	want := Price{InputPerMTok: 5, OutputPerMTok: 30, CacheReadPerMTok: 0.5, CacheWritePerMTok: 2, CacheWrite1hPerMTok: 4}
	if got := tab.Max(); got != want {
		t.Errorf("Max = %+v, want %+v", got, want)
	}
	if p, known := tab.Price("a-2"); !known || p.OutputPerMTok != 30 {
		t.Errorf("Price(a-2) = %+v, %v: want a's by prefix", p, known)
	}
	for _, m := range []string{"zzz", ""} {
		if p, known := tab.Price(m); known || p != want {
			t.Errorf("Price(%q) = %+v, %v: want the most expensive rate, unknown", m, p, known)
		}
	}
	// Every default model is at most the table's maximum.
	for _, tab := range []PriceTable{AnthropicPrices(), OpenAIPrices()} {
		mx := tab.Max()
		u := Usage{InputTokens: 1e6, OutputTokens: 1e6, CacheReadTokens: 1e6, CacheWriteTokens: 1e6}
		for m, p := range tab {
			if p.Cost(u) > mx.Cost(u) {
				t.Errorf("%s costs more than the maximum", m)
			}
		}
	}
}

func TestPriceTable_With(t *testing.T) {
	base := AnthropicPrices()
	got := base.With(PriceTable{"claude-opus-5-5": {InputPerMTok: 1, OutputPerMTok: 2}, "my-model": {InputPerMTok: 3, OutputPerMTok: 4}})
	if p := got["claude-opus-5-5"]; p.InputPerMTok != 1 || p.OutputPerMTok != 2 || p.CacheReadPerMTok != 0.40 {
		t.Errorf("override = %+v: want input and output replaced, cache prices kept", p)
	}
	if p, ok := got.Lookup("my-model-7"); !ok || p.OutputPerMTok != 4 {
		t.Errorf("added model = %+v, %v", p, ok)
	}
	if base["claude-opus-5-5"].InputPerMTok != 4 {
		t.Error("With changed its receiver")
	}
}

// partialStream is the stream of the real claude 2.1.332 with
// --include-partial-messages against the mock (cut to what the parser
// reads): one text message whose message_delta reports 500000 output
// tokens, then the result.
var partialStream = []string{
	`{"type":"system","subtype":"init","session_id":"s1","model":"claude-opus-5-5"}`,
	`{"type":"stream_event","event":{"message":{"content":[],"id":"msg_1","model":"claude-opus-5-5","role":"assistant","type":"message","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":10,"output_tokens":1}},"type":"message_start"},"session_id":"s1"}`,
	`{"type":"stream_event","event":{"content_block":{"text":"","type":"text"},"index":0,"type":"content_block_start"},"session_id":"s1","api_message_id":"msg_1"}`,
	`{"type":"stream_event","event":{"delta":{"text":"lots of text here","type":"text_delta"},"index":0,"type":"content_block_delta"},"session_id":"s1","api_message_id":"msg_1"}`,
	`{"type":"assistant","message":{"content":[{"text":"lots of text here","type":"text"}],"id":"msg_1","model":"claude-opus-5-5","role":"assistant","type":"message","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":10,"output_tokens":1}},"session_id":"s1"}`,
	`{"type":"stream_event","event":{"index":0,"type":"content_block_stop"},"session_id":"s1","api_message_id":"msg_1"}`,
	`{"type":"stream_event","event":{"delta":{"stop_reason":"end_turn","stop_sequence":null},"type":"message_delta","usage":{"output_tokens":500000}},"session_id":"s1","api_message_id":"msg_1"}`,
	`{"type":"stream_event","event":{"type":"message_stop"},"session_id":"s1","api_message_id":"msg_1"}`,
	`{"type":"result","subtype":"success","is_error":false,"result":"lots of text here","session_id":"s1","total_cost_usd":10.00004,"usage":{"input_tokens":10,"output_tokens":500000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}`,
}

// feedLines runs lines through a Claude parser and returns the evidence
// after each line.
func feedLines(t *testing.T, lines []string, opts ...Option) []Snapshot {
	t.Helper()
	p, err := NewParser(Claude, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ev := NewEvidence(0, 0)
	var snaps []Snapshot
	for _, l := range lines {
		evs, err := p.Feed([]byte(l))
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		for _, e := range evs {
			ev.Add(e)
		}
		snaps = append(snaps, ev.Snapshot())
	}
	return snaps
}

// TestParser_ClaudeMessageDeltaUsage: the live estimate counts the
// output of message_delta, not the assistant line's output_tokens 1, and
// the final total_cost_usd replaces it.
func TestParser_ClaudeMessageDeltaUsage(t *testing.T) {
	snaps := feedLines(t, partialStream)
	live := snaps[len(snaps)-2]
	if live.Tokens.OutputTokens != 500000 || live.Tokens.InputTokens != 10 {
		t.Errorf("live tokens %+v, want 10 in, 500000 out", live.Tokens)
	}
	if want := (10*4 + 500000*20) / 1e6; !closeTo(live.CostUSD, want) || live.CostFinal {
		t.Errorf("live cost %v final %v, want %v", live.CostUSD, live.CostFinal, want)
	}
	if last := snaps[len(snaps)-1]; last.CostUSD != 10.00004 || !last.CostFinal {
		t.Errorf("final cost %v final %v, want total_cost_usd", last.CostUSD, last.CostFinal)
	}
}

// TestParser_ClaudeContentEstimate: while a message streams (and when
// no message_delta comes), its output is estimated from its content,
// chars/4.
func TestParser_ClaudeContentEstimate(t *testing.T) {
	big := strings.Repeat("x", 40000) // 10000 tokens
	lines := []string{
		`{"type":"stream_event","event":{"message":{"id":"m","model":"claude-opus-5-5","usage":{"input_tokens":10,"output_tokens":1}},"type":"message_start"}}`,
		`{"type":"stream_event","event":{"delta":{"text":"` + big + `","type":"text_delta"},"type":"content_block_delta"},"api_message_id":"m"}`,
	}
	snaps := feedLines(t, lines)
	if got := snaps[1].Tokens.OutputTokens; got != 10000 {
		t.Errorf("streaming estimate %d output tokens, want 10000", got)
	}
	// Without stream events: the assistant line's content.
	snaps = feedLines(t, []string{`{"type":"assistant","message":{"id":"m","model":"claude-opus-5-5","content":[{"type":"text","text":"` + big + `"}],"usage":{"input_tokens":10,"output_tokens":1}}}`})
	if got := snaps[0].Tokens.OutputTokens; got != 10000 || !closeTo(snaps[0].CostUSD, (10*4+10000*20)/1e6) {
		t.Errorf("assistant-line estimate %d tokens $%v, want 10000", got, snaps[0].CostUSD)
	}
}

// TestParser_ClaudeUnknownModel: a model without a price is charged at the
// most expensive known rate, and said once.
func TestParser_ClaudeUnknownModel(t *testing.T) {
	var said []string
	lines := []string{
		`{"type":"assistant","message":{"id":"a","model":"claude-future-9","content":[],"usage":{"input_tokens":1000,"output_tokens":1000}}}`,
		`{"type":"assistant","message":{"id":"b","model":"claude-future-9","content":[],"usage":{"input_tokens":1000,"output_tokens":1000}}}`,
	}
	snaps := feedLines(t, lines, WithUnknownModel(func(m string) { said = append(said, m) }))
	mx := AnthropicPrices().Max()
	if want := mx.Cost(Usage{InputTokens: 2000, OutputTokens: 2000}); !closeTo(snaps[1].CostUSD, want) || want == 0 {
		t.Errorf("cost %v, want %v (the most expensive rate)", snaps[1].CostUSD, want)
	}
	if len(said) != 1 || said[0] != "claude-future-9" {
		t.Errorf("unknown models said: %q", said)
	}
}

// TestParser_ClaudeStreamWithoutMessageID is issue 26's budget overrun
// with Claude Code 2.1.197, whose stream events carry no api_message_id:
// the deltas and message_delta of each message belong to the message the
// last message_start opened. Before, every delta after the first
// message's was ignored and a later message_delta was charged twice.
func TestParser_ClaudeStreamWithoutMessageID(t *testing.T) {
	var lines []string
	for _, m := range []struct {
		id  string
		out int
	}{{"msg_1", 1000}, {"msg_2", 2000}} {
		text := strings.Repeat("y", 4*m.out)
		lines = append(lines,
			`{"type":"stream_event","event":{"message":{"id":"`+m.id+`","model":"claude-opus-5-5","usage":{"input_tokens":10,"output_tokens":1}},"type":"message_start"}}`,
			`{"type":"stream_event","event":{"delta":{"text":"`+text+`","type":"text_delta"},"type":"content_block_delta"}}`,
			`{"type":"assistant","message":{"id":"`+m.id+`","model":"claude-opus-5-5","content":[{"type":"text","text":"`+text+`"}],"usage":{"input_tokens":10,"output_tokens":1}}}`,
			`{"type":"stream_event","event":{"delta":{"stop_reason":"end_turn"},"type":"message_delta","usage":{"output_tokens":`+strconv.Itoa(m.out)+`}}}`,
		)
	}
	snaps := feedLines(t, lines)
	if got := snaps[5].Tokens.OutputTokens; got != 1000+2000 {
		t.Errorf("while the second message streams: %d output tokens, want 3000 (its deltas counted)", got)
	}
	last := snaps[len(snaps)-1]
	if last.Tokens.OutputTokens != 3000 || last.Tokens.InputTokens != 20 {
		t.Errorf("tokens %+v, want 20 in, 3000 out (each message once)", last.Tokens)
	}
	if want := (20*4 + 3000*20) / 1e6; !closeTo(last.CostUSD, want) {
		t.Errorf("cost %v, want %v", last.CostUSD, want)
	}
}
