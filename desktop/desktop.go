package desktop

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Display is the X display of every run that has one: each run's X server
// listens only on the abstract socket @/tmp/.X11-unix/X0 of the run's own
// network namespace, so every run has its own :0.
const Display = ":0"

// VNCSocket is where, in a run's own /tmp, its X server serves VNC: a
// unix socket, the only one it listens on (no TCP port), which the daemon
// reaches through the X server's own root (DialVNC) and trusts only when
// the X server listens there.
const VNCSocket = "/tmp/.tine-vnc"

// Names of the display stack's services, which tine.toml's may not take.
const (
	ServiceX  = "tine-display"
	ServiceWM = "tine-wm"
)

// Programs the display stack and its tools run, and the Debian packages
// that have them.
var Programs = []Program{
	{"Xvnc", "tigervnc-standalone-server"},
	{"openbox", "openbox"},
	{"xdotool", "xdotool"},
	{"xwd", "x11-apps"},
}

// Program is a program the display needs and the Debian package that has it.
type Program struct {
	Name    string
	Package string
}

// Missing returns the programs of Programs not found on PATH.
func Missing() []Program {
	var out []Program
	for _, p := range Programs {
		if _, err := exec.LookPath(p.Name); err != nil {
			out = append(out, p)
		}
	}
	return out
}

// Command is a service of the display stack: a name, a shell command and
// a command that exits 0 once the service is ready.
type Command struct {
	Name         string
	Command      string
	ReadyCommand string
}

// wmReady is the file the window manager's startup command makes in the
// run's /tmp once it manages the screen.
const wmReady = "/tmp/.tine-wm-ready"

// Stack returns the display stack of a width×height display: the X server
// (its only X socket the abstract one, VNC on VNCSocket, mode 0600, no
// password: only the run's owner and root reach it) and the window
// manager, started once the server is up and ready once it manages the
// screen (openbox runs its --startup command then): a client that maps its
// window while the manager is still starting can be left unmapped and
// unmanaged, its window never shown. A stale lock file, VNC socket and
// ready mark in the run's /tmp (copied from the source's or the host's, or
// left by a stack killed) are removed first.
func Stack(width, height int) []Command {
	size := strconv.Itoa(width) + "x" + strconv.Itoa(height)
	x := strings.Join([]string{"rm -f /tmp/.X0-lock", VNCSocket + ";", "exec Xvnc", Display,
		"-geometry", size, "-depth 24",
		"-SecurityTypes None -rfbunixpath", VNCSocket,
		"-AlwaysShared -noreset -nolisten tcp -nolisten unix"}, " ")
	return []Command{
		{Name: ServiceX, Command: x, ReadyCommand: xReady()},
		{Name: ServiceWM, Command: "rm -f " + wmReady + "; exec openbox --sm-disable --startup 'touch " + wmReady + "'",
			ReadyCommand: "test -e " + wmReady},
	}
}

// xReady is the X server's ready check: its VNC socket is there and a
// client gets through to the display. Xvnc makes the VNC socket before it
// takes X clients, so the socket alone let the window manager start too
// early, fail to open the display, and leave the first windows unmapped.
func xReady() string {
	return "test -S " + VNCSocket + " && DISPLAY=" + Display + " " + program("xdotool") + " getdisplaygeometry >/dev/null 2>&1"
}

// Reserved reports whether a service name is one of the display stack's.
func Reserved(name string) bool { return name == ServiceX || name == ServiceWM }

// ScreenArgs is the command, run in the run, that dumps its display's root
// window in xwd's format on its standard output (see DecodeXWD).
func ScreenArgs() []string { return []string{program("xwd"), "-root", "-silent"} }

// MaxDump bounds the dump of a width×height screen: its pixels at 32 bits,
// a row's padding and the header with a colour map.
func MaxDump(width, height int) int { return width*height*4 + height*64 + 1<<20 }

// program is name's absolute path on this host's PATH, which the run sees
// at the same place, so that a run's own PATH (a fork's agent may write a
// directory early on it) cannot put another program in its place; name
// itself when it is not found here (the run's error then says so).
func program(name string) string {
	if p, err := exec.LookPath(name); err == nil && filepath.IsAbs(p) {
		return p
	}
	return name
}

// Input is one action on a display: a click at X, Y, text typed, or a key
// pressed (an X keysym name, "Return", or a chord, "ctrl+l").
type Input struct {
	Action string // click, move, type or key
	X, Y   int
	Text   string // for type: the text; for key: the key
}

// Args is the xdotool command that performs in on the run's display.
func (in Input) Args() ([]string, error) {
	switch in.Action {
	case "click", "move":
		if in.X < 0 || in.Y < 0 {
			return nil, fmt.Errorf("%s at %d,%d: coordinates must not be negative", in.Action, in.X, in.Y)
		}
		args := []string{program("xdotool"), "mousemove", "--sync", strconv.Itoa(in.X), strconv.Itoa(in.Y)}
		if in.Action == "click" {
			args = append(args, "click", "1")
		}
		return args, nil
	case "type":
		return []string{program("xdotool"), "type", "--delay", "12", "--", in.Text}, nil
	case "key":
		if strings.TrimSpace(in.Text) == "" {
			return nil, fmt.Errorf("key needs a key name (Return, ctrl+l)")
		}
		return []string{program("xdotool"), "key", "--", in.Text}, nil
	}
	return nil, fmt.Errorf("input %q: use click X Y, move X Y, type TEXT or key KEY", in.Action)
}
