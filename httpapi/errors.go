package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/tinehq/tine/errcode"
)

// Error is the body of every failed request.
type Error struct {
	Error string `json:"error"` // one line, as the CLI prints it
	Code  string `json:"code"`  // a stable name for the kind of failure (errcode)
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
	k := errcode.Of(err)
	writeJSON(w, k.Status, Error{Error: err.Error(), Code: k.Code})
}

// writeErrWith answers err as writeErr does, with the partial result beside
// it (a merge's plan with its conflicts, what a failed start did start).
func writeErrWith(w http.ResponseWriter, err error, result any) {
	k := errcode.Of(err)
	writeJSON(w, k.Status, map[string]any{"error": err.Error(), "code": k.Code, "result": result})
}
