package forkrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/agent"
	"github.com/tinehq/tine/engine"
)

// TestAgentEnvironOwnersStores: a daemon of another user (root, with its
// own CODEX_HOME and CLAUDE_CONFIG_DIR) looks for the conversation to
// continue in the workspace owner's stores, below the owner's home, where
// the owner's agent keeps them, not in its own.
func TestAgentEnvironOwnersStores(t *testing.T) {
	t.Setenv("CODEX_HOME", "/daemon/.codex")
	t.Setenv("CLAUDE_CONFIG_DIR", "/daemon/.claude")
	uid := os.Getuid() + 4242421 // someone else, without a passwd entry: home /
	src := engine.Ref{Workspace: &tine.Workspace{ID: "w1", Name: "app", Path: "/work/app", UID: uid, GID: uid},
		Run: &tine.Run{ID: "r1", Name: "source"}}
	env := agentEnviron(src, nil, nil)
	if got, want := agent.CodexHome(env), filepath.Join("/", ".codex"); got != want {
		t.Errorf("CodexHome = %s, want the owner's %s", got, want)
	}
	if got, want := agent.ClaudeConfigDir(env), filepath.Join("/", ".claude"); got != want {
		t.Errorf("ClaudeConfigDir = %s, want the owner's %s", got, want)
	}
	given := agentEnviron(src, nil, []string{"CODEX_HOME=/given"}) // [agent.codex] env still wins
	if got := agent.CodexHome(given); got != "/given" {
		t.Errorf("CodexHome with [agent] env = %s, want /given", got)
	}
}

// With the owner's environment given (a fork-run the daemon runs for
// them), the agents' stores are where it says, as in the owner's tine.
func TestAgentEnvironFromTheOwners(t *testing.T) {
	t.Setenv("CODEX_HOME", "/daemon/.codex")
	uid := os.Getuid() + 4242421
	src := engine.Ref{Workspace: &tine.Workspace{ID: "w1", Name: "app", Path: "/work/app", UID: uid, GID: uid},
		Run: &tine.Run{ID: "r1", Name: "source"}}
	if got := agent.CodexHome(agentEnviron(src, []string{"CODEX_HOME=/home/ann/cx", "HOME=/home/ann"}, nil)); got != "/home/ann/cx" {
		t.Errorf("CodexHome = %s, want the owner's /home/ann/cx", got)
	}
}
