package forkrun_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/agentmock"
)

// BenchmarkForkRunAgents measures fork-run's overhead with the real
// agent CLIs, each pointed at its mock API on loopback (the mock answers
// at once: a tool call that writes out.txt, then a text answer), beside
// the command agent that writes it (benchAgentCmd), for N = 1, 4 and 16,
// in one process:
//
//	sudo go test ./forkrun -run '^$' -bench ForkRunAgents -benchtime 3x
//
// (bench/forkrun-agents.sh runs it and prints the table). Metrics as in
// BenchmarkForkRun: ms/forkrun, agent-ms (the slowest fork's agent wall
// time: the agents run in parallel) and overhead-ms, their difference.
// The claude and codex agents start without a conversation (a HOME and a
// CODEX_HOME of their own, empty); manual mode resolves nothing. Agents missing
// from PATH are skipped.
func BenchmarkForkRunAgents(b *testing.B) {
	for _, kind := range []agent.Kind{agent.CommandKind, agent.Claude, agent.Codex} {
		for _, n := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) { benchForkRunAgent(b, kind, n) })
		}
	}
}

func benchForkRunAgent(b *testing.B, kind agent.Kind, n int) {
	if kind != agent.CommandKind {
		if _, err := exec.LookPath(string(kind)); err != nil {
			b.Skipf("%s is not on PATH", kind)
		}
	}
	bw := benchNewWorkspace(b)
	o := bw.options(n)
	o.AgentTimeout = 5 * time.Minute
	switch kind {
	case agent.Claude:
		o.Agent, o.AgentEnv = agent.Config{Kind: agent.Claude}, benchClaudeEnv(b)
	case agent.Codex:
		o.Agent, o.AgentEnv = agent.Config{Kind: agent.Codex}, benchCodexEnv(b)
	}
	var total, agents time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		rep, err := forkrun.Run(bw.ctx, forkrun.NewHost(bw.e), o)
		d := time.Since(t0)
		b.StopTimer()
		if err != nil && rep != nil {
			benchCheckReport(b, rep, n) // says which fork failed, and why
		}
		if err != nil {
			b.Fatalf("forkrun.Run: %v", err)
		}
		agents += benchCheckReport(b, rep, n)
		total += d
		bw.discard(rep.Group)
		b.StartTimer()
	}
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / float64(b.N) }
	b.ReportMetric(per(total), "ms/forkrun")
	b.ReportMetric(per(agents), "agent-ms")
	b.ReportMetric(per(total-agents), "overhead-ms")
}

// benchClaudeEnv starts a mock Messages API whose model writes out.txt
// with the Write tool, then answers, and returns the agents' variables: the mock's, and a HOME
// of their own.
func benchClaudeEnv(b *testing.B) []string {
	m := agentmock.NewAnthropic(agentmock.Turn{Tool: &agentmock.ToolUse{Name: "Write",
		Input: map[string]any{"file_path": "{cwd}/out.txt", "content": "x\n"}}}, agentmock.Turn{Text: "done"})
	b.Cleanup(m.Close)
	home := filepath.Join(b.TempDir(), "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		b.Fatal(err)
	}
	return m.Env(home)
}

// benchCodexEnv starts a mock Responses API whose model writes out.txt
// with exec_command, then answers, and returns the agents' variables: a CODEX_HOME whose provider is the
// mock, and its key.
func benchCodexEnv(b *testing.B) []string {
	m, err := agentmock.NewOpenAI(func(r *agentmock.OpenAIRequest) agentmock.OpenAITurn {
		if r.LastIsToolOutput() {
			return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{agentmock.Message("done")}}
		}
		return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{
			agentmock.FunctionCall("exec_command", map[string]any{"cmd": "echo x > out.txt"})}}
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	home := filepath.Join(b.TempDir(), "codex-home")
	config := "model_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"" + m.URL +
		"\"\nwire_api = \"responses\"\nenv_key = \"TINE_MOCK_OPENAI_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
	if err := os.MkdirAll(home, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
		b.Fatal(err)
	}
	return []string{"CODEX_HOME=" + home, "TINE_MOCK_OPENAI_KEY=mock"}
}
