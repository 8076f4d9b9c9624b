package main

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/errcode"
	"github.com/tinehq/tine/merge"
)

// The exit statuses docs/cli.md lists, one per sentinel, and the same for
// an error that came back from the daemon as its API code.
func TestExitCode(t *testing.T) {
	want := map[error]int{
		merge.ErrConflict: 9, tine.ErrInvalid: 2, tine.ErrNotFound: 3, tine.ErrExists: 4,
		tine.ErrState: 5, tine.ErrUnmerged: 6, tine.ErrUnsupported: 7, tine.ErrPrivilege: 7,
		tine.ErrBusy: 8, tine.ErrStore: 10, context.Canceled: 130,
	}
	for sentinel, code := range want {
		if got := exitCode(fmt.Errorf("run x: %w", sentinel)); got != code {
			t.Errorf("exitCode(%v) = %d, want %d", sentinel, got, code)
		}
	}
	for _, k := range errcode.Kinds() {
		if got := exitCode(errcode.Sentinel(k.Code)); got != want[k.Err] {
			t.Errorf("exit status of API code %s = %d, want %d", k.Code, got, want[k.Err])
		}
	}
	if got := exitCode(fmt.Errorf("%w: %w", tine.ErrInvalid, merge.ErrConflict)); got != exitConflict {
		t.Errorf("conflict+invalid = %d, want %d", got, exitConflict)
	}
	for err, code := range map[error]int{nil: 0, errors.New("disk"): 1, exitErr{code: 130}: 130, fmt.Errorf("x: %w", exitErr{code: 42, err: tine.ErrState}): 42} {
		if got := exitCode(err); got != code {
			t.Errorf("exitCode(%v) = %d, want %d", err, got, code)
		}
	}
}
