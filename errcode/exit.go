package errcode

import (
	"context"
	"errors"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/merge"
)

// Exit statuses of tine's commands, those of the tine binary and of
// tine-controller alike; docs/cli.md lists them for users.
const (
	ExitOK          = 0
	ExitError       = 1  // anything not listed below
	ExitUsage       = 2  // bad command line or argument
	ExitNotFound    = 3  // no such workspace, run, version or group
	ExitExists      = 4  // name or path taken, nested workspace
	ExitState       = 5  // the run is in the wrong state
	ExitUnmerged    = 6  // refused: would lose work never merged or promoted
	ExitUnsupported = 7  // the backend or privileges needed are missing
	ExitBusy        = 8  // another tine command holds the workspace
	ExitConflict    = 9  // a merge plan has conflicts; nothing was written
	ExitStore       = 10 // the store is missing, damaged or not the workspaces' own; see tine doctor
	ExitFiled       = 11 // asked from inside a run: filed for a person's approval, nothing done yet

	ExitInterrupted = 130 // interrupted (SIGINT/SIGTERM): stopped at a safe point, a line says what became of the work
)

// exits maps each sentinel to its exit status; the first row an error
// wraps wins, as in kinds.
var exits = []struct {
	err  error
	code int
}{
	{merge.ErrConflict, ExitConflict},
	{tine.ErrInvalid, ExitUsage},
	{tine.ErrNotFound, ExitNotFound},
	{tine.ErrExists, ExitExists},
	{tine.ErrState, ExitState},
	{tine.ErrUnmerged, ExitUnmerged},
	{tine.ErrUnsupported, ExitUnsupported},
	{tine.ErrPrivilege, ExitUnsupported},
	{tine.ErrBusy, ExitBusy},
	{tine.ErrStore, ExitStore},
	{context.Canceled, ExitInterrupted},
}

// Exit returns the exit status of a command that ended with err: ExitOK
// for nil, the status of the first sentinel err wraps, else ExitError.
// (A command that chooses its own status, as tine exec passes its
// command's through, does so before asking here.)
func Exit(err error) int {
	if err == nil {
		return ExitOK
	}
	for _, s := range exits {
		if errors.Is(err, s.err) {
			return s.code
		}
	}
	return ExitError
}
