// Package runenv builds the environment of a process in a run: one
// function, For, used wherever tine starts one (the supervisor's services
// and commands, tine exec without a supervisor, the daemon's attach, the
// mediator's effects, fork-run's agents).
package runenv

import (
	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/account"
)

// RunDir is where a run sees tine's control plane: its daemon socket
// (ctl/tine.sock), its capability (cap/token) and a tine binary (bin/tine,
// first on PATH).
const RunDir = "/run/tine"

// Inside is the environment that points a process inside a run at its
// control plane, with path (the process's PATH, or a default) after tine's
// binary.
func Inside(path string) []string {
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{"PATH=" + RunDir + "/bin:" + path, "TINE_SOCKET=" + RunDir + "/ctl/tine.sock",
		"TINE_CAPABILITY=" + RunDir + "/cap/token"}
}

// Vars is the environment that tells a process which run it is in: its
// name, id, workspace (name, and path: where the run's files are inside
// it) and role, which agent hooks read.
func Vars(w *tine.Workspace, r *tine.Run) []string {
	return []string{"TINE_RUN=" + r.Name, "TINE_RUN_ID=" + r.ID,
		"TINE_WORKSPACE=" + w.Name, "TINE_WORKSPACE_PATH=" + w.Path,
		"TINE_ROLE=" + string(r.Role)}
}

// HostOnly are the variables that point tine at the host's state directory
// and daemon, which a run does not see (its mounts cover them): they do not
// go into a run, where tine works through its capability (TINE_SOCKET).
var HostOnly = []string{"TINE_HOME", "TINE_DAEMON_SOCKET", "TINE_NO_DAEMON"}

// For is the environment of a process in run r of workspace w made from
// env, the environment of user from: the owner's identity
// (account.Account.Env), the run's variables, and tine's control plane
// first on PATH. Each key appears once: later sources replace earlier ones.
func For(w *tine.Workspace, r *tine.Run, env []string, from int) []string {
	env = account.Lookup(w.UID, w.GID).Env(account.Unsetenv(env, HostOnly...), from)
	env = account.Setenv(env, Vars(w, r)...)
	return account.Setenv(env, Inside(account.Getenv(env, "PATH"))...)
}
