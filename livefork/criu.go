package livefork

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ErrCRIUUnavailable is wrapped by the error CRIUProbe returns when CRIU
// cannot be used on this host.
var ErrCRIUUnavailable = errors.New("criu unavailable")

// CRIUProbe runs `criu check` and returns nil when it passes. Otherwise the
// error wraps ErrCRIUUnavailable and carries the first meaningful line of
// CRIU's output as the reason, or "criu is not installed".
func CRIUProbe(ctx context.Context) error {
	path, err := exec.LookPath("criu")
	if err != nil {
		return fmt.Errorf("%w: criu is not installed", ErrCRIUUnavailable)
	}
	out, err := exec.CommandContext(ctx, path, "check").CombinedOutput()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%w: criu check: %w", ErrCRIUUnavailable, ctx.Err())
	}
	return fmt.Errorf("%w: %s", ErrCRIUUnavailable, criuReason(string(out), err))
}

// criuReason picks the lines of criu's output that explain a failure: the
// first error that is not about a helper's exit status (its cause), and the
// last error (what criu gave up on), without their source locations; else
// the first non-empty line, else the exit status.
func criuReason(out string, err error) string {
	var first string
	var errs []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if first == "" {
			first = line
		}
		if msg, ok := criuError(line); ok && !strings.HasPrefix(msg, "exited, status=") {
			errs = append(errs, msg)
		}
	}
	switch {
	case len(errs) == 1:
		return errs[0]
	case len(errs) > 1:
		return errs[0] + " (" + strings.TrimSuffix(errs[len(errs)-1], ".") + ")"
	case first != "":
		return first
	}
	return "criu check: " + err.Error()
}

// criuError strips "Error (file.c:123): " from an error line of criu.
func criuError(line string) (string, bool) {
	rest, ok := strings.CutPrefix(line, "Error")
	if !ok {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "(") {
		if i := strings.Index(rest, "):"); i >= 0 {
			rest = rest[i+2:]
		}
	}
	return strings.TrimSpace(rest), true
}

// capSysResource is CAP_SYS_RESOURCE's bit in /proc/PID/status's CapEff.
const capSysResource = 24

// CRIUDumps reports why criu, run by this process, cannot checkpoint
// process pid, or nil. criu reads the resource limits of every process it
// dumps, and the kernel lets a process read another user's only with
// CAP_SYS_RESOURCE, which some machines' root lacks (a VM's or
// container's capability bounding set leaves it out): there, criu dumps
// root's processes, not a normal user's services.
func CRIUDumps(pid int) error {
	if HasCapSysResource() {
		return nil
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCRIUUnavailable, err)
	}
	self := strconv.Itoa(os.Geteuid())
	for _, line := range strings.Split(string(b), "\n") {
		if ids, ok := strings.CutPrefix(line, "Uid:"); ok {
			for _, id := range strings.Fields(ids)[:3] {
				if id != self {
					return fmt.Errorf("%w: criu cannot checkpoint another user's processes here: this process lacks CAP_SYS_RESOURCE (its capability bounding set leaves it out), which reading their resource limits needs", ErrCRIUUnavailable)
				}
			}
			return nil
		}
	}
	return nil
}

// HasCapSysResource reports whether this process has CAP_SYS_RESOURCE.
func HasCapSysResource() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<capSysResource) != 0
		}
	}
	return false
}
