package agent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCredentials(t *testing.T) {
	home := t.TempDir()
	config := `model_provider = "router"
profile = "work"
[profiles.work]
model_provider = "azure"
[profiles.home]
model = "x"
[model_providers.router]
env_key = "OPENROUTER_API_KEY"
[model_providers.azure]
env_key = "AZURE_OPENAI_API_KEY"
[model_providers.local]
base_url = "http://localhost:1"
`
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	claudeDir := t.TempDir()
	os.WriteFile(filepath.Join(claudeDir, "settings.json"), []byte(`{"env": {"CLAUDE_CODE_USE_VERTEX": 1}}`), 0o644)
	codexEnv := []string{"CODEX_HOME=" + home}
	for _, c := range []struct {
		name string
		cfg  Config
		env  []string
		want []string
	}{
		{"codex profile", Config{Kind: Codex}, codexEnv, []string{"AZURE_OPENAI_API_KEY"}},
		{"codex --profile", Config{Kind: Codex, Args: []string{"--profile", "home"}}, codexEnv, []string{"OPENROUTER_API_KEY"}},
		{"codex -c", Config{Kind: Codex, Args: []string{"-c", `model_provider="router"`}}, codexEnv, []string{"OPENROUTER_API_KEY"}},
		{"codex provider without a key", Config{Kind: Codex, Args: []string{"-c", "model_provider=local"}}, codexEnv, nil},
		{"codex without a config", Config{Kind: Codex}, []string{"CODEX_HOME=" + t.TempDir()}, nil},
		{"claude", Config{Kind: Claude}, []string{"CLAUDE_CONFIG_DIR=" + t.TempDir()}, nil},
		{"claude on bedrock", Config{Kind: Claude}, []string{"CLAUDE_CONFIG_DIR=" + t.TempDir(), "CLAUDE_CODE_USE_BEDROCK=1"}, claudeClouds["CLAUDE_CODE_USE_BEDROCK"]},
		{"claude off bedrock", Config{Kind: Claude}, []string{"CLAUDE_CONFIG_DIR=" + t.TempDir(), "CLAUDE_CODE_USE_BEDROCK=0"}, nil},
		{"claude on vertex by its settings", Config{Kind: Claude}, []string{"CLAUDE_CONFIG_DIR=" + claudeDir}, claudeClouds["CLAUDE_CODE_USE_VERTEX"]},
		{"command", Config{Kind: CommandKind, Args: []string{"x"}}, codexEnv, nil},
	} {
		if got := Credentials(c.cfg, c.env); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
