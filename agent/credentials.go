package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// Credentials returns the names of the environment variables agent cfg
// authenticates with, as the agent's own configuration says, read through
// env (the environment it will run in):
//
//   - codex: the env_key of the model provider its config.toml (under
//     CODEX_HOME, or ~/.codex) chooses with model_provider, or through a
//     profile (profile, or -p/--profile and -c model_provider=X in cfg's
//     arguments); OpenRouter, Azure and self-hosted setups name their own
//     (OPENROUTER_API_KEY);
//   - claude: with CLAUDE_CODE_USE_BEDROCK, _VERTEX or _FOUNDRY set (in env
//     or the env of its settings.json), that cloud's variables (AWS_*,
//     GOOGLE_APPLICATION_CREDENTIALS, ANTHROPIC_FOUNDRY_API_KEY...).
//
// tine passes these to the agent as it passes ANTHROPIC_API_KEY, although
// their names have the shape of secrets.
func Credentials(cfg Config, env []string) []string {
	switch cfg.Kind {
	case Codex:
		if key := codexEnvKey(cfg.Args, CodexHome(env)); key != "" {
			return []string{key}
		}
	case Claude:
		return claudeCloudVars(env)
	}
	return nil
}

// codexConfig is what Credentials reads of codex's config.toml.
type codexConfig struct {
	ModelProvider string `toml:"model_provider"`
	Profile       string `toml:"profile"`
	Profiles      map[string]struct {
		ModelProvider string `toml:"model_provider"`
	} `toml:"profiles"`
	ModelProviders map[string]struct {
		EnvKey string `toml:"env_key"`
	} `toml:"model_providers"`
}

// codexEnvKey is the env_key of the provider codex chooses, with args
// (its extra arguments) and home's config.toml; "" for one without (the
// built-in openai provider, whose OPENAI_API_KEY tine passes anyway).
func codexEnvKey(args []string, home string) string {
	var c codexConfig
	if _, err := toml.DecodeFile(filepath.Join(home, "config.toml"), &c); err != nil {
		return ""
	}
	profile, provider := c.Profile, ""
	for i := 0; i+1 < len(args); i++ {
		switch a, v := args[i], args[i+1]; a {
		case "-p", "--profile":
			profile = v
		case "-c", "--config":
			if k, val, ok := strings.Cut(v, "="); ok && strings.TrimSpace(k) == "model_provider" {
				provider = strings.Trim(strings.TrimSpace(val), `"'`)
			}
		}
	}
	if provider == "" {
		provider = c.ModelProvider
		if p, ok := c.Profiles[profile]; ok && p.ModelProvider != "" {
			provider = p.ModelProvider
		}
	}
	return c.ModelProviders[provider].EnvKey
}

// claudeClouds are the variables Claude Code reads for each cloud
// provider, by the variable that turns it on.
var claudeClouds = map[string][]string{
	"CLAUDE_CODE_USE_BEDROCK": {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
		"AWS_PROFILE", "AWS_REGION"},
	"CLAUDE_CODE_USE_VERTEX":  {"GOOGLE_APPLICATION_CREDENTIALS", "ANTHROPIC_VERTEX_PROJECT_ID", "CLOUD_ML_REGION"},
	"CLAUDE_CODE_USE_FOUNDRY": {"ANTHROPIC_FOUNDRY_API_KEY", "ANTHROPIC_FOUNDRY_RESOURCE", "ANTHROPIC_FOUNDRY_BASE_URL"},
}

// claudeCloudVars are the variables of the cloud providers Claude Code is
// turned to in env or in its settings.json's env.
func claudeCloudVars(env []string) []string {
	settings := claudeSettingsEnv(ClaudeConfigDir(env))
	var out []string
	for _, on := range []string{"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"} {
		if truthy(lastEnv(env, on)) || truthy(settings[on]) {
			out = append(out, claudeClouds[on]...)
		}
	}
	return slices.Compact(out)
}

// claudeSettingsEnv is the env of Claude Code's settings.json in dir,
// its values as text ("1", true and 1 alike).
func claudeSettingsEnv(dir string) map[string]string {
	var s struct {
		Env map[string]any `json:"env"`
	}
	out := map[string]string{}
	if b, err := os.ReadFile(filepath.Join(dir, "settings.json")); err == nil && json.Unmarshal(b, &s) == nil {
		for k, v := range s.Env {
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}

func truthy(v string) bool {
	v = strings.ToLower(strings.TrimSpace(v))
	return v != "" && v != "0" && v != "false" && v != "no"
}

// claudeCloudFiles are the credential files Claude Code reads for each
// cloud provider, by the variable that turns it on ("~/" the home).
var claudeCloudFiles = map[string][]string{
	"CLAUDE_CODE_USE_BEDROCK": {"~/.aws"},
	"CLAUDE_CODE_USE_VERTEX":  {"~/.config/gcloud"},
}

// CredentialFiles returns the files agent cfg authenticates with, as
// [Credentials] finds its variables: Claude Code on Bedrock reads ~/.aws,
// on Vertex ~/.config/gcloud and the file GOOGLE_APPLICATION_CREDENTIALS
// names. Paths under the home start with "~/".
func CredentialFiles(cfg Config, env []string) []string {
	if cfg.Kind != Claude {
		return nil
	}
	settings := claudeSettingsEnv(ClaudeConfigDir(env))
	var out []string
	for _, on := range []string{"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX"} {
		if truthy(lastEnv(env, on)) || truthy(settings[on]) {
			out = append(out, claudeCloudFiles[on]...)
			if f := lastEnv(env, "GOOGLE_APPLICATION_CREDENTIALS"); on == "CLAUDE_CODE_USE_VERTEX" && filepath.IsAbs(f) {
				out = append(out, f)
			}
		}
	}
	return out
}
