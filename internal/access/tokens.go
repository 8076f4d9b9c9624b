package access

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/tinehq/tine/internal/atomicfile"
)

// Tokens are the dashboard tokens the daemon hands to normal users, one per
// user: "u" + uid + "." + 64 random hex digits, kept in a file of its own
// (dir/UID, mode 0600, root's) until revoked. A token stands for its user
// only (Check): it opens their dashboard, never the API.
type Tokens struct{ dir string }

// NewTokens returns the tokens kept in dir.
func NewTokens(dir string) *Tokens { return &Tokens{dir: dir} }

// Issue returns uid's token, making one if they have none.
func (t *Tokens) Issue(uid int) (string, error) {
	if tok, err := t.read(uid); err == nil {
		return tok, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := os.MkdirAll(t.dir, 0o700); err != nil {
		return "", err
	}
	raw := make([]byte, 32)
	rand.Read(raw)
	tok := "u" + strconv.Itoa(uid) + "." + hex.EncodeToString(raw)
	if err := atomicfile.Write(t.path(uid), []byte(tok+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("saving the dashboard token of uid %d: %w", uid, err)
	}
	return tok, nil
}

// Revoke forgets uid's token: it opens nothing from now on, and the next
// Issue makes another.
func (t *Tokens) Revoke(uid int) error {
	err := os.Remove(t.path(uid))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Check returns the user tok stands for, when it is their current token.
func (t *Tokens) Check(tok string) (uid int, ok bool) {
	rest, found := strings.CutPrefix(tok, "u")
	id, _, found2 := strings.Cut(rest, ".")
	uid, err := strconv.Atoi(id)
	if !found || !found2 || err != nil || uid < 0 || strconv.Itoa(uid) != id {
		return 0, false
	}
	want, err := t.read(uid)
	if err != nil || subtle.ConstantTimeCompare([]byte(tok), []byte(want)) != 1 {
		return 0, false
	}
	return uid, true
}

func (t *Tokens) path(uid int) string { return filepath.Join(t.dir, strconv.Itoa(uid)) }

func (t *Tokens) read(uid int) (string, error) {
	b, err := os.ReadFile(t.path(uid))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if len(tok) < 64 {
		return "", fmt.Errorf("the dashboard token of uid %d is damaged: %w", uid, fs.ErrNotExist)
	}
	return tok, nil
}
