package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/tinehq/tine"
)

// A request's body is read only once the request is known to be allowed
// (its token, its peer, its run's signature checked), by decode or inside,
// and only up to its route's bound: smallBody, or what bodyLimits gives
// the routes that take more. A body declared larger is refused (413)
// without a byte of it read.

// smallBody bounds the body of most routes: a few options.
const smallBody = 64 << 10

// bodyLimits are the routes whose bodies may be larger than smallBody:
// lists of paths, a prompt, an effect's body, a caller's environment.
var bodyLimits = map[string]int64{
	"POST /v1/runs/{ref}/merge":        1 << 20,
	"POST /v1/groups/{ref}/combine":    1 << 20,
	"POST /v1/runs/{ref}/cell/promote": 1 << 20,
	"POST /v1/runs/{ref}/cells":        1 << 20,
	"POST /v1/runs/{ref}/fork-run":     1 << 20,
	"POST /v1/runs/{ref}/evidence":     1 << 20,
	"POST /v1/runs/{ref}/effects":      1 << 20,
	"POST /v1/runs/{ref}/exec":         1 << 20,
	"POST /v1/runs/{ref}/attach":       1 << 20,
}

// maxBody is the largest body any route takes.
const maxBody = 1 << 20

type bodyLimitKey struct{}

// limitBody bounds r's body by its route's limit (never reading it).
func (s *Server) limitBody(w http.ResponseWriter, r *http.Request) *http.Request {
	_, pattern := s.mux.Handler(r)
	n, ok := bodyLimits[pattern]
	if !ok {
		n = smallBody
	}
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = http.MaxBytesReader(w, r.Body, n)
	}
	return r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, n))
}

// bodyError is a request body refused for its size (413) or for arriving
// too slowly (408). It wraps tine.ErrInvalid: the client's fault.
type bodyError struct {
	status int
	msg    string
}

func (e *bodyError) Error() string { return e.msg }
func (e *bodyError) Unwrap() error { return tine.ErrInvalid }

func tooLarge(limit int64) error {
	return &bodyError{status: http.StatusRequestEntityTooLarge,
		msg: fmt.Sprintf("the request body is larger than this route takes (%d bytes)", limit)}
}

// readBody reads r's body whole, up to its route's limit (limitBody; else
// maxBody).
func readBody(r *http.Request) ([]byte, error) {
	limit, ok := r.Context().Value(bodyLimitKey{}).(int64)
	if !ok {
		limit = maxBody
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || int64(len(b)) > limit:
		return nil, tooLarge(limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &bodyError{status: http.StatusRequestTimeout, msg: fmt.Sprintf("the request body did not arrive in time: %v", err)}
	}
	return b, err
}

// decode reads a JSON body into v; an empty body leaves v as it is. It is
// strict, as every route's decoding is: unknown fields, a key twice in
// one object, and anything after the one JSON value are refused.
func decode(r *http.Request, v any) error {
	b, err := readBody(r)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return err
	}
	return decodeStrict(b, v)
}

// decodeStrict decodes the one JSON value b into v, strictly (decode).
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("request body: %v: %w", err, tine.ErrInvalid)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("request body: more than one JSON value: %w", tine.ErrInvalid)
	}
	if key, ok := duplicateKey(b); ok {
		return fmt.Errorf("request body: the key %q appears twice in one object: %w", key, tine.ErrInvalid)
	}
	return nil
}

// duplicateKey finds a key that appears twice in one object of the JSON
// value b (which Go would read as its last), naming it by its path
// ("approaches", "data.kind").
func duplicateKey(b []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	key, _ := dupIn(dec, "")
	return key, key != ""
}

// dupIn walks the next value of dec; it returns the path of the first
// duplicate key in it, or "".
func dupIn(dec *json.Decoder, path string) (string, error) {
	tok, err := dec.Token()
	if err != nil {
		return "", err
	}
	switch tok {
	case json.Delim('['):
		for dec.More() {
			if k, err := dupIn(dec, path); k != "" || err != nil {
				return k, err
			}
		}
		_, err = dec.Token()
		return "", err
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return "", err
			}
			k, _ := t.(string)
			sub := strings.TrimPrefix(path+"."+k, ".")
			if seen[k] {
				return sub, nil
			}
			seen[k] = true
			if d, err := dupIn(dec, sub); d != "" || err != nil {
				return d, err
			}
		}
		_, err = dec.Token()
		return "", err
	}
	return "", nil
}
