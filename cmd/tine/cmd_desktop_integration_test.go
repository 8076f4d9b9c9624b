//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tinehq/tine/desktop"
	"github.com/tinehq/tine/forkrun"
	"github.com/tinehq/tine/internal/browsertest"
	"github.com/tinehq/tine/internal/testkit"
)

// desktopToml gives every run a 640×480 display, a web server whose page's
// colour is the file colour (polled), and Chromium showing it on the
// display. A click on the page turns it magenta, a key it then types cyan.
const desktopToml = `[display]
enabled = true
size = "640x480"

[[service]]
name = "web"
command = "exec /usr/bin/python3 -m http.server 8000 --bind 127.0.0.1"
ready = { port = 8000, timeout = "20s" }

[[service]]
name = "browser"
display = true
command = "exec chromium --no-sandbox --user-data-dir=/tmp/chromium --no-first-run --disable-gpu --disable-dev-shm-usage --kiosk --window-position=0,0 --window-size=640,480 http://127.0.0.1:8000/page.html"
`

const desktopPage = `<html><body style="margin:0;height:100vh"><script>
let fixed = "";
function paint(c) { document.body.style.background = "#" + c.trim(); }
function poll() { if (!fixed) fetch("colour", {cache: "no-store"}).then(r => r.text()).then(c => { if (!fixed) paint(c); }); }
document.addEventListener("click", () => { fixed = "ff00ff"; paint(fixed); });
document.addEventListener("keydown", e => { if (fixed && e.key === "c") { fixed = "00ffff"; paint(fixed); } });
poll(); setInterval(poll, 250);
</script></body></html>
`

// requireDesktop skips unless the display's programs, Chromium and Python
// are installed (.ci/run installs them).
func requireDesktop(t *testing.T) {
	t.Helper()
	testkit.RequireRoot(t, rootWhy)
	for _, p := range desktop.Missing() {
		t.Skipf("requires %s (Debian's %s; .ci/run installs it)", p.Name, p.Package)
	}
	for _, p := range []string{"chromium", "python3"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("requires %s (.ci/run installs it)", p)
		}
	}
}

func desktopWorkspace(t *testing.T) *env {
	t.Helper()
	requireDesktop(t)
	e := newEnv(t)
	dir := e.workspaceDir("desk")
	writeTestFiles(t, dir, map[string]string{"tine.toml": desktopToml, "page.html": desktopPage, "colour": "ff0000\n"})
	e.ok("init", dir)
	return e
}

// centre decodes a PNG and returns a pixel of its middle, off the centre
// where the pointer may be.
func centre(t *testing.T, b []byte) color.NRGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	r := img.Bounds()
	return color.NRGBAModel.Convert(img.At(r.Min.X+r.Dx()/3, r.Min.Y+r.Dy()/3)).(color.NRGBA)
}

func near(c color.NRGBA, hex string) bool {
	var r, g, b uint8
	fmt.Sscanf(hex, "%02x%02x%02x", &r, &g, &b)
	d := func(x, y uint8) bool { return max(x, y)-min(x, y) < 12 } // not x-y, which wraps: 0-255 is 1
	return d(c.R, r) && d(c.G, g) && d(c.B, b)
}

// screenOf takes run's screen with tine screen -o.
func (e *env) screenOf(run string) []byte {
	e.t.Helper()
	out := filepath.Join(e.t.TempDir(), run+".png")
	e.ok("screen", run, "-o", out)
	b, err := os.ReadFile(out)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// waitColour waits until take's centre pixel is hex.
func waitColour(t *testing.T, what, hex string, take func() []byte) {
	t.Helper()
	var last color.NRGBA
	var shot []byte
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		if shot = take(); near(centre(t, shot), hex) {
			return
		}
		last = centre(t, shot)
	}
	if dir := os.Getenv("TINE_ARTIFACTS"); dir != "" { // what it showed, to look at
		os.WriteFile(filepath.Join(dir, strings.ReplaceAll(what, " ", "-")+".png"), shot, 0o644)
	}
	t.Fatalf("%s shows %v, want #%s", what, last, hex)
}

// Four runs' displays each show their own app: a browser on the run's own
// dev server, whose colour comes from the run's own file; an MCP client's
// click and key reach one fork's display only, and a fork's MCP server
// reaches no other fork's display.
func TestDesktop_ForksShowTheirOwnScreens(t *testing.T) {
	e := desktopWorkspace(t)
	out := e.ok("start", "source")
	for _, s := range []string{desktop.ServiceX, desktop.ServiceWM, "browser", "web"} {
		if !strings.Contains(out, s) {
			t.Fatalf("tine start does not show %s:\n%s", s, out)
		}
	}
	waitColour(t, "the source", "ff0000", func() []byte { return e.screenOf("source") })
	if st := e.ok("stats", "source"); !regexp.MustCompile(`(?m)^display +[0-9.]+ MiB`).MatchString(st) {
		t.Errorf("tine stats does not show the display's memory:\n%s", st)
	}

	fork := e.ok("fork", "source", "-n", "3", "--wait")
	if n := strings.Count(fork, "display restarted from the fork's files"); n != 3 {
		t.Fatalf("tine fork tells of %d displays restarted, want 3:\n%s", n, fork)
	}
	group := regexp.MustCompile(`into group (\S+):`).FindStringSubmatch(fork)
	if group == nil {
		t.Fatalf("tine fork names no group:\n%s", fork)
	}
	want := map[string]string{"source": "ff0000", "source-1": "00ff00", "source-2": "0000ff", "source-3": "ffff00"}
	for run, hex := range want {
		if run != "source" {
			writeTestFiles(t, e.path(run), map[string]string{"colour": hex + "\n"})
		}
	}
	for run, hex := range want {
		waitColour(t, run, hex, func() []byte { return e.screenOf(run) })
	}
	// Each run's X server is its own: one abstract X socket listening in
	// each run's network, none in its /tmp, and DISPLAY set in its
	// processes.
	for run := range want {
		got := e.execSh(run, `echo "$DISPLAY"; test ! -e /tmp/.X11-unix/X0; awk '$4 == "00010000" && $8 == "@/tmp/.X11-unix/X0"' /proc/net/unix | wc -l`)
		if got != ":0\n1\n" {
			t.Errorf("%s: DISPLAY and X sockets: %q, want :0 and one", run, got)
		}
	}

	d := e.serve("--listen", "127.0.0.1:0")
	defer d.stop(t)
	addr := d.tcpAddr(t)
	cs := e.mcpSession("mcp")
	mcpCall(t, cs, false, "computer", map[string]any{"run": "source-2", "action": "left_click", "coordinate": []int{320, 240}})
	waitColour(t, "source-2 after the click", "ff00ff", func() []byte { return mcpScreenshot(t, cs, false, "source-2") })
	mcpCall(t, cs, false, "computer", map[string]any{"run": "source-2", "action": "type", "text": "c"})
	want["source-2"] = "00ffff"
	for run, hex := range want {
		waitColour(t, run+" after the MCP client drove source-2", hex, func() []byte { return mcpScreenshot(t, cs, false, run) })
	}

	e.tilesShow(addr, group[1], want)

	inside := e.mcpSession("exec", "source-1", "--", "tine", "mcp")
	if c := centre(t, mcpScreenshot(t, inside, false, "")); !near(c, "00ff00") {
		t.Errorf("source-1 sees its own display as %v", c)
	}
	mcpScreenshot(t, inside, true, "source-2")
	mcpCall(t, inside, true, "computer", map[string]any{"run": "source-3", "action": "left_click", "coordinate": []int{1, 1}})
}

// mcpScreenshot calls screenshot for run ("": the server's own) and
// returns its PNG; with isErr, it must be refused.
func mcpScreenshot(t *testing.T, cs *sdk.ClientSession, isErr bool, run string) []byte {
	t.Helper()
	args := map[string]any{}
	if run != "" {
		args["run"] = run
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "screenshot", Arguments: args})
	if err != nil {
		t.Fatalf("screenshot %s: %v", run, err)
	}
	if res.IsError != isErr {
		t.Fatalf("screenshot %s: isError %v: %v", run, res.IsError, res.Content)
	}
	if isErr {
		return nil
	}
	for _, c := range res.Content {
		if img, ok := c.(*sdk.ImageContent); ok && img.MIMEType == "image/png" {
			if _, _, err := image.Decode(bytes.NewReader(img.Data)); err != nil {
				t.Fatalf("screenshot %s: %v", run, err)
			}
			return img.Data
		}
	}
	t.Fatalf("screenshot %s: no PNG in %v", run, res.Content)
	return nil
}

// A run without a display says so, with exit status 5; bad input to tine
// input is a usage error.
func TestDesktop_NoDisplay(t *testing.T) {
	testkit.RequireRoot(t, rootWhy)
	e := newEnv(t)
	dir := e.workspaceDir("plain")
	writeTestFiles(t, dir, map[string]string{"a.txt": "a\n"})
	e.ok("init", dir)
	e.ok("start", "source")
	r := e.tine("screen", "source", "-o", filepath.Join(t.TempDir(), "x.png"))
	if r.code != exitState || !strings.Contains(r.stderr, "has no display up") {
		t.Errorf("tine screen without a display: %v", r)
	}
	for _, args := range [][]string{{"input", "source", "click", "1"}, {"input", "source", "wave", "x"}, {"input", "source", "click", "-1", "2"}} {
		if r := e.tine(args...); r.code != exitUsage {
			t.Errorf("%v: %v", args, r)
		}
	}
}

// tine doctor names the display's programs that are missing and the
// Debian packages that have them, and nothing when they are installed.
func TestDesktop_DoctorNamesMissingPrograms(t *testing.T) {
	requireDesktop(t)
	e := newEnv(t)
	if out := e.ok("doctor"); strings.Contains(out, "display programs missing") {
		t.Errorf("tine doctor with the display's programs installed:\n%s", out)
	}
	r := e.run(call{vars: []string{"PATH=" + t.TempDir()}}, "doctor")
	for _, want := range []string{"display programs missing: 4", "Xvnc (Debian package tigervnc-standalone-server)",
		"xdotool (Debian package xdotool)", "apt-get install tigervnc-standalone-server openbox xdotool x11-apps"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("tine doctor without them does not say %q: %v", want, r)
		}
	}
}

// rfbVersion is what a VNC server says first (RFB 3.8).
const rfbVersion = "RFB 003.008\n"

// wsHandshake opens a WebSocket at path of the daemon on sock as the
// user p (nil: this process, root) with Python's sockets, and returns the
// answer's status line and, for 101, the first message's text.
func wsHandshake(t *testing.T, p *localUser, sock, path string) (status, first string) {
	t.Helper()
	script := `import base64, os, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(20); s.connect(sys.argv[1])
key = base64.b64encode(os.urandom(16)).decode()
s.sendall(("GET %s HTTP/1.1\r\nHost: tine\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: binary\r\n\r\n" % (sys.argv[2], key)).encode())
buf = b""
while b"\r\n\r\n" not in buf:
    d = s.recv(4096)
    if not d: break
    buf += d
head, _, rest = buf.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode())
if b" 101 " in head.split(b"\r\n")[0]:
    while len(rest) < 2 or len(rest) < 2 + (rest[1] & 0x7f):
        rest += s.recv(4096)
    sys.stdout.write(rest[2:2 + (rest[1] & 0x7f)].decode())
`
	cmd := exec.Command("/usr/bin/python3", "-c", script, sock, path)
	if p != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("WebSocket to %s: %v: %s", path, err, out)
	}
	status, first, _ = strings.Cut(string(out), "\n")
	return status, first
}

// The daemon bridges WebSocket to a run's VNC port: the group page shows
// a tile per fork with a display, whose WebSocket answers with VNC's
// handshake; noVNC and its licence are served; a normal user opens their
// own run's display and not root's.
func TestDesktop_VNCBridge(t *testing.T) {
	requireDesktop(t)
	e, ann, sock, dir := userWorkspace(t)
	writeTestFiles(t, dir, map[string]string{"tine.toml": "[display]\nenabled = true\nsize = \"320x240\"\n"})
	os.Chown(filepath.Join(dir, "tine.toml"), ann.uid, ann.gid)
	var mine struct {
		Run struct{ ID string } `json:"run"`
	}
	ann.okJSON(dir, &mine, "init", "--json", ".")
	ann.ok(dir, "start", "source")

	rootDir := e.workspaceDir("rootdesk")
	writeTestFiles(t, rootDir, map[string]string{"tine.toml": "[display]\nenabled = true\nsize = \"320x240\"\n"})
	e.ok("init", rootDir)
	e.ok("start", "rootdesk/source")
	var fork struct {
		Group struct{ ID string } `json:"group"`
		Forks []struct{ ID, Name string }
	}
	e.okJSON(&fork, "fork", "rootdesk/source", "-n", "2", "--wait", "--json")

	page := wsGet(t, sock, "/ui/groups/"+fork.Group.ID)
	for _, f := range fork.Forks {
		if !strings.Contains(page, `data-vnc="/ui/runs/`+f.ID+`/vnc"`) {
			t.Fatalf("the group page has no screen tile for %s:\n%s", f.Name, page)
		}
		if status, first := wsHandshake(t, nil, sock, "/ui/runs/"+f.ID+"/vnc"); !strings.Contains(status, " 101 ") || first != rfbVersion {
			t.Errorf("the tile's WebSocket for %s: %q, first message %q", f.Name, status, first)
		}
	}
	for _, asset := range []string{"/ui/assets/tiles.js", "/ui/assets/novnc/core/rfb.js", "/ui/assets/novnc/LICENSE.txt", "/ui/assets/novnc/vendor/pako/LICENSE"} {
		if body := wsGet(t, sock, asset); len(body) < 100 {
			t.Errorf("%s: %q", asset, body)
		}
	}

	if status, first := wsHandshake(t, ann, sock, "/v1/runs/"+mine.Run.ID+"/vnc"); !strings.Contains(status, " 101 ") || first != rfbVersion {
		t.Errorf("tineuser's own display: %q, first message %q", status, first)
	}
	for _, f := range fork.Forks {
		for _, path := range []string{"/v1/runs/" + f.ID + "/vnc", "/ui/runs/" + f.ID + "/vnc"} {
			if status, _ := wsHandshake(t, ann, sock, path); strings.Contains(status, " 101 ") || strings.Contains(status, " 200 ") {
				t.Errorf("tineuser opened root's display at %s: %q", path, status)
			}
		}
	}
}

// wsGet GETs path from the daemon on sock as root.
func wsGet(t *testing.T, sock, path string) string {
	t.Helper()
	out, err := exec.Command("/usr/bin/python3", "-c", `import http.client, socket, sys
class C(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect(sys.argv[1])
c = C("tine"); c.request("GET", sys.argv[2]); r = c.getresponse()
sys.stdout.buffer.write(r.read())`, sock, path).Output()
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return string(out)
}

// tilesShow opens the group page of the dashboard at addr in headless
// Chromium and waits until each fork's tile (noVNC over the daemon's
// WebSocket) shows the colour of want.
func (e *env) tilesShow(addr, group string, want map[string]string) {
	e.t.Helper()
	ctx := browsertest.New(e.t, 90*time.Second)
	token, err := os.ReadFile(filepath.Join(e.home, "token"))
	if err != nil {
		e.t.Fatal(err)
	}
	url := "http://" + addr + "/ui/groups/" + group + "?token=" + strings.TrimSpace(string(token))
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`#screens`))); err != nil {
		e.t.Fatalf("the group page: %v", err)
	}
	for run, hex := range want {
		if run == "source" {
			continue // the group's tiles are its forks'
		}
		tile := `.screen-tile[data-run="` + run + `"]`
		if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(tile+`[data-state="connected"] canvas`))); err != nil {
			e.t.Fatalf("the tile of %s does not connect: %v", run, err)
		}
		waitColour(e.t, "the dashboard's tile of "+run, hex, func() []byte {
			b, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS(tile+` canvas`), chromedp.NodeVisible))
			if err != nil {
				e.t.Fatalf("the tile of %s: %v", run, err)
			}
			return b
		})
	}
}

// A run started without a display gets none by tine start --display while
// it runs (its supervisor has neither the network nor the /tmp of its own
// that keep a display the run's): it is refused, saying to stop it first,
// and nothing is left marked. Before, the X server was started in the
// host's network, where every such run shared one :0.
func TestDesktop_DisplayNeedsARestart(t *testing.T) {
	requireDesktop(t)
	e := newEnv(t)
	dir := e.workspaceDir("late")
	writeTestFiles(t, dir, map[string]string{"a.txt": "a\n"})
	e.ok("init", dir)
	e.ok("start", "source")
	r := e.tine("start", "source", "--display")
	if r.code != exitState || !strings.Contains(r.stderr, "tine stop") {
		t.Fatalf("tine start --display on a run without one: %v", r)
	}
	if out := e.ok("ps", "source"); strings.Contains(out, desktop.ServiceX) {
		t.Fatalf("a display was started anyway:\n%s", out)
	}
	e.ok("stop", "source")
	e.ok("start", "source") // not marked by the refusal: still none
	if out := e.ok("ps", "source"); strings.Contains(out, desktop.ServiceX) {
		t.Fatalf("the refused --display was kept:\n%s", out)
	}
	e.ok("stop", "source")
	e.ok("start", "source", "--display")
	e.screenOf("source")
	// A display given by --display, not tine.toml, goes to forks, and to
	// their forks.
	for _, parent := range []string{"source", "source-1"} {
		if out := e.ok("fork", parent, "--wait"); !strings.Contains(out, "display restarted from the fork's files") {
			t.Errorf("a fork of %s, started with --display, has no display:\n%s", parent, out)
		}
	}
	e.screenOf("source-1-1")
}

// A fork-run keeps each fork's final screen as evidence when the fork has
// a display: in the report (screen), in the group's directory, and on the
// dashboard's fork-run card.
func TestDesktop_ForkRunKeepsTheFinalScreen(t *testing.T) {
	e := desktopWorkspace(t)
	e.ok("start", "source")
	waitColour(t, "the source", "ff0000", func() []byte { return e.screenOf("source") })
	rep, r := e.forkRunJSON("source", "--prompt", "paint it green", "-n", "1", "--agent", "command",
		"--agent-cmd", "echo 00ff00 > colour; sleep 8", "--test", "true", "--merge-mode", "manual")
	if r.code != 0 || len(rep.Forks) != 1 {
		t.Fatalf("%v", r)
	}
	f := rep.Forks[0]
	if f.Screen != forkrun.ScreenFile(f.Run) {
		t.Fatalf("the report keeps no final screen of %s: %q", f.Name, f.Screen)
	}
	b, err := os.ReadFile(filepath.Join(e.home, "workspaces", rep.Workspace, "groups", rep.Group, f.Screen))
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != 640 || img.Bounds().Dy() != 480 {
		t.Fatalf("the final screen: %v %v", err, img.Bounds())
	}
	if c := centre(t, b); !near(c, "00ff00") {
		t.Errorf("the final screen shows %v, want the agent's green", c)
	}
	d := e.serve()
	defer d.stop(t)
	page := wsGet(t, filepath.Join(e.home, "ctl", "tine.sock"), "/ui/groups/"+rep.Group)
	if !strings.Contains(page, `src="/ui/groups/`+rep.Group+`/screen/`+f.Run+`"`) {
		t.Errorf("the fork-run card shows no final screen:\n%s", page)
	}
	if got := wsGet(t, filepath.Join(e.home, "ctl", "tine.sock"), "/ui/groups/"+rep.Group+"/screen/"+f.Run); got != string(b) {
		t.Errorf("the dashboard serves %d bytes for the final screen, want the %d kept", len(got), len(b))
	}
}

// liveDisplayToml gives every run a small display with two xlogo windows:
// "logo" forked as --live says, "again" always restarted (live =
// "restart"), each at its own place on the screen.
const liveDisplayToml = `[display]
enabled = true
size = "320x240"

[[service]]
name = "logo"
display = true
command = "exec xlogo -bg '#00ff00' -fg '#0000ff' -geometry 100x100+0+0"

[[service]]
name = "again"
display = true
live = "restart"
command = "exec xlogo -bg '#ffff00' -geometry 100x100+200+0"
`

// pixel returns the pixel at x, y of a PNG.
func pixel(t *testing.T, b []byte, x, y int) color.NRGBA {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	return color.NRGBAModel.Convert(img.At(x, y)).(color.NRGBA)
}

// A display forked live by CRIU shows, right after tine fork, what the
// source's X server holds only in memory: the root window's colour set by
// xsetroot, which no file keeps (a restarted display is black there), and
// the live-forked client's window; a client CRIU is not to carry (live =
// "restart") is restarted beside it, and tine fork says which each was,
// in text and JSON. The daemon's VNC bridge reaches the restored X server
// (its peer check passes), and --live rerun restarts the display, saying
// so. Before, a display was always restarted: the fork's screen was black.
func TestDesktop_ForkedLiveShowsTheSameScreen(t *testing.T) {
	requireDesktop(t)
	requireCRIU(t)
	e := newEnv(t)
	dir := e.workspaceDir("livedesk")
	writeTestFiles(t, dir, map[string]string{"tine.toml": liveDisplayToml})
	e.ok("init", dir)
	e.ok("start", "source")
	waitColour(t, "the source's logo", "00ff00", func() []byte { return bytesAt(t, e.screenOf("source"), 10, 50) })
	e.ok("exec", "source", "--", "xsetroot", "-solid", "#ff00ff")
	if c := pixel(t, e.screenOf("source"), 160, 200); !near(c, "ff00ff") {
		t.Fatalf("the source's root window is %v after xsetroot", c)
	}

	out := e.ok("fork", "source", "--live", "criu", "--wait")
	for _, want := range []string{"display forked live by CRIU", "tine-display: forked live by CRIU", "tine-wm: forked live by CRIU",
		"logo: forked live by CRIU", `again: restarted: live = "restart" in tine.toml`} {
		if !strings.Contains(out, want) {
			t.Fatalf("tine fork --live criu does not say %q:\n%s", want, out)
		}
	}
	shot := e.screenOf("source-1") // at once: no wait for anything to draw
	for _, p := range []struct {
		what string
		x, y int
		hex  string
	}{{"the root window", 160, 200, "ff00ff"}, {"the live-forked logo", 10, 50, "00ff00"}} {
		if c := pixel(t, shot, p.x, p.y); !near(c, p.hex) {
			t.Errorf("source-1 right after the fork: %s is %v, want #%s", p.what, c, p.hex)
		}
	}
	waitColour(t, "source-1's restarted logo", "ffff00", func() []byte { return bytesAt(t, e.screenOf("source-1"), 210, 50) })

	d := e.serve()
	defer d.stop(t)
	var ls []struct{ ID, Name string }
	e.okJSON(&ls, "ls", "--json")
	for _, r := range ls {
		if r.Name == "source-1" {
			if status, first := wsHandshake(t, nil, filepath.Join(e.home, "ctl", "tine.sock"), "/ui/runs/"+r.ID+"/vnc"); !strings.Contains(status, " 101 ") || first != rfbVersion {
				t.Errorf("the VNC bridge to the restored X server: %q, first message %q", status, first)
			}
		}
	}

	var rep struct {
		Live []struct {
			Display string
			Choices []struct{ Service, Engine, Why string }
		}
	}
	e.okJSON(&rep, "fork", "source", "--live", "rerun", "--wait", "--json")
	if len(rep.Live) != 1 || rep.Live[0].Display != "rerun" {
		t.Fatalf("tine fork --live rerun --json: %+v", rep)
	}
	if c := pixel(t, e.screenOf("source-2"), 160, 200); near(c, "ff00ff") {
		t.Errorf("a restarted display shows the source's root colour %v", c)
	}
}

// bytesAt is a 1×1 PNG of the pixel at x, y of b, for waitColour.
func bytesAt(t *testing.T, b []byte, x, y int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, pixel(t, b, x, y))
	var out bytes.Buffer
	png.Encode(&out, img)
	return out.Bytes()
}
