//go:build linux

package main

// Issue 25's matrix: whoever asks — root's CLI, a normal user through the
// system daemon, an agent over MCP as root or as the user, the user's
// dashboard's fork-run form — gets the same
// fork-run, with their own identity. Each agent (the real claude and
// codex against the mock APIs, and a command agent) is found only on the
// caller's PATH (a name no other PATH has), runs as the caller with the
// caller's environment (the mock's URL and key exist nowhere else), and
// writes answer.txt; the test passes, the outcome is the same, the file in
// the fork is the caller's, and no fork's supervisor is left running.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/httpapi"
	"github.com/tinehq/tine/internal/agentmock"
	"github.com/tinehq/tine/runtime"
)

// matrixCaller is one way of asking for a fork-run.
type matrixCaller struct {
	name string
	user bool // the normal user (through the system daemon), else root
	mcp  bool // over tine mcp, else the CLI
	form bool // the fork-run form of the user's dashboard, else the CLI
}

// matrixFork is what every caller's report says of the one fork.
type matrixFork struct {
	outcome, name, state, reason string
	ready                        bool
}

func TestCallers_SameForkRunForEveryone(t *testing.T) {
	e, ann, sock, _ := userWorkspace(t)
	callers := []matrixCaller{{"root-cli", false, false, false}, {"user-daemon", true, false, false},
		{"mcp-root", false, true, false}, {"mcp-user", true, true, false}, {"dashboard-user", true, false, true}}
	kinds := []string{"command", "claude", "codex"}
	i := 0
	for _, c := range callers {
		for _, kind := range kinds {
			i++
			ws := fmt.Sprintf("m%d", i)
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				switch kind {
				case "claude":
					requireClaude(t)
				case "codex":
					requireCodex(t)
				}
				uid, gid := 0, 0
				if c.user {
					uid, gid = ann.uid, ann.gid
				}
				home := publicDir(t)
				dir := filepath.Join(home, ws)
				vars := matrixAgent(t, kind, home, dir, c.form)
				hostCmd(t, "/", "chown", "-R", fmt.Sprintf("%d:%d", uid, gid), home)
				args := []string{"--prompt", "write the answer to answer.txt", "--merge-mode", "manual"}
				if kind == "command" {
					args = append(args, "--agent-cmd", `echo 42 > answer.txt; echo "$TINE_TEST_CALLER_MARK" > mark.txt`)
				} else {
					args = append(args, "--agent", "mine")
				}
				if c.user {
					ann.ok(dir, "init", ".")
					// Before publicDir's cleanup: unmounted alone, the
					// view was mounted again by the daemon's sweep and
					// stayed (nine mounts left by every run).
					t.Cleanup(func() { ann.tine("/", nil, "release", "--unmerged", dir) })
				} else {
					e.ok("init", dir)
					e.ws = append(e.ws, dir)
				}
				var f matrixFork
				switch {
				case c.form:
					f = matrixForm(t, e, ann, sock, dir, ws, kind)
				case c.mcp:
					f = matrixMCP(t, e, ann, c, dir, ws, vars, kind)
				default:
					f = matrixCLI(t, e, ann, c, dir, ws, vars, args)
				}
				if f.outcome != "reported" || f.state != "finished" || !f.ready {
					t.Fatalf("%s asking with %s: outcome %q, fork %s %s (%s), ready %v", c.name, kind, f.outcome, f.name, f.state, f.reason, f.ready)
				}
				run := ws + "/" + f.name
				if got := e.ok("exec", run, "--", "stat", "-c", "%u %s", "answer.txt"); got != fmt.Sprintf("%d 3\n", uid) {
					t.Errorf("answer.txt in %s: owner and size %q, want uid %d's 3 bytes", run, got, uid)
				}
				if kind == "command" && !c.form {
					if got := e.ok("exec", run, "--", "cat", "mark.txt"); got != c.name+"\n" {
						t.Errorf("the command agent's environment: mark %q, want the caller's %q", got, c.name)
					}
				}
				if st := psState(e, run); st != runtime.ProcStopped {
					t.Errorf("%s: supervisor %s after the fork-run ended, want stopped", run, st)
				}
			})
		}
	}
}

// matrixAgent writes dir's files for an agent of kind and returns the
// caller's environment: the agent's binary under a name only this PATH
// has, the mock's address and key, the caller's mark. For a browser's
// form, which sends no environment, tine.toml names the binary by its
// path and gives the agent the mock's variables.
func matrixAgent(t *testing.T, kind, home, dir string, form bool) []string {
	t.Helper()
	bin := filepath.Join(home, "bin")
	for _, d := range []string{bin, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	toml := "[fork]\ntest_command = \"grep -qx 42 answer.txt\"\n"
	vars := []string{"HOME=" + home}
	switch kind {
	case "claude":
		mock := answerMock(t)
		vars = mock.Env(home)
	case "codex":
		m, err := agentmock.NewOpenAI(func(r *agentmock.OpenAIRequest) agentmock.OpenAITurn {
			if r.LastIsToolOutput() {
				return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{agentmock.Message("wrote answer.txt")}}
			}
			return agentmock.OpenAITurn{Items: []agentmock.OpenAIItem{agentmock.FunctionCall("exec_command", map[string]any{"cmd": "echo 42 > answer.txt"})}}
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		codexHome := filepath.Join(home, ".codex")
		os.MkdirAll(codexHome, 0o755)
		config := "model_provider = \"mock\"\n[model_providers.mock]\nname = \"mock\"\nbase_url = \"" + m.URL +
			"\"\nwire_api = \"responses\"\nenv_key = \"TINE_MOCK_OPENAI_KEY\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		vars = append(vars, "CODEX_HOME="+codexHome, "TINE_MOCK_OPENAI_KEY=mock")
	}
	if kind != "command" {
		real, err := exec.LookPath(kind)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, filepath.Join(bin, kind+"-of-caller")); err != nil {
			t.Fatal(err)
		}
		binary := kind + "-of-caller"
		if form {
			binary = filepath.Join(bin, binary)
		}
		toml += "[agent.mine]\nkind = \"" + kind + "\"\nbinary = \"" + binary + "\"\n"
		if form {
			toml += "[agent.mine.env]\n"
			for _, kv := range vars {
				k, v, _ := strings.Cut(kv, "=")
				toml += k + " = " + strconv.Quote(v) + "\n"
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tine.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	return append(vars, "PATH="+bin+":/usr/local/bin:/usr/bin:/bin")
}

// matrixCLI runs tine fork-run from the CLI as c.
func matrixCLI(t *testing.T, e *env, ann *localUser, c matrixCaller, dir, ws string, vars, args []string) matrixFork {
	t.Helper()
	vars = append(vars, "TINE_TEST_CALLER_MARK="+c.name)
	full := append([]string{"fork-run", ws + "/source", "--json", "-n", "1"}, args...)
	var r result
	if c.user {
		r = ann.tine(dir, vars, full...)
	} else {
		r = e.run(call{dir: dir, vars: vars}, full...)
	}
	var rep forkrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || len(rep.Forks) != 1 {
		t.Fatalf("%s: fork-run: %v", c.name, r)
	}
	f := rep.Forks[0]
	return matrixFork{outcome: string(rep.Outcome), name: f.Name, state: string(f.State), reason: f.Reason + " " + f.AgentStderr, ready: f.Ready}
}

// matrixForm asks for the fork-run with the form of the run's page in the
// user's dashboard (tine dashboard's URL, the token's cookie, the page's
// CSRF token), as a browser would, and follows its report to the end.
func matrixForm(t *testing.T, e *env, ann *localUser, sock, dir, ws, kind string) matrixFork {
	t.Helper()
	src := lsRow(t, e.ls(), ws+"/source")
	link := strings.TrimSpace(ann.ok(dir, "dashboard"))
	u, _ := url.Parse(link)
	base := u.Scheme + "://" + u.Host
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := browser.Get(link); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	resp, err := browser.Get(base + "/ui/runs/" + src.ID)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindSubmatch(page)
	if resp.StatusCode != 200 || csrf == nil {
		t.Fatalf("the source's page in the user's dashboard: %d\n%s", resp.StatusCode, page)
	}
	form := url.Values{"csrf": {string(csrf[1])}, "prompt": {"write the answer to answer.txt"}, "n": {"1"}, "merge_mode": {"manual"}}
	if kind == "command" {
		form.Set("agent_cmd", "echo 42 > answer.txt")
	} else {
		form.Set("agent", "mine")
	}
	req, _ := http.NewRequest("POST", base+"/ui/runs/"+src.ID+"/fork-run", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err = browser.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	group := regexp.MustCompile(`/ui/groups/([^/?]+)`).FindStringSubmatch(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || group == nil {
		t.Fatalf("the fork-run form: %d %s\n%s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	cl := httpapi.NewClient(sock, nil)
	deadline := time.Now().Add(90 * time.Second)
	for {
		rep, err := cl.ForkRunReport(context.Background(), group[1])
		if err != nil {
			t.Fatal(err)
		}
		if rep.Outcome != forkrun.OutcomeRunning || time.Now().After(deadline) {
			if len(rep.Forks) != 1 {
				t.Fatalf("the form's fork-run: %+v", rep)
			}
			f := rep.Forks[0]
			return matrixFork{outcome: string(rep.Outcome), name: f.Name, state: string(f.State), reason: f.Reason + " " + f.AgentStderr, ready: f.Ready}
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// matrixMCP asks for the fork-run over tine mcp (the MCP SDK's client),
// started as c with c's environment, and follows its report to the end.
func matrixMCP(t *testing.T, e *env, ann *localUser, c matrixCaller, dir, ws string, vars []string, kind string) matrixFork {
	t.Helper()
	bin, env := tineBin, append(append([]string{}, e.vars...), vars...)
	cmd := exec.Command(bin, "mcp")
	if c.user {
		bin, env = ann.bin, append(append([]string{}, ann.vars...), vars...)
		cmd = exec.Command(bin, "mcp")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(ann.uid), Gid: uint32(ann.gid)}}
	}
	cmd.Env, cmd.Dir, cmd.Stderr = append(env, "TINE_TEST_CALLER_MARK="+c.name), dir, os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "tine-test", Version: "0"}, nil).Connect(context.Background(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	in := map[string]any{"run": ws + "/source", "copies": 1, "prompt": "write the answer to answer.txt", "merge_mode": "manual"}
	if kind == "command" {
		in["agent_cmd"] = `echo 42 > answer.txt; echo "$TINE_TEST_CALLER_MARK" > mark.txt`
	} else {
		in["agent"] = "mine"
	}
	text, st := mcpCall(t, cs, false, "fork_run", in)
	group, _ := st["group"].(string)
	if group == "" {
		t.Fatalf("%s: fork_run: %s", c.name, text)
	}
	_, rep := mcpReport(t, cs, group)
	forks, _ := rep["forks"].([]any)
	if len(forks) != 1 {
		t.Fatalf("%s: report %v", c.name, rep)
	}
	f := forks[0].(map[string]any)
	str := func(k string) string { s, _ := f[k].(string); return s }
	ready, _ := f["ready"].(bool)
	outcome, _ := rep["outcome"].(string)
	return matrixFork{outcome: outcome, name: str("name"), state: str("state"), reason: strings.TrimSpace(str("reason")), ready: ready}
}
