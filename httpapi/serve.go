package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// Timeouts bound how long a client may take over a request: to send its
// header, to send its body, and to send the next request on a connection
// kept alive. Handlers that run long (an exec, a merge) are not bounded.
type Timeouts struct {
	Header, Body, Idle time.Duration
}

// DefaultTimeouts are tine serve's.
var DefaultTimeouts = Timeouts{Header: 10 * time.Second, Body: 30 * time.Second, Idle: 2 * time.Minute}

// maxBody is the largest request body served.
const maxBody = 1 << 20

// NewHTTPServer returns an http.Server of h bounded by t: a client that
// trickles its header or body is answered 408 and its connection closed
// once the timeout passes. connContext, if not nil, becomes the server's
// ConnContext (ConnContext for the people's socket).
func NewHTTPServer(h http.Handler, t Timeouts, connContext func(context.Context, net.Conn) context.Context) *http.Server {
	return &http.Server{Handler: readBody(h, t.Body), ReadHeaderTimeout: t.Header, IdleTimeout: t.Idle, ConnContext: connContext}
}

// readBody reads a request's whole body within d before h sees it, then
// lifts the read deadline again so that h may run as long as it needs.
func readBody(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d <= 0 || r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(d))
		b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
		if err != nil {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestTimeout, Error{Error: fmt.Sprintf("the request body did not arrive within %v: %v", d, err), Code: "timeout"})
			return
		}
		if len(b) > maxBody {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusRequestEntityTooLarge, Error{Error: fmt.Sprintf("the request body is larger than %d bytes", maxBody), Code: "invalid"})
			return
		}
		rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(b))
		h.ServeHTTP(w, r)
	})
}
