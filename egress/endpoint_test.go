package egress

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestEndpoints(t *testing.T) {
	env := []string{
		"ANTHROPIC_BASE_URL=http://127.0.0.1:8080",
		"OPENAI_BASE_URL=https://LLM-Gateway.corp.example/v1",
		"OPENAI_API_BASE=http://localhost/v1",        // port 80
		"MY_API_URL=https://10.1.2.3:8443/x",         // an address
		"OTHER_BASE_URL=http://127.0.0.1:8080/again", // same endpoint: once
		"HTTPS_PROXY=http://127.0.0.1:3128",          // a proxy reaches anything: not an endpoint
		"BROKEN_BASE_URL=ftp://127.0.0.1:21", "EMPTY_BASE_URL=", "BAD_BASE_URL=http://127.0.0.1:0",
		"V6_BASE_URL=http://[::1]:9000",
		"PATH=/usr/bin",
	}
	if got, want := LoopbackPorts(env), []int{80, 8080, 9000}; !slices.Equal(got, want) {
		t.Errorf("LoopbackPorts = %v, want %v", got, want)
	}
	rules := EndpointRules(env)
	var got []string
	for _, r := range rules {
		got = append(got, r.String())
	}
	if want := []string{"llm-gateway.corp.example:443", "10.1.2.3/32:8443"}; !slices.Equal(got, want) {
		t.Errorf("EndpointRules = %v, want %v", got, want)
	}
	if ports, ok := (Policy{Rules: rules}).Ports("llm-gateway.corp.example"); !ok || !slices.Equal(ports, []uint16{443}) {
		t.Errorf("the gateway's name is not allowed on 443: %v %v", ports, ok)
	}
}

// Codex names its API in its configuration, not its environment.
func TestAgentPorts_CodexConfig(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := "model_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:4100/v1\"\n" +
		"[model_providers.far]\nbase_url = \"https://api.example.com/v1\"\n"
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := AgentPorts([]string{"HOME=" + home, "ANTHROPIC_BASE_URL=http://127.0.0.1:4200"}); !slices.Equal(got, []int{4100, 4200}) {
		t.Errorf("AgentPorts = %v, want [4100 4200]", got)
	}
	other := t.TempDir() // CODEX_HOME wins over HOME
	if got := AgentPorts([]string{"CODEX_HOME=" + other, "HOME=" + home}); len(got) != 0 {
		t.Errorf("with CODEX_HOME elsewhere, AgentPorts = %v", got)
	}
	// The last HOME is the process's, as the last of any variable is.
	if got := AgentPorts([]string{"HOME=" + other, "HOME=" + home}); !slices.Equal(got, []int{4100}) {
		t.Errorf("with HOME set twice, the last at the codex home, AgentPorts = %v, want [4100]", got)
	}
}

// Claude Code on Bedrock or Vertex reaches that cloud in its region.
func TestAgentRules_Clouds(t *testing.T) {
	str := func(rs []Rule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.String())
		}
		return out
	}
	if got := str(AgentRules([]string{"CLAUDE_CODE_USE_BEDROCK=1", "AWS_REGION=eu-west-3"})); !slices.Contains(got, "bedrock-runtime.eu-west-3.amazonaws.com:443") {
		t.Errorf("Bedrock: %v", got)
	}
	if got := str(AgentRules([]string{"CLAUDE_CODE_USE_VERTEX=true", "CLOUD_ML_REGION=europe-west1"})); !slices.Contains(got, "europe-west1-aiplatform.googleapis.com:443") ||
		!slices.Contains(got, "oauth2.googleapis.com:443") {
		t.Errorf("Vertex: %v", got)
	}
	if got := AgentRules([]string{"CLAUDE_CODE_USE_BEDROCK=0", "AWS_REGION=eu-west-3"}); len(got) != 0 {
		t.Errorf("Bedrock off: %v", got)
	}
	if got := str(AgentRules([]string{"CLAUDE_CODE_USE_BEDROCK=1", "AWS_REGION=bad region;x"})); !slices.Contains(got, "bedrock-runtime.us-east-1.amazonaws.com:443") {
		t.Errorf("a region that is no name falls back to the default: %v", got)
	}
}
