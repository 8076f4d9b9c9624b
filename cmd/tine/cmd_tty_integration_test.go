//go:build linux

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tinehq/tine/internal/account"
	"github.com/tinehq/tine/internal/agentmock"
	"github.com/tinehq/tine/internal/testkit"
)

// pane is a tmux pane running a command line under a tmux server of its
// own, as a person's terminal would.
type pane struct {
	t    *testing.T
	sock string
}

// newPane starts args in a cols x rows tmux pane with environment env, in
// a wrapper that then prints whether the pane's terminal settings came back
// unchanged ("restored") and the exit status ("tine-exit=N").
func newPane(t *testing.T, env []string, cols, rows int, args ...string) *pane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("requires tmux (.ci/run installs it)")
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "pane.sh")
	quote := func(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
	var body string
	for _, kv := range env { // tmux gives a pane the server's environment, not the client's
		if k, v, ok := strings.Cut(kv, "="); ok && !strings.ContainsAny(k, "'\" ;()") {
			body += "export " + k + "=" + quote(v) + "\n"
		}
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = quote(a)
	}
	// A ^C that arrives once tine has ended does not close the pane.
	body += "trap 'echo interrupted' INT\nbefore=$(stty -g)\n" + strings.Join(quoted, " ") + "\nrc=$?\n" +
		`[ "$(stty -g)" = "$before" ] && echo restored` + "\necho tine-exit=$rc\nwhile :; do sleep 1; done\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	p := &pane{t: t, sock: filepath.Join(dir, "tmux.sock")}
	cmd := exec.Command("tmux", "-S", p.sock, "-f", "/dev/null", "new-session", "-d", "-s", "s",
		"-x", fmt.Sprint(cols), "-y", fmt.Sprint(rows), "sh "+script)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("tmux", "-S", p.sock, "kill-server").Run() })
	return p
}

func (p *pane) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.sock}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v: %s", args, err, out)
	}
	return string(out)
}

// keys types keys (tmux key names: Enter, C-c, ...) into the pane.
func (p *pane) keys(keys ...string) {
	p.t.Helper()
	p.tmux(append([]string{"send-keys", "-t", "s"}, keys...)...)
}

// screen is what the pane shows, with its history.
func (p *pane) screen() string {
	p.t.Helper()
	return p.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "s")
}

// waitFor waits until the pane shows want and returns the screen.
func (p *pane) waitFor(want string) string {
	p.t.Helper()
	s, ok := p.shows(want, 20*time.Second)
	if !ok {
		p.t.Fatalf("the pane never showed %q:\n%s", want, s)
	}
	return s
}

// shows waits up to d for the pane to show want, and returns the screen
// and whether it did.
func (p *pane) shows(want string, d time.Duration) (string, bool) {
	deadline := time.Now().Add(d)
	for {
		s := p.screen()
		if strings.Contains(s, want) {
			return s, true
		}
		if time.Now().After(deadline) {
			return s, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitPrompt waits until the last line the pane shows (not its history: a
// full-screen program shows its own screen) is prompt.
func (p *pane) waitPrompt(prompt string) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		visible := p.tmux("capture-pane", "-p", "-t", "s")
		lines := strings.Split(strings.TrimRight(visible, " \n"), "\n")
		if strings.TrimSpace(lines[len(lines)-1]) == prompt {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the pane never came back to its prompt %q:\n%s", prompt, p.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// run types a shell command line followed by a marker the shell computes
// (so the typed line does not match it), and returns the screen once the
// marker appears.
func (p *pane) run(n int, line string) string {
	p.t.Helper()
	p.keys(fmt.Sprintf("%s; echo mark-$((%d+1))", line, n-1), "Enter")
	return p.waitFor(fmt.Sprintf("mark-%d", n))
}

// tine exec -it gives the command a real terminal: job control, ^C and ^Z
// to its foreground job only, the window size at the start and after each
// resize, a full-screen program, the exit status, and the caller's terminal
// back as it was.
func TestExecTTY_UnderTmux(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	if _, err := exec.LookPath("vi"); err != nil {
		t.Skip("requires vi (.ci/run installs vim-tiny)")
	}
	e := newEnv(t)
	dir := e.workspaceDir("term")
	e.ok("init", dir)
	e.ok("fork", "source", "--name", "f")
	env := append(slices.Clone(e.vars), "PS1=in$ ", "ENV=", "TERM=xterm")
	p := newPane(t, env, 100, 30, tineBin, "exec", "-it", "f", "--", "sh")
	p.waitFor("in$ ")
	if s := p.run(1, `echo size=$(stty size) run=$TINE_RUN; tty`); !strings.Contains(s, "size=30 100 run=f") || !strings.Contains(s, "/dev/pts/") {
		t.Fatalf("in the run:\n%s", s)
	}
	// ^C ends the foreground job, not the shell nor a background job.
	p.keys("sleep 100 &", "Enter")
	p.keys("sleep 50", "Enter")
	time.Sleep(300 * time.Millisecond)
	p.keys("C-c")
	if s := p.run(2, `echo status=$?`); !strings.Contains(s, "status=130\r") && !strings.Contains(s, "status=130\n") {
		t.Errorf("^C did not interrupt the foreground sleep:\n%s", s)
	}
	if s := p.run(3, "jobs"); !strings.Contains(s, "Running") || !strings.Contains(s, "sleep 100") {
		t.Errorf("the background job did not survive ^C:\n%s", s)
	}
	// ^Z stops the foreground job; fg resumes it (and ^C then ends it).
	p.keys("sleep 60", "Enter")
	time.Sleep(300 * time.Millisecond)
	p.keys("C-z")
	p.waitFor("Stopped")
	if s := p.run(4, "jobs"); !strings.Contains(s, "Stopped") || !strings.Contains(s, "sleep 60") {
		t.Errorf("^Z did not stop the job:\n%s", s)
	}
	p.keys("fg", "Enter")
	time.Sleep(300 * time.Millisecond)
	p.keys("C-c")
	if s := p.run(5, `echo fg=$?`); !strings.Contains(s, "fg=130") {
		t.Errorf("fg then ^C:\n%s", s)
	}
	// A resize reaches the terminal and its foreground job (SIGWINCH).
	p.keys(`sh -c 'trap "echo winch-\$((40+2)); exit" WINCH; while :; do sleep 0.1; done'`, "Enter")
	time.Sleep(300 * time.Millisecond)
	p.tmux("resize-window", "-t", "s", "-x", "120", "-y", "40")
	p.waitFor("winch-42")
	if s := p.run(7, `echo size=$(stty size)`); !strings.Contains(s, "size=40 120") {
		t.Errorf("after the resize:\n%s", s)
	}
	// A full-screen program: vi writes a file in the fork.
	p.keys("vi notes.txt", "Enter")
	p.waitFor(`"notes.txt"`)
	p.keys("i", "written in vi", "Escape")
	time.Sleep(500 * time.Millisecond) // so vi does not read Escape and ':' as one key
	p.keys(":wq", "Enter")
	p.waitPrompt("in$") // vi drops what is typed before it has ended
	p.run(8, "true")
	if b, _ := os.ReadFile(filepath.Join(e.path("f"), "notes.txt")); string(b) != "written in vi\n" {
		t.Errorf("vi in the fork wrote %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "notes.txt")); err == nil {
		t.Error("vi in the fork wrote into the source")
	}
	p.keys("exit 7", "Enter")
	s := p.waitFor("tine-exit=")
	if !strings.Contains(s, "tine-exit=7") || !strings.Contains(s, "restored") {
		t.Errorf("the exit status or the terminal's settings did not come back:\n%s", s)
	}
}

// tine shell opens the login shell on a terminal inside the run.
func TestShell_UnderTmux(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	dir := e.workspaceDir("sh")
	e.ok("init", dir)
	// A home of its own: the machine's profile of the user is not the test's.
	env := append(slices.Clone(e.vars), "HOME="+t.TempDir(), "PS1=in$ ", "TERM=xterm")
	p := newPane(t, env, 90, 25, tineBin, "shell", "source")
	if strings.HasSuffix(account.Lookup(0, 0).Shell, "bash") { // root's, the workspace's owner
		if s := p.run(1, `shopt -q login_shell && echo login-$((1+1))`); !strings.Contains(s, "login-2") {
			t.Errorf("bash is not a login shell:\n%s", s)
		}
	}
	if s := p.run(3, `echo run=$TINE_RUN size=$(stty size) at=$(pwd)`); !strings.Contains(s, "run=source size=25 90 at="+dir) {
		t.Errorf("in the shell:\n%s", s)
	}
	p.keys("exit 4", "Enter")
	if s := p.waitFor("tine-exit="); !strings.Contains(s, "tine-exit=4") {
		t.Errorf("exit status:\n%s", s)
	}
}

// A normal user's tine shell goes through the daemon: their login shell
// runs as them, on a terminal of theirs, with job control. Root's tine
// exec -t into their workspace gives them the terminal too.
func TestShell_AsUserThroughTheDaemon(t *testing.T) {
	e, ann, _, dir := userWorkspace(t)
	ann.ok(dir, "init", ".")
	ann.ok(dir, "fork", "source", "--name", "f")

	script := fmt.Sprintf("cd %s && exec setpriv --reuid=%d --regid=%d --clear-groups %s shell f", dir, ann.uid, ann.gid, ann.bin)
	p := newPane(t, append(slices.Clone(ann.vars), "TERM=xterm"), 90, 25, "sh", "-c", script)
	if s := p.run(1, `echo uid=$(id -u) tty=$(stat -c %u $(tty)) size=$(stty size)`); !strings.Contains(s, fmt.Sprintf("uid=%d tty=%d size=25 90", ann.uid, ann.uid)) {
		t.Fatalf("the user's shell in the run:\n%s", s)
	}
	p.keys("sleep 50", "Enter")
	time.Sleep(300 * time.Millisecond)
	p.keys("C-c")
	if s := p.run(2, `echo status=$?`); !strings.Contains(s, "status=130") {
		t.Errorf("^C in the user's shell:\n%s", s)
	}
	p.keys("exit 5", "Enter")
	if s := p.waitFor("tine-exit="); !strings.Contains(s, "tine-exit=5") || !strings.Contains(s, "restored") {
		t.Errorf("exit status or terminal settings:\n%s", s)
	}

	// Root's terminal, given to the owner the command runs as.
	r := e.tine("exec", "-t", "f", "--", "sh", "-c", `echo "$(id -u) $(stat -c %u "$(tty)")"`)
	if want := fmt.Sprintf("%d %d\r\n", ann.uid, ann.uid); r.code != 0 || r.stdout != want {
		t.Errorf("root's tine exec -t into the user's run: %v, want %q", r, want)
	}
}

// Interactive Claude Code (the real CLI, its full-screen interface) in a
// fork through tine exec -it, against the mock Messages API: a prompt
// typed, a permission granted with a key, the file written in the fork.
func TestExecTTY_InteractiveClaude(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	requireClaude(t)
	mock := newMock(t, func(r agentmock.Request) (agentmock.Turn, bool) {
		if r.Turn == 0 {
			return writeAnswer("from interactive claude\n"), true
		}
		return agentmock.Turn{Text: "I wrote answer.txt."}, r.Turn == 1
	})
	e := newEnv(t)
	dir := e.workspaceDir("tui")
	os.WriteFile(filepath.Join(dir, "README"), []byte("a workspace\n"), 0o644)
	e.ok("init", dir)
	e.ok("fork", "source", "--name", "f")
	// A home of claude's own, past its first-run questions: onboarding
	// done, the test key approved, the workspace trusted.
	home := t.TempDir()
	state := fmt.Sprintf(`{"hasCompletedOnboarding": true, "customApiKeyResponses": {"approved": ["test"], "rejected": []},
		"projects": {%q: {"hasTrustDialogAccepted": true}}}`, dir)
	if err := os.WriteFile(filepath.Join(home, ".claude.json"), []byte(state), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(append(slices.Clone(e.vars), mock.Env(home)...), "TERM=xterm-256color")
	p := newPane(t, env, 120, 40, tineBin, "exec", "-it", "f", "--", "claude")
	p.waitFor("Claude Code v")
	p.waitFor("❯")
	time.Sleep(time.Second) // the input box takes keys once drawn
	p.keys("write the answer")
	time.Sleep(500 * time.Millisecond)
	p.keys("Enter")
	p.waitFor("I wrote answer.txt.")
	if b, _ := os.ReadFile(filepath.Join(e.path("f"), "answer.txt")); string(b) != "from interactive claude\n" {
		t.Errorf("answer.txt in the fork: %q", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "answer.txt")); err == nil {
		t.Error("claude in the fork wrote into the source")
	}
	// A resize reaches it: it draws its rules across the new width.
	p.tmux("resize-window", "-t", "s", "-x", "100", "-y", "30")
	deadline := time.Now().Add(20 * time.Second)
	for !hasRule(p.tmux("capture-pane", "-p", "-t", "s"), 100) {
		if time.Now().After(deadline) {
			t.Fatalf("claude did not redraw at 100 columns:\n%s", p.tmux("capture-pane", "-p", "-t", "s"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.keys("C-c")
	time.Sleep(300 * time.Millisecond)
	p.keys("C-c")
	if s := p.waitFor("tine-exit="); !strings.Contains(s, "tine-exit=0") || !strings.Contains(s, "restored") {
		t.Errorf("leaving claude:\n%s", s)
	}
}

// hasRule reports whether screen has a line of exactly cols '─'.
func hasRule(screen string, cols int) bool {
	for _, l := range strings.Split(screen, "\n") {
		if l = strings.TrimRight(l, " "); l != "" && strings.Trim(l, "─") == "" && utf8.RuneCountInString(l) == cols {
			return true
		}
	}
	return false
}

// Interactive Codex (the real CLI, its full-screen interface) in a fork
// through tine exec -it, against the mock Responses API.
func TestExecTTY_InteractiveCodex(t *testing.T) {
	cx := newCodexEnv(t)
	e, dir := codexWorkspace(t, false)
	e.ok("fork", "source", "--name", "f")
	// A fork is confined by tine (Landlock), beneath which codex's own
	// sandbox (bubblewrap) cannot mount anything: codex runs without it, as
	// tine's fork-run has it do (docs/cli.md, Confinement).
	cfgPath := filepath.Join(cx.home, "config.toml")
	cfg, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	trust := fmt.Sprintf("\n[projects.%q]\ntrust_level = \"trusted\"\n", dir)
	if err := os.WriteFile(cfgPath, []byte("sandbox_mode = \"danger-full-access\"\n"+string(cfg)+trust), 0o644); err != nil {
		t.Fatal(err)
	}
	env := append(append(slices.Clone(e.vars), cx.vars...), "TERM=xterm-256color")
	p := newPane(t, env, 120, 40, tineBin, "exec", "-it", "f", "--", "codex")
	p.waitFor("Ask Codex to do anything")
	// Typed key by key, then a pause: a burst of keys with Enter in it is
	// a paste to codex, and its Enter a new line.
	for _, ch := range "fix app.txt" {
		p.keys("-l", string(ch))
		time.Sleep(30 * time.Millisecond)
	}
	// Enter again if it did not submit: codex at times still takes it
	// for part of a paste, or is not yet ready, on a loaded machine.
	for try := 0; !strings.Contains(p.screen(), "fixed app.txt"); try++ {
		if try == 3 {
			t.Fatalf("codex never answered (%d requests to the mock):\n%s", len(cx.mock.Requests()), p.screen())
		}
		time.Sleep(2 * time.Second)
		p.keys("Enter")
		for end := time.Now().Add(8 * time.Second); time.Now().Before(end) && !strings.Contains(p.screen(), "fixed app.txt"); {
			time.Sleep(100 * time.Millisecond)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(e.path("f"), "app.txt")); string(b) != "status OK\n" {
		t.Errorf("app.txt in the fork: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "app.txt")); string(b) != "status BUG\n" {
		t.Errorf("app.txt in the source: %q", b)
	}
	if fileExists(codexOutside) {
		os.Remove(codexOutside)
		t.Errorf("codex wrote %s, outside the fork: its sandbox is not in force", codexOutside)
	}
	// With an empty prompt Ctrl-C quits codex. In CI it at times did not,
	// twice in a row (the screen showed the finished turn and nothing
	// else): then Ctrl-D, then codex's own /quit, each given a while.
	p.keys("C-c")
	for _, quit := range [][]string{{"C-c"}, {"C-d"}, {"-l", "/quit"}} {
		if _, ok := p.shows("tine-exit=", 8*time.Second); ok {
			break
		}
		p.keys(quit...)
		if quit[0] == "-l" {
			time.Sleep(300 * time.Millisecond)
			p.keys("Enter")
		}
	}
	if s := p.waitFor("tine-exit="); !strings.Contains(s, "tine-exit=0") || !strings.Contains(s, "restored") {
		t.Errorf("leaving codex:\n%s", s)
	}
}

// tine exec -t and tine shell end when their standard input ends (issue
// 28: with </dev/null an interactive shell missed the one ^D, typed before
// it read, and both hung for ever).
func TestExecTTY_EndsWithItsInput(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	e.ok("init", e.workspaceDir("app"))
	for _, args := range [][]string{{"exec", "-t", "source", "--", "bash"}, {"shell", "source"}, {"exec", "-t", "source", "--", "cat"}} {
		start := time.Now()
		r := e.run(call{stdin: nil}, args...)
		if r.code != 0 || time.Since(start) > 30*time.Second {
			t.Errorf("tine %v </dev/null: exit %d after %s\n%v", args, r.code, time.Since(start).Round(time.Millisecond), r)
		}
	}
	r := e.run(call{stdin: []byte("echo from-stdin\n")}, "exec", "-t", "source", "--", "bash")
	if r.code != 0 || !strings.Contains(r.stdout, "from-stdin") {
		t.Errorf("tine exec -t bash with a script on stdin:\n%v", r)
	}
}
