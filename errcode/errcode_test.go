package errcode

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/merge"
)

// The codes and statuses are an interface (docs/cli.md, API clients):
// pinned here, each both ways.
func TestTable(t *testing.T) {
	for _, c := range []struct {
		err    error
		code   string
		status int
	}{
		{merge.ErrConflict, "conflict", 409},
		{tine.ErrInvalid, "invalid", 400},
		{tine.ErrNotFound, "not_found", 404},
		{tine.ErrExists, "exists", 409},
		{tine.ErrState, "state", 409},
		{tine.ErrUnmerged, "unmerged", 409},
		{tine.ErrPrivilege, "privilege", 403},
		{tine.ErrUnsupported, "unsupported", 501},
		{tine.ErrBusy, "busy", 423},
		{context.Canceled, "interrupted", 499},
	} {
		k := Of(fmt.Errorf("run app/source-2: %w", c.err))
		if k.Err != c.err || k.Code != c.code || k.Status != c.status {
			t.Errorf("Of(%v) = %+v, want %s %d", c.err, k, c.code, c.status)
		}
		if s := Sentinel(c.code); s != c.err {
			t.Errorf("Sentinel(%q) = %v, want %v", c.code, s, c.err)
		}
	}
	if n := len(Kinds()); n != 10 {
		t.Errorf("%d kinds, want the 10 above", n)
	}
	// A fleet node's refusal of a user it has no account for is a
	// privilege error to the client (exit 7); it exited 1.
	if s := Sentinel(CodeUnknownUser); s != tine.ErrPrivilege || Exit(fmt.Errorf("node uc: %w", s)) != ExitUnsupported {
		t.Errorf("Sentinel(%q) = %v, want tine.ErrPrivilege (exit %d)", CodeUnknownUser, s, ExitUnsupported)
	}
	// A workspace no node is the home of, asked of a node without its
	// files: the wrong state for that node (exit 5), not a failure (1).
	if s := Sentinel(CodeNoHome); s != tine.ErrState || Exit(fmt.Errorf("node hb: %w", s)) != ExitState {
		t.Errorf("Sentinel(%q) = %v, want tine.ErrState (exit %d)", CodeNoHome, s, ExitState)
	}
}

func TestUnknown(t *testing.T) {
	for _, err := range []error{errors.New("disk on fire"), fmt.Errorf("open: %w", tine.ErrStore), nil} {
		if k := Of(err); k != Unknown || k.Code != "error" || k.Status != 500 {
			t.Errorf("Of(%v) = %+v, want Unknown (error, 500)", err, k)
		}
	}
	for _, code := range []string{"error", "", "nonsense"} {
		if s := Sentinel(code); s != nil {
			t.Errorf("Sentinel(%q) = %v, want nil", code, s)
		}
	}
}

// An error wrapping two sentinels is the kind of the first row: a
// conflict before anything else, privilege before unsupported.
func TestFirstRowWins(t *testing.T) {
	if k := Of(fmt.Errorf("%w: %w", tine.ErrState, merge.ErrConflict)); k.Code != "conflict" {
		t.Errorf("state+conflict = %s, want conflict", k.Code)
	}
	if k := Of(fmt.Errorf("%w: %w", tine.ErrUnsupported, tine.ErrPrivilege)); k.Code != "privilege" {
		t.Errorf("unsupported+privilege = %s, want privilege", k.Code)
	}
}

// The exit statuses are an interface too (docs/cli.md, scripts): every
// binary of tine's exits with these.
func TestExit(t *testing.T) {
	if got := Exit(nil); got != 0 {
		t.Errorf("Exit(nil) = %d, want 0", got)
	}
	for err, code := range map[error]int{
		errors.New("disk"): 1, tine.ErrInvalid: 2, tine.ErrNotFound: 3, tine.ErrExists: 4,
		tine.ErrState: 5, tine.ErrUnmerged: 6, tine.ErrUnsupported: 7, tine.ErrPrivilege: 7,
		tine.ErrBusy: 8, merge.ErrConflict: 9, tine.ErrStore: 10, context.Canceled: 130,
		fmt.Errorf("%w: %w", tine.ErrInvalid, merge.ErrConflict): 9,
	} {
		if got := Exit(fmt.Errorf("x: %w", err)); got != code {
			t.Errorf("Exit(%v) = %d, want %d", err, got, code)
		}
	}
}
