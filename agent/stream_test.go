package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestConsume_HugeResultLine is issue 26's "a very large final message
// lost the agent's result line": a Claude result event whose text is far
// over MaxLineBytes (a final message of 40 MB, with escapes and
// multi-byte characters at the cut) still gives the result, its cost and
// its status; before, the line was cut at MaxLineBytes, failed to parse,
// and the fork had no result.
func TestConsume_HugeResultLine(t *testing.T) {
	text := strings.Repeat("é\\n\\u00e9\\\"x", (40<<20)/12)
	in := `{"type":"system","subtype":"init","session_id":"s","model":"claude-sonnet-4-5"}` + "\n" +
		`{"type":"result","subtype":"success","is_error":false,"result":"` + text + `","session_id":"s","total_cost_usd":1.25,"usage":{"input_tokens":10,"output_tokens":5}}` + "\n"
	p, _ := NewParser(Claude)
	ev := NewEvidence(0, 0)
	if err := Consume(strings.NewReader(in), p, ev); err != nil {
		t.Fatal(err)
	}
	s := ev.Snapshot()
	if s.Result != "success" || !s.CostFinal || s.CostUSD != 1.25 || s.ResultText == "" || s.WarningsTotal != 0 {
		t.Errorf("result %q final %v cost %v text %d bytes, %d warnings", s.Result, s.CostFinal, s.CostUSD, len(s.ResultText), s.WarningsTotal)
	}
}

// TestReadLine_CutsStringsAtBoundaries: every cut keeps the line valid
// JSON, whatever byte the limit falls on (inside an escape, inside a
// multi-byte character), and short strings pass unchanged.
func TestReadLine_CutsStringsAtBoundaries(t *testing.T) {
	for _, unit := range []string{"a", "é", "\\n", "\\u00e9", "\\\"", "日本", "\\\\"} {
		for pad := range 7 {
			s := strings.Repeat("a", pad) + strings.Repeat(unit, MaxStringBytes/len(unit)+3)
			line := `{"k":"` + s + `","short":"é\"x","n":1}`
			var sk skimmer
			for i := 0; i < len(line); i++ {
				sk.add(line[i])
			}
			var v map[string]any
			if err := json.Unmarshal(sk.out, &v); err != nil {
				t.Fatalf("unit %q pad %d: %v", unit, pad, err)
			}
			k, _ := v["k"].(string)
			if !strings.HasSuffix(k, "…") || len(k) > MaxStringBytes+8 || v["short"] != "é\"x" || v["n"] != 1.0 {
				t.Errorf("unit %q pad %d: k %d bytes (suffix %q), short %q", unit, pad, len(k), k[max(0, len(k)-8):], v["short"])
			}
		}
	}
}
