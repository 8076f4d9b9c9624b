package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/tinehq/tine"
	"github.com/tinehq/tine/errcode"
)

// Error is the body of every failed request.
type Error struct {
	Error string `json:"error"` // one line, naming options in the API's words
	Code  string `json:"code"`  // a stable name for the kind of failure (errcode)
	// Parts is Error in pieces when it names options of the request
	// (tine.OptionError), so a client can name them its own way.
	Parts []tine.Part `json:"parts,omitempty"`
}

// errorOf is the answer's body of err.
func errorOf(err error) (int, Error) {
	k := errcode.Of(err)
	status := k.Status
	var be *bodyError
	if errors.As(err, &be) {
		status = be.status // 413, 408: still invalid to a client
	}
	return status, Error{Error: err.Error(), Code: k.Code, Parts: tine.OptionParts(err)}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

// writeErr answers err with the status and code errcode gives its kind.
func writeErr(w http.ResponseWriter, err error) {
	var be *bodyError
	if errors.As(err, &be) {
		w.Header().Set("Connection", "close") // what is left of the body is not read
	}
	status, e := errorOf(err)
	writeJSON(w, status, e)
}

// writeErrWith answers err as writeErr does, with the partial result beside
// it (a merge's plan with its conflicts, what a failed start did start).
func writeErrWith(w http.ResponseWriter, err error, result any) {
	status, e := errorOf(err)
	writeJSON(w, status, struct {
		Error
		Result any `json:"result"`
	}{e, result})
}
