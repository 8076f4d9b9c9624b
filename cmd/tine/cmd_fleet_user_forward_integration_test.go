//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tinehq/tine/engine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/fleet"
	"github.com/tinehq/tine/internal/testkit"
	"github.com/tinehq/tine/postgres/pgtest"
)

// systemNode is a system daemon (tine serve --system) serving as a node
// of the fleet at url with the tests' fleet key: its state directory's
// env, its people's socket and its API's address.
type systemNode struct {
	e      *env
	d      *daemon
	sock   string
	listen string
}

// startSystemNode starts node name as a system daemon on the fleet at url.
func startSystemNode(t *testing.T, url, name string) *systemNode {
	t.Helper()
	n := &systemNode{e: newEnv(t), sock: filepath.Join(publicDir(t), "tine.sock"), listen: freeAddr(t)}
	n.e.vars = append(n.e.vars, "TINE_STORE_URL="+url)
	n.d = n.e.serveWith([]string{"TINE_DAEMON_SOCKET=" + n.sock, testFleetKey},
		"--system", "--node", name, "--capacity", "0", "--heartbeat", "300ms", "--listen", n.listen)
	return n
}

// waitNodesUp waits until n's fleet has want nodes up.
func (n *systemNode) waitNodesUp(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var st fleetStatus
		code, _, body := apiGet(t, n.d.client, "/v1/fleet")
		json.Unmarshal([]byte(body), &st)
		up := 0
		for _, nd := range st.Nodes {
			if nd.State == fleet.NodeUp {
				up++
			}
		}
		if code == http.StatusOK && up == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fleet's nodes: %d\n%s\nwant %d up", code, body, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// via is p talking to the system daemon on sock instead.
func (p *localUser) via(sock string) *localUser {
	q := *p
	q.vars = append(append([]string{}, p.vars...), "TINE_DAEMON_SOCKET="+sock)
	return &q
}

// curl is curl -s -i as p (the daemon on sock knows them by SO_PEERCRED):
// the status line, headers and body.
func (p *localUser) curl(sock string, args ...string) string {
	p.t.Helper()
	cmd := exec.Command("curl", append([]string{"-s", "-i", "--max-time", "30", "--unix-socket", sock}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		p.t.Fatalf("curl %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// TestFleet_UserForward: a normal user (tineuser) talking to node ua's
// system daemon reaches their workspace that lives on node ub: ua lists
// it, forwards their diff, fork and path to ub, which serves them as its
// own tineuser (the fork made on ub, its files tineuser's). A header
// naming another user, from the caller on ua's socket or on the wire to
// ub with a signature that does not cover it, is refused (401), never
// served; a home whose account database has no tineuser refuses them
// (403 unknown_user). Before, ua served a normal user's request itself:
// the fork was not made on ub.
func TestFleet_UserForward(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("needs curl")
	}
	url := pgtest.URL(t)
	b := startSystemNode(t, url, "ub")
	a := startSystemNode(t, url, "ua")
	a.waitNodesUp(t, 2)
	ann := asUser(t, "tineuser", b.sock)

	dir := filepath.Join(publicDir(t), "app")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	hostCmd(t, dir, "chown", "-R", "tineuser:", ".")
	b.e.ws = append(b.e.ws, dir)
	var ref engine.Ref
	ann.okJSON(dir, &ref, "init", "--json", ".")
	ann.ok(dir, "exec", "source", "--", "sh", "-c", "echo new > new.txt")

	onA := ann.via(a.sock)
	var rows []runRow
	onA.okJSON("/", &rows, "ls", "--json")
	if len(rows) != 1 || rows[0].WorkspaceName != "app" {
		t.Fatalf("tineuser's tine ls on ua: %+v; want app's source alone", rows)
	}
	if out := onA.ok("/", "diff", "app/source"); !strings.Contains(out, "new.txt") {
		t.Errorf("tineuser's tine diff app/source on ua: %q; want new.txt", out)
	}
	var fr engine.ForkResult
	onA.okJSON("/", &fr, "fork", "app/source", "--json")
	fork := "app/" + fr.Forks[0].Name
	path := strings.TrimSpace(onA.ok("/", "path", fork))
	if !strings.HasPrefix(path, b.e.home+"/") {
		t.Errorf("the fork tineuser made through ua is at %s, not on ub (state %s)", path, b.e.home)
	}
	if got, err := os.ReadFile(filepath.Join(path, "new.txt")); err != nil || string(got) != "new\n" || uidOf(t, filepath.Join(path, "new.txt")) != ann.uid {
		t.Errorf("the fork's new.txt: %q, %v; want new, tineuser's", got, err)
	}
	out := onA.curl(a.sock, "http://tine/v1/runs/"+strings.ReplaceAll(fork, "/", "%2F"))
	if !strings.HasPrefix(out, "HTTP/1.1 200") || !strings.Contains(out, fleet.HeaderNode+": ub") {
		t.Errorf("tineuser's GET of their fork on ua:\n%s\nwant 200 served by ub", out)
	}

	root := filepath.Join(publicDir(t), "roots")
	os.Mkdir(root, 0o755)
	b.e.ws = append(b.e.ws, root)
	b.e.ok("init", root)
	requireOneLineError(t, onA.tine("/", nil, "diff", "roots/source"), exitNotFound)

	t.Run("ForgedUser", func(t *testing.T) {
		out := onA.curl(a.sock, "-H", fleet.HeaderUser+": root", "http://tine/v1/runs/roots%2Fsource/diff")
		if !strings.HasPrefix(out, "HTTP/1.1 401") || strings.Contains(out, fleet.HeaderNode) {
			t.Errorf("tineuser's request on ua naming root in %s:\n%s\nwant 401, served nowhere", fleet.HeaderUser, out)
		}
		req, _ := http.NewRequest("GET", "http://"+b.listen+"/v1/runs/roots%2Fsource/diff", nil)
		req.Header.Set(fleet.HeaderHop, "ua")
		req.Header.Set(fleet.HeaderUser, "root")
		req.Header.Set(fleet.HeaderAuth, "v2 "+strconv.FormatInt(time.Now().Unix(), 10)+" nonce "+strings.Repeat("ab", 32))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a request to ub for root with a forged signature: %d, want 401", resp.StatusCode)
		}
	})
	t.Run("UnknownUser", func(t *testing.T) {
		startForeignNode(t, url, "uc")
		a.waitNodesUp(t, 3)
		f, err := fleet.Open(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.SetHome(t.Context(), ref.Workspace.ID, "uc"); err != nil {
			t.Fatal(err)
		}
		defer f.SetHome(context.Background(), ref.Workspace.ID, "ub")
		out := onA.curl(a.sock, "http://tine/v1/runs/app%2Fsource/diff")
		if !strings.HasPrefix(out, "HTTP/1.1 403") || !strings.Contains(out, `"code":"unknown_user"`) || !strings.Contains(out, fleet.HeaderNode+": uc") {
			t.Errorf("tineuser's request on ua about their workspace, its home uc having no tineuser:\n%s\nwant 403 unknown_user from uc", out)
		}
		r := onA.tine("/", nil, "diff", "app/source")
		if r.code != errcode.ExitUnsupported || !strings.Contains(r.stderr, `none called "tineuser"`) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("tineuser's tine diff on ua, the home uc having no tineuser: %v", r)
		}
	})
}

// startForeignNode starts node name on the fleet at url as a machine
// whose account database has root alone: in a mount namespace of its
// own, /etc/passwd and /etc/group bound over with root's lines.
func startForeignNode(t *testing.T, url, name string) *fleetNode {
	t.Helper()
	etc := t.TempDir()
	os.WriteFile(filepath.Join(etc, "passwd"), []byte("root:x:0:0:root:/root:/bin/sh\n"), 0o644)
	os.WriteFile(filepath.Join(etc, "group"), []byte("root:x:0:\n"), 0o644)
	e := newEnv(t)
	n := &fleetNode{name: name, e: e, log: filepath.Join(t.TempDir(), name+".log"), done: make(chan struct{})}
	logf, err := os.Create(n.log)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	sh := `mount --bind "$0/passwd" /etc/passwd && mount --bind "$0/group" /etc/group && exec "$@"`
	n.cmd = exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", sh, etc,
		tineBin, "serve", "--node", name, "--capacity", "0", "--heartbeat", "300ms", "--listen", freeAddr(t))
	n.cmd.Env = append(append(e.vars, "TINE_STORE_URL="+url), testFleetKey)
	n.cmd.Stdout, n.cmd.Stderr = logf, logf
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.cmd.Wait(); close(n.done) }()
	t.Cleanup(func() {
		n.cmd.Process.Kill()
		<-n.done
	})
	return n
}
