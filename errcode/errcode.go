// Package errcode is the one table of tine's kinds of failure for its
// transports: each sentinel error (tine.ErrNotFound, merge.ErrConflict, …)
// with the stable code name and the HTTP status it travels as. The API
// (httpapi) and the dashboard answer with it; the API's client
// (httpapi.Client) turns a code back into its sentinel, so an error that
// crossed the socket is the same error, with the same exit status, as the
// engine's own (as containerd's errgrpc ToGRPC and ToNative). The exit
// statuses of tine's binaries (tine, tine-controller) are a second table
// here (Exit), so that both map the same sentinels the same way.
package errcode

import (
	"context"
	"errors"
	"net/http"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/merge"
)

// Kind is one row of the table.
type Kind struct {
	Err    error  // the sentinel, tested with errors.Is
	Code   string // its name in an API answer's "code"
	Status int    // its HTTP status
}

// Unknown is the kind of an error no row matches (and of a code no row
// names): a plain failure.
var Unknown = Kind{Code: "error", Status: http.StatusInternalServerError}

// kinds is the table. The first row an error wraps wins (an error may wrap
// two sentinels). tine.ErrStore is not in it: to a client an unusable
// store is the daemon's failure, answered as Unknown.
var kinds = []Kind{
	{merge.ErrConflict, "conflict", http.StatusConflict},
	{tine.ErrInvalid, "invalid", http.StatusBadRequest},
	{tine.ErrNotFound, "not_found", http.StatusNotFound},
	{tine.ErrExists, "exists", http.StatusConflict},
	{tine.ErrState, "state", http.StatusConflict},
	{tine.ErrUnmerged, "unmerged", http.StatusConflict},
	{tine.ErrPrivilege, "privilege", http.StatusForbidden},
	{tine.ErrUnsupported, "unsupported", http.StatusNotImplemented},
	{tine.ErrBusy, "busy", http.StatusLocked},
	// Work its client interrupted (httpapi.Interruptible) and that stopped
	// at a safe point, rolled back. 499 as in nginx: the client's doing.
	{context.Canceled, "interrupted", 499},
}

// Of returns the kind of err: the first row whose sentinel err wraps,
// else Unknown.
func Of(err error) Kind {
	for _, k := range kinds {
		if errors.Is(err, k.Err) {
			return k
		}
	}
	return Unknown
}

// CodeUnknownUser is the code of the 403 a fleet node answers for a
// normal user forwarded from another node whom it has no account for: a
// privilege error (see aliases).
const CodeUnknownUser = "unknown_user"

// CodeNoHome is the code of the 409 a fleet node answers about a
// workspace no node is recorded as its home and whose files are not on
// that node: a state error (see aliases).
const CodeNoHome = "no_home"

// aliases are codes that say more than their kind's own code, each with
// the sentinel a client turns it into (and so its exit status).
var aliases = map[string]error{
	CodeUnknownUser: tine.ErrPrivilege,
	CodeNoHome:      tine.ErrState,
}

// Sentinel returns the sentinel a code names, or nil for an unknown code.
func Sentinel(code string) error {
	for _, k := range kinds {
		if k.Code == code {
			return k.Err
		}
	}
	return aliases[code]
}

// Kinds returns a copy of the table, in order.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }
