package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/merge"
)

// Error is the body of every failed request.
type Error struct {
	Error string `json:"error"` // one line, as the CLI prints it
	Code  string `json:"code"`  // a stable name for the kind of failure
}

// status maps an error to its HTTP status and code name, in this one place.
func status(err error) (int, string) {
	switch {
	case errors.Is(err, merge.ErrConflict):
		return http.StatusConflict, "conflict"
	case errors.Is(err, tine.ErrInvalid):
		return http.StatusBadRequest, "invalid"
	case errors.Is(err, tine.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, tine.ErrExists):
		return http.StatusConflict, "exists"
	case errors.Is(err, tine.ErrState):
		return http.StatusConflict, "state"
	case errors.Is(err, tine.ErrUnmerged):
		return http.StatusConflict, "unmerged"
	case errors.Is(err, tine.ErrPrivilege):
		return http.StatusForbidden, "privilege"
	case errors.Is(err, tine.ErrUnsupported):
		return http.StatusNotImplemented, "unsupported"
	case errors.Is(err, tine.ErrBusy):
		return http.StatusLocked, "busy"
	}
	return http.StatusInternalServerError, "error"
}

// CodeErr turns an API error code back into the sentinel it came from, so
// a client reports the same error (and exit status) as the engine would.
func CodeErr(code string) error {
	return map[string]error{
		"conflict": merge.ErrConflict, "invalid": tine.ErrInvalid, "not_found": tine.ErrNotFound,
		"exists": tine.ErrExists, "state": tine.ErrState, "unmerged": tine.ErrUnmerged,
		"privilege": tine.ErrPrivilege, "unsupported": tine.ErrUnsupported, "busy": tine.ErrBusy,
	}[code]
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeErr(w http.ResponseWriter, err error) {
	code, name := status(err)
	writeJSON(w, code, Error{Error: err.Error(), Code: name})
}
