package runenv

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/tinehq/tine"
)

// For must leave each key once: the three places that built a run's
// environment disagreed, one appending duplicates of keys it replaced.
func TestFor_EachKeyOnce(t *testing.T) {
	w := &tine.Workspace{Name: "ws", Path: "/src/ws", UID: os.Getuid(), GID: os.Getgid()}
	r := &tine.Run{ID: "r_1", Name: "ws-1", Role: tine.RoleFork}
	env := []string{"PATH=/opt/bin", "TINE_RUN=stale", "TINE_ROLE=source", "KEEP=1", "TINE_HOME=/var/lib/tine", "TINE_DAEMON_SOCKET=/s"}
	got := For(w, r, env, os.Getuid())
	seen := map[string]int{}
	for _, kv := range got {
		k, _, _ := strings.Cut(kv, "=")
		seen[k]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s appears %d times in %v", k, n, got)
		}
	}
	for _, want := range []string{"TINE_RUN=ws-1", "TINE_RUN_ID=r_1", "TINE_ROLE=fork", "TINE_WORKSPACE=ws",
		"TINE_WORKSPACE_PATH=/src/ws", "PATH=" + RunDir + "/bin:/opt/bin", "TINE_SOCKET=" + RunDir + "/ctl/tine.sock",
		"TINE_CAPABILITY=" + RunDir + "/cap/token", "KEEP=1"} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %s in %v", want, got)
		}
	}
	for _, k := range HostOnly { // the host's state directory and daemon, covered in a run
		if seen[k] > 0 {
			t.Errorf("%s went into the run: %v", k, got)
		}
	}
}

func TestInside_DefaultPath(t *testing.T) {
	if got := Inside("")[0]; got != "PATH="+RunDir+"/bin:/usr/local/bin:/usr/bin:/bin" {
		t.Errorf("Inside(\"\") PATH = %s", got)
	}
}
