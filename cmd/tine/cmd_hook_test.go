package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// hookFixtures are the agent payloads copied beside package hook.
const hookFixtures = "../../hook/testdata/fixtures/"

// runStdin runs the tine command line args with stdin, as run does.
func runStdin(t testing.TB, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	root := newRoot(&out, &errb)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	if err != nil && err.Error() != "" {
		fmt.Fprintf(&errb, "tine: %v\n", err)
	}
	return out.String(), errb.String(), exitCode(err)
}

func readHookFixture(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(hookFixtures + rel)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// npmUpdate is the real PreToolUse payload with its command replaced.
func npmUpdate(t testing.TB) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(readHookFixture(t, "claude/input/pretooluse-bash.real-desktop-2.1.121.json")), &m); err != nil {
		t.Fatal(err)
	}
	m["tool_input"].(map[string]any)["command"] = "npm update"
	b, _ := json.Marshal(m)
	return string(b)
}

func setRun(t *testing.T, run, role, evidence string) {
	t.Setenv("TINE_RUN", run)
	t.Setenv("TINE_ROLE", role)
	t.Setenv("TINE_EVIDENCE", evidence)
}

func TestHookCommand(t *testing.T) {
	evidence := filepath.Join(t.TempDir(), "evidence.jsonl")
	stop := readHookFixture(t, "claude/input/stop.real-desktop-2.1.121.json")
	tests := []struct {
		name, run, role, stdin string
		args                   []string
		wantOut                string // substring; "" = empty stdout
		wantErr                string // substring of stderr; "" = empty
		wantCode               int
	}{
		{"outside/npm-update", "", "", npmUpdate(t), []string{"hook", "claude"}, "", "", 0},
		{"source/npm-update", "source", "source", npmUpdate(t), []string{"hook", "claude"}, `"permissionDecision":"deny"`, "", 0},
		{"fork/npm-update", "source-2", "fork", npmUpdate(t), []string{"hook", "claude"}, "", "", 0},
		{"source/stop", "source", "source", stop, []string{"hook", "claude"}, "", "", 0},
		{"source/bad-json", "source", "source", "{not json", []string{"hook", "codex"}, "", "warning", 0},
		{"outside/empty", "", "", "", []string{"hook", "claude"}, "", "warning", 0},
		{"json-decision", "source", "source", npmUpdate(t), []string{"hook", "claude", "--json-decision"}, `"verdict": "fork_first"`, "", 0},
		{"unknown-agent", "", "", stop, []string{"hook", "gemini"}, "", "unknown agent", 1},
		{"bad-flag", "", "", stop, []string{"hook", "claude", "--nope"}, "", "unknown flag", 1},
		{"no-agent", "", "", stop, []string{"hook"}, "", "takes 1 argument", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setRun(t, tt.run, tt.role, evidence)
			out, errOut, code := runStdin(t, tt.stdin, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errOut)
			}
			if tt.wantOut == "" && out != "" || !strings.Contains(out, tt.wantOut) {
				t.Errorf("stdout %q, want %q", out, tt.wantOut)
			}
			if tt.wantErr == "" && errOut != "" || !strings.Contains(errOut, tt.wantErr) {
				t.Errorf("stderr %q, want %q", errOut, tt.wantErr)
			}
		})
	}
	b, err := os.ReadFile(evidence)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for line := range strings.Lines(string(b)) {
		var rec struct{ Kind string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, rec.Kind)
	}
	want := []string{"tool_denied", "turn_stopped", "hook_error", "tool_denied"}
	if !slices.Equal(kinds, want) {
		t.Errorf("evidence kinds %v, want %v", kinds, want)
	}
}

// BenchmarkHookEndToEnd builds tine and times `tine hook claude` on the
// real PreToolUse payload as an agent runs it: a new process each time,
// inside a source, the answer a deny. It reports the median of 20 runs
// per iteration.
func BenchmarkHookEndToEnd(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "tine")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	payload := npmUpdate(b)
	env := append(os.Environ(), "TINE_RUN=source", "TINE_ROLE=source", "TINE_EVIDENCE="+filepath.Join(b.TempDir(), "e.jsonl"))
	var all []time.Duration
	for b.Loop() {
		for range 20 {
			all = append(all, timeHook(b, bin, payload, env))
		}
	}
	slices.Sort(all)
	b.ReportMetric(float64(all[len(all)/2].Microseconds())/1000, "median-ms")
	b.ReportMetric(float64(all[len(all)*9/10].Microseconds())/1000, "p90-ms")
}

func timeHook(b *testing.B, bin, payload string, env []string) time.Duration {
	cmd := exec.Command(bin, "hook", "claude")
	cmd.Stdin, cmd.Env = strings.NewReader(payload), env
	start := time.Now()
	out, err := cmd.Output()
	d := time.Since(start)
	if err != nil || !bytes.Contains(out, []byte(`"deny"`)) {
		b.Fatalf("tine hook: %v: %s", err, out)
	}
	return d
}
