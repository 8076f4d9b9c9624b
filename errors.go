package tine

import "errors"

// Sentinel errors shared by every package. Test for them with errors.Is; the
// CLI maps each to its exit status in one place.
var (
	// ErrNotFound means a workspace, run, version or group does not exist.
	ErrNotFound = errors.New("not found")
	// ErrExists means a name or path is already taken.
	ErrExists = errors.New("already exists")
	// ErrInvalid means the request itself is malformed (bad path, bad flag value).
	ErrInvalid = errors.New("invalid argument")
	// ErrState means the run is in a state that does not allow the operation.
	ErrState = errors.New("wrong state")
	// ErrUnmerged means the operation would lose work that was never merged or promoted.
	ErrUnmerged = errors.New("unmerged changes")
	// ErrPrivilege means the operation needs privileges the caller lacks.
	ErrPrivilege = errors.New("insufficient privileges")
	// ErrUnsupported means the backend or machine cannot do what was asked.
	ErrUnsupported = errors.New("not supported")
	// ErrBusy means another tine process holds the workspace lock for too long.
	ErrBusy = errors.New("busy")
	// ErrStore means the state directory's store cannot be trusted: it is
	// missing, empty or damaged while workspaces exist beside it, or it is
	// not the store those workspaces were made with. Every command refuses
	// rather than start a fresh store over the user's files; tine doctor
	// says what it found and how to recover.
	ErrStore = errors.New("store unusable")
)
