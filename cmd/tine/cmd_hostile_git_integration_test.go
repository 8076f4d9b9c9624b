//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/internal/testkit"
)

// armFork is a script a fork runs in its own repository to make git run a
// command of its on the host: a clean filter named for every path, a diff
// driver with a textconv, fsmonitor, a hooks directory, a diff.external,
// each writing its name and the uid it ran as into marks (a host path the
// fork can write to, as any directory tine did not confine it from); then
// it changes a file, so there is a plan to make.
func armFork(marks string) string {
	var b strings.Builder
	for _, k := range []string{"filter.evil.clean", "filter.evil.smudge", "filter.evil.process", "diff.evil.textconv",
		"diff.evil.command", "diff.external", "merge.evil.driver", "core.fsmonitor", "core.alternateRefsCommand"} {
		fmt.Fprintf(&b, "git config %s 'id -u > %s/%s; false'\n", k, marks, k)
	}
	fmt.Fprintf(&b, "git config core.hooksPath %s/hooks\n", marks)
	b.WriteString("printf '* filter=evil diff=evil merge=evil\\n' > .gitattributes\n")
	b.WriteString("mkdir -p .git/info && cp .gitattributes .git/info/attributes\n")
	b.WriteString("echo changed >> a.txt; echo new > new.txt\n")
	return b.String()
}

// marksDir is a host directory anyone may write, for markers and hooks.
func marksDir(t *testing.T) string {
	t.Helper()
	marks := publicDir(t)
	if err := os.Chmod(marks, 0o777); err != nil {
		t.Fatal(err)
	}
	hooks := filepath.Join(marks, "hooks")
	os.Mkdir(hooks, 0o777)
	for _, h := range []string{"pre-commit", "post-commit", "reference-transaction", "post-index-change", "post-merge"} {
		os.WriteFile(filepath.Join(hooks, h), []byte("#!/bin/sh\nid -u > "+marks+"/hook-"+h+"\n"), 0o755)
	}
	return marks
}

// ranOnHost lists the markers git left in marks, with the uid each ran as.
func ranOnHost(t *testing.T, marks string) []string {
	t.Helper()
	ents, _ := os.ReadDir(marks)
	var ran []string
	for _, e := range ents {
		if e.Name() != "hooks" {
			uid, _ := os.ReadFile(filepath.Join(marks, e.Name()))
			ran = append(ran, e.Name()+" as uid "+strings.TrimSpace(string(uid)))
		}
	}
	return ran
}

// gitRepo makes a committed git repository in dir, owned by uid.
func gitRepo(t *testing.T, dir string, uid, gid int) {
	t.Helper()
	hostSh(t, dir, "git init -q -b main && echo a > a.txt && git -c safe.directory='*' add -A && "+
		"git -c safe.directory='*' -c user.name=t -c user.email=t@t commit -qm base")
	hostCmd(t, dir, "chown", "-R", fmt.Sprintf("%d:%d", uid, gid), ".")
}

// TestHostileGit_ForkConfigNeverRunsOnTheHost: a fork that configures git
// to run its commands (a clean filter for every path, diff and merge
// drivers, fsmonitor, hooks) gets none of them run on the host by what a
// person or fork-run does with its work: merge --dry-run (the git scope,
// the default in a git workspace), compare, fork-run's readiness check and
// a merge that carries its commits. Before, the filter ran as root on the
// first of them.
func TestHostileGit_ForkConfigNeverRunsOnTheHost(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	dir := e.workspaceDir("app")
	gitRepo(t, dir, 0, 0)
	e.ok("init", dir)
	e.ws = append(e.ws, dir)
	marks := marksDir(t)

	var fr engine.ForkResult
	e.okJSON(&fr, "fork", "app/source", "--json")
	fork := fr.Forks[0].Name
	e.execSh(fork, armFork(marks))
	e.ok("merge", "--dry-run", fork)
	e.tine("compare", fork)
	e.tine("summary", fork)
	e.tine("diff", "--patch", fork)
	if ran := ranOnHost(t, marks); len(ran) > 0 {
		t.Fatalf("the fork's git configuration ran on the host: %v", ran)
	}

	// fork-run: the agent arms its fork and commits; the readiness check
	// plans a merge with nobody asking, and --merge-mode auto carries the
	// winner's commits into the source.
	agent := armFork(marks) + "git add a.txt new.txt && git -c user.name=agent -c user.email=a@a commit -qm 'agent: work' --no-verify\n"
	script := filepath.Join(publicDir(t), "agent.sh")
	os.WriteFile(script, []byte("#!/bin/sh\n"+agent), 0o755)
	r := e.tine("fork-run", "app/source", "-n", "1", "--prompt", "p", "--agent-cmd", script, "--merge-mode", "auto")
	if ran := ranOnHost(t, marks); len(ran) > 0 {
		t.Fatalf("fork-run ran the fork's git configuration on the host: %v\n%v", ran, r)
	}
}

// TestHostileGit_UserCannotRunAsRoot: a normal user's fork configures git
// to run a command, and the user asks the system daemon (root) for a merge
// plan: the command never runs, as root or at all, on the host. Before, any
// local user ran a command as root this way.
func TestHostileGit_UserCannotRunAsRoot(t *testing.T) {
	_, ann, _, dir := userWorkspace(t)
	gitRepo(t, dir, ann.uid, ann.gid)
	marks := marksDir(t)
	ann.ok(dir, "init", ".")
	var fr engine.ForkResult
	ann.okJSON(dir, &fr, "fork", "source", "--json")
	fork := fr.Forks[0].Name
	// The user arms their own source too: the merge writes its index.
	ann.ok(dir, "exec", fork, "--", "sh", "-c", armFork(marks))
	hostSh(t, dir, "su tineuser -s /bin/sh -c \"cd "+dir+" && git config filter.evil.clean 'id -u > "+marks+"/source-filter; false' && git config core.hooksPath "+marks+"/hooks\"")
	ann.tine(dir, nil, "merge", "--dry-run", fork)
	ann.tine(dir, nil, "compare", fork)
	ann.tine(dir, nil, "merge", fork)
	if ran := ranOnHost(t, marks); len(ran) > 0 {
		t.Fatalf("the user's git configuration ran on the host through the daemon: %v", ran)
	}
}
