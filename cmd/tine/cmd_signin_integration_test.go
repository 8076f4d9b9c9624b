//go:build linux

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tinehq/tine/internal/testkit"
)

// claudeOAuth is a local stand-in for Claude's OAuth token endpoint
// (https://platform.claude.com/v1/oauth/token, which claude does not let
// be changed): /etc/hosts sends the name to 127.0.0.1 for the test, a TLS
// server there answers a refresh with new tokens, and ca is the file of
// its certificate, for NODE_EXTRA_CA_CERTS. refreshes are the refresh
// tokens it was sent.
type claudeOAuth struct {
	ca        string
	mu        sync.Mutex
	refreshed []string
}

func newClaudeOAuth(t *testing.T, caDir string) *claudeOAuth {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "platform.claude.com"},
		DNSNames: []string{"platform.claude.com"}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	o := &claudeOAuth{ca: filepath.Join(caDir, ".tine-test-oauth-ca.pem")}
	if err := os.WriteFile(o.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(o.ca) })
	ln, err := net.Listen("tcp", "127.0.0.1:443")
	if err != nil {
		t.Skipf("needs the loopback's port 443: %v", err)
	}
	srv := &http.Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				GrantType    string `json:"grant_type"`
				RefreshToken string `json:"refresh_token"`
			}
			b, _ := io.ReadAll(r.Body)
			if r.URL.Path != "/v1/oauth/token" || json.Unmarshal(b, &req) != nil || req.GrantType != "refresh_token" {
				http.NotFound(w, r)
				return
			}
			o.mu.Lock()
			o.refreshed = append(o.refreshed, req.RefreshToken)
			o.mu.Unlock()
			json.NewEncoder(w).Encode(map[string]any{"access_token": "sk-ant-oat01-NEW", "refresh_token": "sk-ant-ort01-NEW",
				"expires_in": 28800, "scope": "user:inference user:profile", "token_type": "Bearer"})
		})}
	go srv.ServeTLS(ln, "", "")
	t.Cleanup(func() { srv.Close() })
	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile("/etc/hosts", hosts, 0o644) })
	if err := os.WriteFile("/etc/hosts", append(append([]byte{}, hosts...), "\n127.0.0.1 platform.claude.com\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	return o
}

func (o *claudeOAuth) refreshes() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.refreshed...)
}

// The real claude, signed in by OAuth with an expired access token, run
// in a fork (tine exec, through its supervisor, on the fork's own network
// with the token endpoint's port among its host ports), refreshes its
// sign-in there: its refresh token rotates, and the new one was left in
// the fork's home layer, the owner's home holding the retired one. tine
// carries it home, as claude wrote it.
func TestClaude_RefreshInAForkReachesTheHome(t *testing.T) {
	testkit.RequireRoot(t, "binding the loopback's port 443 and writing /etc/hosts for the test")
	requireClaude(t)
	creds := "/root/.claude/.credentials.json"
	if _, err := os.Lstat(creds); err == nil {
		t.Skipf("%s exists: not overwriting root's own", creds)
	}
	os.MkdirAll(filepath.Dir(creds), 0o700)
	t.Cleanup(func() { os.Remove(creds) })
	old := `{"claudeAiOauth":{"accessToken":"sk-ant-oat01-OLD","refreshToken":"sk-ant-ort01-OLD","expiresAt":1000,"scopes":["user:inference","user:profile"],"subscriptionType":"max"}}`
	if err := os.WriteFile(creds, []byte(old), 0o600); err != nil {
		t.Fatal(err)
	}
	oauth := newClaudeOAuth(t, "/root") // the CA where the fork sees it: its home's layer lies over root's
	e, _ := liveWorkspace(t, false, map[string]string{"tine.toml": "[network]\nhost_ports = [443]\n"})
	e.ok("fork", "source", "--name", "f")
	mock := answerMock(t)
	for _, kv := range mock.Env("/root") {
		if !strings.HasPrefix(kv, "ANTHROPIC_API_KEY=") { // signed in by OAuth, not by a key
			e.vars = append(e.vars, kv)
		}
	}
	e.vars = append(e.vars, "NODE_EXTRA_CA_CERTS="+oauth.ca)
	r := e.tine("exec", "f", "--", "claude", "-p", "write the answer to answer.txt", "--permission-mode", "acceptEdits", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("claude in the fork: %v", r)
	}
	if got := oauth.refreshes(); len(got) != 1 || got[0] != "sk-ant-ort01-OLD" {
		t.Fatalf("refreshes the token endpoint got: %q, want one, with the old refresh token", got)
	}
	b, _ := os.ReadFile(creds)
	if !strings.Contains(string(b), "sk-ant-ort01-NEW") {
		t.Errorf("root's sign-in after claude refreshed it in a fork: %s, want the new refresh token", b)
	}
}

// The real codex, signed in with ChatGPT and its access token expired,
// run in a fork refreshes its sign-in there (proactively, against a local
// stand-in of its token endpoint: CODEX_REFRESH_TOKEN_URL_OVERRIDE, on a
// port of the host's loopback the fork reaches) and writes the rotated
// refresh token into the fork's home; tine carries it home, as codex
// wrote it.
func TestCodex_RefreshInAForkReachesTheHome(t *testing.T) {
	testkit.RequireRoot(t, "writing root's ~/.codex for the test")
	cx := newCodexEnv(t)
	home := "/root/.codex" // the sign-in tine carries is the home's own codex's
	for _, f := range []string{"auth.json", "config.toml"} {
		if _, err := os.Lstat(filepath.Join(home, f)); err == nil {
			t.Skipf("%s exists: not overwriting root's own", filepath.Join(home, f))
		}
		t.Cleanup(func() { os.Remove(filepath.Join(home, f)) })
	}
	os.MkdirAll(home, 0o755)
	cfg, err := os.ReadFile(filepath.Join(cx.home, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	expired := chatgptJWT(t, time.Now().Add(-time.Hour))
	auth := fmt.Sprintf(`{"OPENAI_API_KEY":null,"tokens":{"id_token":%q,"access_token":%q,"refresh_token":"rt-OLD","account_id":"acct-1"},"last_refresh":"2026-10-01T00:00:00Z"}`, expired, expired)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "auth.json"), []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var refreshed []string
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			GrantType    string `json:"grant_type"`
			RefreshToken string `json:"refresh_token"`
		}
		if json.NewDecoder(r.Body).Decode(&req) != nil || req.GrantType != "refresh_token" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		refreshed = append(refreshed, req.RefreshToken)
		mu.Unlock()
		fresh := chatgptJWT(t, time.Now().Add(time.Hour))
		json.NewEncoder(w).Encode(map[string]string{"id_token": fresh, "access_token": fresh, "refresh_token": "rt-NEW"})
	}))
	t.Cleanup(tokens.Close)
	port := tokens.Listener.Addr().(*net.TCPAddr).Port
	e, dir := liveWorkspace(t, false, map[string]string{"app.txt": "status BUG\n",
		"tine.toml": fmt.Sprintf("[network]\nhost_ports = [%d]\n", port)})
	e.ok("fork", "source", "--name", "f")
	e.vars = append(e.vars, "TINE_MOCK_OPENAI_KEY=mock", "CODEX_REFRESH_TOKEN_URL_OVERRIDE="+tokens.URL+"/oauth/token")
	r := e.tine("exec", "f", "--", "codex", "exec", "--skip-git-repo-check", "fix app.txt")
	mu.Lock()
	got := append([]string(nil), refreshed...)
	mu.Unlock()
	if len(got) == 0 || got[0] != "rt-OLD" {
		t.Fatalf("refreshes the token endpoint got: %q, want the old refresh token; codex: %v", got, r)
	}
	b, _ := os.ReadFile(filepath.Join(home, "auth.json"))
	if !strings.Contains(string(b), "rt-NEW") {
		t.Errorf("root's codex sign-in after codex refreshed it in a fork: %s, want the new refresh token", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status BUG\n" {
		t.Errorf("the source's file changed: %q", b)
	}
}

// chatgptJWT is an unsigned token of the shape codex reads from a ChatGPT
// sign-in (its expiry, its account), expiring at exp.
func chatgptJWT(t *testing.T, exp time.Time) string {
	t.Helper()
	part := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	claims := map[string]any{"email": "u@example.com", "exp": exp.Unix(),
		"https://api.openai.com/auth": map[string]string{"chatgpt_plan_type": "plus", "chatgpt_account_id": "acct-1"}}
	return part(map[string]string{"alg": "none", "typ": "JWT"}) + "." + part(claims) + ".sig"
}
