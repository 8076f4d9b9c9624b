//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/internal/tty"
	"github.com/tinehq/tine/layer"
	"golang.org/x/term"
)

// Names a fork can give its files to fool whoever reads tine's output: one
// that erases the line and rewrites it to read as a change of README.md,
// and one that is not UTF-8.
const (
	evilName = "evil\x1b[2K\rM  README.md"
	badName  = "bad\xffname"
)

// requireEscaped fails unless out holds no raw ESC or CR (nor the bytes of
// badName) and shows each of want as it is quoted.
func requireEscaped(t *testing.T, what, out string, want ...string) {
	t.Helper()
	if strings.ContainsAny(out, "\x1b\r") || strings.Contains(out, "\xff") {
		t.Errorf("%s prints a fork's name raw:\n%q", what, out)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s does not show %s:\n%s", what, w, out)
		}
	}
}

// TestCLI_HostileNamesEscaped: file names and an approach label a fork
// controls reach the terminal quoted (diff, merge --dry-run, compare,
// export), and --json keeps them exact.
func TestCLI_HostileNamesEscaped(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"README.md": "read me\n"})
	e.ok("init", ws)
	var fork struct {
		Group struct {
			ID string `json:"id"`
		} `json:"group"`
	}
	e.okJSON(&fork, "fork", "source", "--approach", "sneaky\x1b[1A\rapproach", "--json")
	view := e.path("source-1")
	for _, n := range []string{evilName, badName} {
		if err := os.WriteFile(filepath.Join(view, n), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	quotedEvil, quotedBad := `"evil\x1b[2K\rM  README.md"`, `"bad\xffname"`

	requireEscaped(t, "tine diff", e.ok("diff", "source-1"), quotedEvil, quotedBad)
	requireEscaped(t, "tine diff --patch", e.ok("diff", "source-1", "--patch"), "+++ b/"+quotedEvil)
	requireEscaped(t, "tine merge --dry-run", e.ok("merge", "source-1", "--dry-run"), quotedEvil, quotedBad)
	requireEscaped(t, "tine compare", e.ok("compare", fork.Group.ID), `sneaky\x1b[1A\rapproach`)
	requireEscaped(t, "tine export", e.ok("export", fork.Group.ID), quotedEvil, quotedBad)
	requireEscaped(t, "tine ls", e.ok("ls"), `sneaky\x1b[1A\rapproach`)

	// --json stays exact: the escape and the carriage return are JSON
	// escapes that decode to the name's bytes. JSON carries text, so bytes
	// that are not UTF-8 become U+FFFD there, as encoding/json has always
	// written them (the contract docs/cli.md states).
	var changes []layer.Change
	e.okJSON(&changes, "diff", "source-1", "--json")
	got := map[string]bool{}
	for _, c := range changes {
		got[c.Path] = true
	}
	if !got[evilName] || !got["bad\uFFFDname"] {
		t.Errorf("diff --json paths %v, want %q and the other with U+FFFD", got, evilName)
	}
	var plan struct {
		Plan struct {
			Entries []struct {
				Path string `json:"path"`
			} `json:"entries"`
		} `json:"plan"`
	}
	out := e.ok("merge", "source-1", "--dry-run", "--json")
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, en := range plan.Plan.Entries {
		paths = append(paths, en.Path)
	}
	if !strings.Contains(strings.Join(paths, "\n"), evilName) {
		t.Errorf("merge --dry-run --json paths %q, want %q", paths, evilName)
	}
}

// TestForkRun_SummaryEscapesForkText: tine summary shows an approach and
// the test's output a fork controls with their control characters escaped.
func TestForkRun_SummaryEscapesForkText(t *testing.T) {
	e, dir := forkRunWorkspace(t, "")
	check := "printf 'PASS\\033[2K\\rFAIL \\377\\n'; grep -q OK app.txt\n"
	if err := os.WriteFile(filepath.Join(dir, "check.sh"), []byte(check), 0o644); err != nil {
		t.Fatal(err)
	}
	rep, r := e.forkRunJSON("source", "--prompt", "fix app.txt", "-n", "1",
		"--approach", "fix\x1b[2K\rit", "--merge-mode", "manual")
	if r.code != 0 || len(rep.Forks) != 1 {
		t.Fatalf("fork-run: %v", r)
	}
	requireEscaped(t, "tine summary", e.ok("summary", "source-1"), `fix\x1b[2K\rit`, `PASS\x1b[2K`)
}

// Text a fork controls that reorders or hides what a person reads: a file
// whose right-to-left override makes invoice<U+202E>fdp.sh read as
// invoicehs.pdf, one with a C1 CSI (U+009B, an escape sequence's start on
// some terminals) and DEL, and an approach with bidirectional isolates,
// marks and an embedding. JSON leaves all of them as they are.
const (
	rloName      = "invoice\u202efdp.sh"
	c1Name       = "csi\u009b31mname\x7f"
	bidiApproach = "fix \u2066it\u2069\u200f\u061c\u202a"
	// How they are shown: each such character as its Go escape.
	rloShown      = `invoice\u202efdp.sh`
	c1Shown       = `csi\u009b31mname\x7f`
	approachShown = `fix \u2066it\u2069\u200f\u061c\u202a`
	// A shell command making the two files in the working directory.
	makeHostileFiles = `printf x > "$(printf 'invoice\342\200\256fdp.sh')"; printf y > "$(printf 'csi\302\23331mname\177')"`
)

// requireTerminalSafe fails unless out is UTF-8 of printable characters
// (strconv.IsPrint), newlines and tabs only, and shows each of want.
func requireTerminalSafe(t *testing.T, what, out string, want ...string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s prints bytes that are not UTF-8:\n%q", what, out)
	}
	for _, r := range out {
		if !strconv.IsPrint(r) && r != '\n' && r != '\t' {
			t.Errorf("%s prints %U raw:\n%q", what, r, out)
			break
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s does not show %s:\n%s", what, w, out)
		}
	}
}

// TestCLI_BidiAndC1Escaped: a fork makes files named with a right-to-left
// override, a C1 control and DEL, under an approach of bidirectional
// isolates and marks, and is merged. tine log and tine events (which
// printed the events' JSON as it is: invoicehs.pdf) and tine fork show
// them escaped, like diff, merge, ls and tree; --json keeps them exact.
func TestCLI_BidiAndC1Escaped(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	ws := e.workspaceDir("app")
	writeTestFiles(t, ws, map[string]string{"README.md": "read me\n"})
	e.ok("init", ws)
	requireTerminalSafe(t, "tine fork", e.ok("fork", "source", "--approach", bidiApproach), approachShown)
	e.execSh("source-1", makeHostileFiles)

	requireTerminalSafe(t, "tine diff", e.ok("diff", "source-1"), `"`+rloShown+`"`, `"`+c1Shown+`"`)
	requireTerminalSafe(t, "tine merge --dry-run", e.ok("merge", "source-1", "--dry-run"), `"`+rloShown+`"`, `"`+c1Shown+`"`)
	requireTerminalSafe(t, "tine ls", e.ok("ls"), approachShown)
	requireTerminalSafe(t, "tine tree", e.ok("tree", "app"), approachShown)
	requireTerminalSafe(t, "tine merge", e.ok("merge", "source-1"))

	requireTerminalSafe(t, "tine log of the fork", e.ok("log", "source-1"), rloShown, c1Shown, approachShown)
	requireTerminalSafe(t, "tine log of the source", e.ok("log", "source"), rloShown, c1Shown)
	requireTerminalSafe(t, "tine events", e.ok("events"), rloShown, c1Shown, approachShown)
	requireTerminalSafe(t, "tine events app", e.ok("events", "app"), rloShown, c1Shown, approachShown)
	r := e.tine("log", "no\u202esuch")
	if r.code == 0 {
		t.Errorf("tine log of a missing run: %v", r)
	}
	requireTerminalSafe(t, "an error naming a run", r.stderr, `no\u202esuch`)

	// --json: the events' details hold the exact names.
	details := func(evs []jsonEvent) string {
		var all []string
		for _, ev := range evs {
			var d any
			if len(ev.Detail) == 0 {
				continue
			}
			if err := json.Unmarshal(ev.Detail, &d); err != nil {
				t.Fatalf("event %d: %v", ev.Seq, err)
			}
			all = append(all, fmt.Sprint(d))
		}
		return strings.Join(all, "\n")
	}
	for _, w := range []string{rloName, c1Name, bidiApproach} {
		if got := details(e.events("source-1")); !strings.Contains(got, w) {
			t.Errorf("tine log --json details do not hold %q exactly:\n%q", w, got)
		}
	}
	var evs []jsonEvent
	for _, line := range strings.Split(strings.TrimSpace(e.ok("events", "--json")), "\n") {
		var ev jsonEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("tine events --json line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	for _, w := range []string{rloName, c1Name, bidiApproach} {
		if got := details(evs); !strings.Contains(got, w) {
			t.Errorf("tine events --json details do not hold %q exactly:\n%q", w, got)
		}
	}
}

// onTerminal runs cmd with its standard output on a pseudo-terminal, as a
// person's, in raw mode (no newline translation), and returns what it
// printed there.
func onTerminal(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	master, slave, err := tty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer master.Close()
	if _, err := term.MakeRaw(int(slave.Fd())); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = slave, &stderr
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // EIO once the command's end is closed
		got <- b
	}()
	err = cmd.Run()
	slave.Close()
	out := <-got
	if err != nil {
		t.Fatalf("%v on a terminal: %v: %s", cmd.Args, err, stderr.String())
	}
	return string(out)
}

// A service's output that would rewrite the terminal it is shown on: an
// erase and a carriage return, an override, a C1 CSI and DEL.
const (
	hostileService = "[[service]]\nname = \"svc\"\n" +
		`command = '''printf 'said \033[2K\rfake\342\200\256fdp\302\233z\177\n'; exec sleep 600'''` + "\n"
	hostileSaid = "said \x1b[2K\rfake\u202efdp\u009bz\x7f\n"
	saidShown   = `said \x1b[2K\rfake\u202efdp\u009bz\x7f`
)

// TestLive_LogsEscapedOnTerminal: tine logs shows a service's control
// characters escaped on a terminal (they went to it raw), and copies them
// exactly into a pipe.
func TestLive_LogsEscapedOnTerminal(t *testing.T) {
	e, _ := liveWorkspace(t, false, map[string]string{"tine.toml": hostileService})
	e.ok("start", "source")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(e.ok("logs", "source", "svc"), hostileSaid) && time.Now().Before(deadline) { // not "said": the log's header line says it too
		time.Sleep(50 * time.Millisecond)
	}
	if out := e.ok("logs", "source", "svc"); !strings.Contains(out, hostileSaid) {
		t.Errorf("tine logs into a pipe: %q, want the output's exact bytes %q", out, hostileSaid)
	}
	for _, args := range [][]string{{"logs", "source", "svc"}, {"logs", "source"}} {
		cmd := exec.Command(tineBin, args...)
		cmd.Env = e.vars
		requireTerminalSafe(t, "tine "+strings.Join(args, " ")+" on a terminal", onTerminal(t, cmd), saidShown)
	}
}

// TestUser_HostileTextEscapedThroughDaemon: a normal user's tine, through
// the system daemon, shows a fork's patch and a service's output escaped on
// a terminal (diff --patch went raw there), and its events escaped.
func TestUser_HostileTextEscapedThroughDaemon(t *testing.T) {
	_, ann, _, dir := userWorkspace(t)
	if err := os.WriteFile(filepath.Join(dir, "tine.toml"), []byte(hostileService), 0o644); err != nil {
		t.Fatal(err)
	}
	ann.ok(dir, "init", ".")
	ann.ok(dir, "start", "source")
	var fork struct {
		Forks []struct {
			Name string `json:"name"`
		} `json:"forks"`
	}
	ann.okJSON(dir, &fork, "fork", "source", "--approach", bidiApproach, "--json")
	if len(fork.Forks) != 1 {
		t.Fatalf("fork: %+v", fork)
	}
	f1 := "app/" + fork.Forks[0].Name
	ann.ok(dir, "exec", f1, "--", "sh", "-c", `printf 'a\033[2Kb\342\200\256c\n' > src/a.txt; `+makeHostileFiles)

	term := func(args ...string) string {
		cmd := exec.Command(ann.bin, args...)
		cmd.Env, cmd.Dir = ann.vars, dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
		return onTerminal(t, cmd)
	}
	requireTerminalSafe(t, "tine diff --patch through the daemon on a terminal", term("diff", f1, "--patch"), `+a\x1b[2Kb\u202ec`)
	if out := ann.ok(dir, "diff", f1, "--patch"); !strings.Contains(out, "+a\x1b[2Kb\u202ec\n") {
		t.Errorf("tine diff --patch through the daemon into a pipe: %q, want the exact lines", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(ann.ok(dir, "logs", "app/source", "svc"), hostileSaid) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	requireTerminalSafe(t, "tine logs through the daemon on a terminal", term("logs", "app/source", "svc"), saidShown)
	ann.ok(dir, "merge", f1)
	requireTerminalSafe(t, "tine events through the daemon", ann.ok(dir, "events", "app"), rloShown, c1Shown, approachShown)
	requireTerminalSafe(t, "tine log through the daemon", ann.ok(dir, "log", "app/source"), rloShown, c1Shown)
}
