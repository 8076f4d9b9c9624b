package access

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestTokens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "user-tokens")
	ts := NewTokens(dir)
	a, err := ts.Issue(1001)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := ts.Issue(1001); again != a {
		t.Errorf("a second Issue made another token: %q, %q", a, again)
	}
	b, _ := ts.Issue(1002)
	if uid, ok := ts.Check(a); !ok || uid != 1001 {
		t.Errorf("Check(1001's) = %d %v", uid, ok)
	}
	forged := "u1002." + strings.SplitN(a, ".", 2)[1] // 1001's secret under 1002's uid
	for _, bad := range []string{"", "u1001", "u1001.", "u01001." + strings.SplitN(a, ".", 2)[1], forged, a + "0", "x" + a} {
		if uid, ok := ts.Check(bad); ok {
			t.Errorf("Check(%q) = %d, true", bad, uid)
		}
	}
	if fi, err := os.Stat(filepath.Join(dir, "1001")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the token's file: %v %v, want mode 0600", fi, err)
	}
	if err := ts.Revoke(1001); err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.Check(a); ok {
		t.Error("a revoked token still checks")
	}
	if _, ok := ts.Check(b); !ok {
		t.Error("revoking 1001's token revoked 1002's")
	}
	if c, _ := ts.Issue(1001); c == a {
		t.Error("Issue after Revoke gave the revoked token")
	}
}
