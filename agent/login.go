package agent

import (
	"encoding/json"
	"time"
)

// LoginFiles are the agents' sign-in files, relative to the home: Claude
// Code's OAuth credentials and codex's ChatGPT tokens. Their refresh
// tokens rotate at each use, so a copy refreshed in a fork's own home
// leaves the owner's real one holding a token the server has retired, and
// the person signed out at their next refresh; package runtime carries the
// newer of the two across (SyncLogins).
var LoginFiles = []string{".claude/.credentials.json", ".codex/auth.json"}

// Login is what a sign-in file says of itself: when it was refreshed (as
// its own fields say), and the account it is for ("" where the file does
// not say).
type Login struct {
	Fresh   time.Time
	Account string
}

// ParseLogin reads the sign-in file rel of LoginFiles; ok is false for
// anything but a whole sign-in with a refresh token (an API key alone does
// not rotate, and a file of another shape is not carried).
func ParseLogin(rel string, b []byte) (l Login, ok bool) {
	switch rel {
	case ".claude/.credentials.json":
		var f struct {
			OAuth *struct {
				AccessToken  string `json:"accessToken"`
				RefreshToken string `json:"refreshToken"`
				ExpiresAt    int64  `json:"expiresAt"` // ms since the epoch
			} `json:"claudeAiOauth"`
		}
		if json.Unmarshal(b, &f) != nil || f.OAuth == nil || f.OAuth.AccessToken == "" || f.OAuth.RefreshToken == "" || f.OAuth.ExpiresAt <= 0 {
			return Login{}, false
		}
		// A refresh moves the access token's expiry on by its lifetime.
		return Login{Fresh: time.UnixMilli(f.OAuth.ExpiresAt)}, true
	case ".codex/auth.json":
		var f struct {
			Tokens *struct {
				AccessToken  string `json:"access_token"`
				RefreshToken string `json:"refresh_token"`
				AccountID    string `json:"account_id"`
			} `json:"tokens"`
			LastRefresh time.Time `json:"last_refresh"`
		}
		if json.Unmarshal(b, &f) != nil || f.Tokens == nil || f.Tokens.AccessToken == "" || f.Tokens.RefreshToken == "" || f.LastRefresh.IsZero() {
			return Login{}, false
		}
		return Login{Fresh: f.LastRefresh, Account: f.Tokens.AccountID}, true
	}
	return Login{}, false
}
