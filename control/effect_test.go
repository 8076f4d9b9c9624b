package control_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/control"
	"github.com/tinehq/tine/effect"
	"github.com/tinehq/tine/engine/enginetest"
)

// A push asked for is answered with what it would send said once (the
// answer said it twice: "asked: PUSH is pending as A; waiting for a
// person: PUSH; tine approve A"), and the command that approves it.
func TestRequestEffect_SaysThePushOnce(t *testing.T) {
	remote := filepath.Join(t.TempDir(), "remote.git")
	w := enginetest.New(t, enginetest.Options{Files: map[string]string{"a.txt": "one\n"}})
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = w.Path
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "one")
	git("init", "-q", "--bare", remote)
	git("remote", "add", "origin", remote)
	ans, err := control.Of(w.Engine).RequestEffect(context.Background(), w.Source, effect.Request{Kind: "git-push", Remote: "origin", Refspec: "main"})
	if err != nil {
		t.Fatal(err)
	}
	s := ans.Summary()
	if strings.Count(s, remote) != 1 || !strings.HasSuffix(s, "tine approve "+ans.Approval.ID) {
		t.Errorf("the answer: %q, want the push said once and tine approve %s", s, ans.Approval.ID)
	}
}
