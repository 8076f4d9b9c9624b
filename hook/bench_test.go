package hook

import (
	"context"
	"io"
	"testing"

	"github.com/tinehq/tine/classify"
)

// BenchmarkHookDecision is the in-process cost of one PreToolUse event:
// parse, classify, render, with a recorder writing JSON lines.
func BenchmarkHookDecision(b *testing.B) {
	pre := readFixture(b, claudePre)
	for _, bc := range []struct{ name, cmd string }{
		{"allow", "echo WORKTREE_PLUGIN_ACK"},
		{"fork_first", "npm update"},
		{"pipeline", "cd web && npm ci && npm test -- --coverage | tee out.log && git diff --stat"},
	} {
		payload := withCommand(b, pre, bc.cmd)
		env := Env{Run: "source", Role: classify.Source, Recorder: &FileRecorder{Path: b.TempDir() + "/e.jsonl"}}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				ans := Handle(context.Background(), Claude, payload, env)
				_, _ = io.Discard.Write(ans.Output.Stdout)
			}
		})
	}
}
