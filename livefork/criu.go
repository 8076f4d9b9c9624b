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

// criuReason picks the line of criu's output that explains a failure: the
// first error line, else the first non-empty line, else the exit status.
func criuReason(out string, err error) string {
	var first string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if strings.HasPrefix(line, "Error") {
			return line
		}
		if first == "" {
			first = line
		}
	}
	if first != "" {
		return first
	}
	return "criu check: " + err.Error()
}
