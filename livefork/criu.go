package livefork

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
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
