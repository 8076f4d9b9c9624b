package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/internal/atomicfile"
)

// unitPath is where tine setup daemon installs the systemd unit.
var unitPath = "/etc/systemd/system/tine.service"

// daemonSetup is what tine setup daemon did, for --json.
type daemonSetup struct {
	Action  string `json:"action"` // install or remove
	Systemd bool   `json:"systemd"`
	Unit    string `json:"unit,omitempty"`
	Socket  string `json:"socket"`
	Running bool   `json:"running"`
	// Command starts (or stops) the daemon by hand where there is no
	// systemd.
	Command string `json:"command,omitempty"`
}

// daemonUnit is the systemd unit running bin as the system daemon on
// state directory home. KillMode=process: stopping or restarting the
// daemon leaves the runs' supervisors running (the next one finds them).
// No sandboxing options: a private mount namespace would make the daemon
// refuse every caller (docs/architecture.md, "Who is a person").
func daemonUnit(bin, home string) string {
	return `[Unit]
Description=tine daemon: forks of agent workspaces, for every local user
After=network.target

[Service]
Type=simple
Environment=TINE_HOME=` + home + `
ExecStart=` + bin + ` serve --system
Restart=on-failure
KillMode=process

[Install]
WantedBy=multi-user.target
`
}

// systemdRunning reports whether systemd is the init system (sd_booted).
func systemdRunning() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

// manualStart is the one command that starts the system daemon by hand.
func manualStart(bin, home string) string {
	return fmt.Sprintf("TINE_HOME=%s setsid %s serve --system >>/var/log/tine.log 2>&1 </dev/null &", home, bin)
}

func (a *app) setupDaemon(ctx context.Context, remove, asJSON bool) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("tine setup daemon installs a system service: run it as root (sudo tine setup daemon): %w", tine.ErrPrivilege)
	}
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	res := daemonSetup{Action: "install", Systemd: systemdRunning(), Socket: daemonSocket()}
	if remove {
		res.Action = "remove"
	}
	switch {
	case res.Systemd && remove:
		err = removeUnit(ctx)
	case res.Systemd:
		res.Unit = unitPath
		err = installUnit(ctx, daemonUnit(bin, a.home))
	case remove:
		err = stopManual(res.Socket)
	default:
		res.Command = manualStart(bin, a.home)
	}
	if err != nil {
		return err
	}
	res.Running = waitDaemon(res.Socket, !remove && res.Systemd)
	if asJSON {
		return a.printJSON(res)
	}
	a.printDaemonSetup(res)
	return nil
}

func (a *app) printDaemonSetup(r daemonSetup) {
	switch {
	case r.Action == "remove" && r.Running:
		fmt.Fprintf(a.stdout, "the daemon still answers on %s\n", r.Socket)
	case r.Action == "remove":
		fmt.Fprintf(a.stdout, "the system daemon is removed; nothing listens on %s\n", r.Socket)
	case r.Systemd && r.Running:
		fmt.Fprintf(a.stdout, "installed %s and started it: every local user reaches the daemon on %s\n", r.Unit, r.Socket)
	case r.Systemd:
		fmt.Fprintf(a.stdout, "installed %s, but the daemon does not answer on %s yet (journalctl -u tine)\n", r.Unit, r.Socket)
	case r.Running:
		fmt.Fprintf(a.stdout, "the daemon already answers on %s (systemd is not running here, so nothing is installed)\n", r.Socket)
	default:
		fmt.Fprintf(a.stdout, "systemd is not running here; start the daemon with:\n  %s\n", r.Command)
	}
}

// installUnit writes the unit (atomically) and enables and starts it.
func installUnit(ctx context.Context, unit string) error {
	if err := atomicfile.Write(unitPath, []byte(unit), 0o644); err != nil {
		return err
	}
	if err := systemctl(ctx, "daemon-reload"); err != nil {
		return err
	}
	return systemctl(ctx, "enable", "--now", filepath.Base(unitPath))
}

// removeUnit stops and disables the unit and removes it. The runs'
// supervisors keep running (KillMode=process).
func removeUnit(ctx context.Context) error {
	if _, err := os.Stat(unitPath); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := systemctl(ctx, "disable", "--now", filepath.Base(unitPath)); err != nil {
		return err
	}
	if err := os.Remove(unitPath); err != nil {
		return err
	}
	return systemctl(ctx, "daemon-reload")
}

func systemctl(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "systemctl", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("systemctl %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// stopManual stops a daemon started by hand: the process listening on the
// socket (found by SO_PEERCRED) gets SIGTERM.
func stopManual(sock string) error {
	c, err := net.DialTimeout("unix", sock, time.Second)
	if err != nil {
		return nil // nothing listens
	}
	defer c.Close()
	pid, err := peerPid(c)
	if err != nil {
		return fmt.Errorf("the daemon on %s: its process cannot be told: %v", sock, err)
	}
	return syscall.Kill(pid, syscall.SIGTERM)
}

// waitDaemon reports whether the daemon answers on sock, waiting up to 5 s
// for it to come up (up) or go away (!up) first.
func waitDaemon(sock string, up bool) bool {
	deadline := time.Now().Add(5 * time.Second)
	for {
		alive := daemonUp(sock)
		if alive == up || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(50 * time.Millisecond)
	}
}
