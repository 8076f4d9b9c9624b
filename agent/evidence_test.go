package agent

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEvidence_BoundedOutput(t *testing.T) {
	tests := []struct {
		name      string
		lines     []string
		max       int
		want      string
		truncated bool
	}{
		{"fits", []string{"ab", "cd"}, 16, "ab\ncd\n", false},
		{"tail kept", []string{"0123456789", "abc"}, 6, "9\nabc\n", true},
		{"rune boundary", []string{"ééé"}, 4, "é\n", true}, // 7 bytes; a cut mid-rune moves forward
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := NewEvidence(tt.max, 0)
			var total int64
			for _, l := range tt.lines {
				ev.Add(Event{Kind: EventText, Text: l})
				total += int64(len(l) + 1)
			}
			s := ev.Snapshot()
			if s.Output != tt.want || s.OutputTruncated != tt.truncated || s.OutputTotalBytes != total {
				t.Errorf("output %q truncated %v total %d; want %q %v %d", s.Output, s.OutputTruncated, s.OutputTotalBytes, tt.want, tt.truncated, total)
			}
		})
	}
}

func TestEvidence_ManyLinesStayBounded(t *testing.T) {
	ev := NewEvidence(1024, 0)
	for i := range 10000 {
		ev.Add(Event{Kind: EventText, Text: fmt.Sprintf("line %d ü", i)})
		if len(ev.out) > 2*1024 {
			t.Fatalf("buffer grew to %d", len(ev.out))
		}
	}
	s := ev.Snapshot()
	if len(s.Output) > 1024 || !utf8.ValidString(s.Output) || !strings.HasSuffix(s.Output, "line 9999 ü\n") {
		t.Errorf("output len %d, tail %q", len(s.Output), s.Output[len(s.Output)-20:])
	}
}

func TestEvidence_BoundedCalls(t *testing.T) {
	ev := NewEvidence(0, 3)
	for i := range 5 {
		ev.Add(Event{Kind: EventToolCall, ToolID: fmt.Sprint(i), ToolName: "Bash", Command: fmt.Sprint("cmd", i)})
	}
	ev.Add(Event{Kind: EventToolCall, ToolID: "r", ToolName: "Read"})
	ev.Add(Event{Kind: EventToolResult, ToolID: "4", IsError: true})
	s := ev.Snapshot()
	if s.ToolCallsTotal != 6 || len(s.ToolCalls) != 3 || s.ToolCalls[0].ID != "3" {
		t.Errorf("calls %+v total %d", s.ToolCalls, s.ToolCallsTotal)
	}
	if !s.ToolCalls[1].Done || !s.ToolCalls[1].IsError {
		t.Errorf("result not matched: %+v", s.ToolCalls[1])
	}
	if s.CommandsTotal != 5 || strings.Join(s.Commands, ",") != "cmd2,cmd3,cmd4" {
		t.Errorf("commands %q total %d", s.Commands, s.CommandsTotal)
	}
}

func TestEvidence_Cost(t *testing.T) {
	tests := []struct {
		name   string
		events []Event
		want   float64
		final  bool
	}{
		{"running", []Event{{Kind: EventCost, CostUSD: 0.25}, {Kind: EventCost, CostUSD: 0.5}}, 0.75, false},
		{"nan and negative are zero", []Event{{Kind: EventCost, CostUSD: math.NaN()}, {Kind: EventCost, CostUSD: -1}, {Kind: EventCost, CostUSD: 0.5}}, 0.5, false},
		{"final replaces", []Event{{Kind: EventCost, CostUSD: 0.25}, {Kind: EventCost, CostUSD: 0.1, Final: true}}, 0.1, true},
		{"estimates after final ignored", []Event{{Kind: EventCost, CostUSD: 0.1, Final: true}, {Kind: EventCost, CostUSD: 9}}, 0.1, true},
		{"nan final is zero", []Event{{Kind: EventCost, CostUSD: 2}, {Kind: EventCost, CostUSD: math.NaN(), Final: true}}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := NewEvidence(0, 0)
			for _, e := range tt.events {
				ev.Add(e)
			}
			if usd, final := ev.Cost(); usd != tt.want || final != tt.final {
				t.Errorf("cost %v final %v, want %v %v", usd, final, tt.want, tt.final)
			}
		})
	}
}

func TestEvidence_JSON(t *testing.T) {
	ev := NewEvidence(0, 0)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ev.Start(t0)
	ev.Add(Event{Kind: EventSession, SessionID: "s1"})
	ev.Add(Event{Kind: EventUsage, Usage: Usage{InputTokens: 3, OutputTokens: 4}})
	ev.Add(Event{Kind: EventResult, Text: "done"})
	ev.Finish(t0.Add(1500*time.Millisecond), 0)
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"session_id":"s1"`, `"wall_ms":1500`, `"exit_code":0`, `"result":"success"`,
		`"tokens":{"input_tokens":3,"output_tokens":4,`, `"tool_calls_total":0`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON %s lacks %s", data, want)
		}
	}
	var back Snapshot
	if err := json.Unmarshal(data, &back); err != nil || back.WallMS != 1500 || back.SessionID != "s1" {
		t.Errorf("round trip %+v, %v", back, err)
	}
}

func TestEvidence_Concurrent(t *testing.T) {
	ev := NewEvidence(64, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				ev.Add(Event{Kind: EventCost, CostUSD: 0.01})
				ev.Add(Event{Kind: EventText, Text: "x"})
				ev.Cost()
				_ = ev.Snapshot()
			}
		})
	}
	wg.Wait()
	if usd, _ := ev.Cost(); math.Abs(usd-8) > 1e-9 {
		t.Errorf("cost %v, want 8", usd)
	}
}
