package agent

import (
	"testing"
	"time"
)

// ParseLogin reads the sign-ins that rotate and nothing else.
func TestParseLogin(t *testing.T) {
	claude := `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-a","refreshToken":"sk-ant-ort01-r","expiresAt":1764547200000,"scopes":["user:inference"]}}`
	codex := `{"OPENAI_API_KEY":null,"tokens":{"id_token":"x","access_token":"a","refresh_token":"r","account_id":"acct"},"last_refresh":"2026-12-01T10:00:00Z"}`
	if l, ok := ParseLogin(".claude/.credentials.json", []byte(claude)); !ok || l.Fresh.UnixMilli() != 1764547200000 || l.Account != "" {
		t.Errorf("claude's: %+v, %v", l, ok)
	}
	if l, ok := ParseLogin(".codex/auth.json", []byte(codex)); !ok || l.Account != "acct" || l.Fresh.Format(time.RFC3339) != "2026-12-01T10:00:00Z" {
		t.Errorf("codex's: %+v, %v", l, ok)
	}
	for rel, b := range map[string]string{
		".claude/.credentials.json": `{"claudeAiOauth":{"accessToken":"","refreshToken":"","expiresAt":0}}`, // signed out
		".codex/auth.json":          `{"OPENAI_API_KEY":"sk-x"}`,                                            // a key does not rotate
		".bashrc":                   claude,
	} {
		if l, ok := ParseLogin(rel, []byte(b)); ok {
			t.Errorf("ParseLogin(%s, %s) = %+v, want not a sign-in", rel, b, l)
		}
	}
	if _, ok := ParseLogin(".claude/.credentials.json", []byte("root:x:0:0")); ok {
		t.Error("a file that is not JSON read as a sign-in")
	}
}
