package httpapi

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"
)

// Timeouts bound how long a client may take over a request: to send its
// header, to send its body, and to send the next request on a connection
// kept alive. Handlers that run long (an exec, a merge) and streams (the
// dashboard's events) are not bounded.
type Timeouts struct {
	Header, Body, Idle time.Duration
}

// DefaultTimeouts are tine serve's.
var DefaultTimeouts = Timeouts{Header: 10 * time.Second, Body: 30 * time.Second, Idle: 2 * time.Minute}

// maxHeader bounds a request's header. A run's socket takes more
// (runHeader): a signed request carries its body in its header.
const maxHeader = 64 << 10

// NewHTTPServer returns an http.Server of h bounded by t: a client that
// trickles its header or body is answered 408 and its connection closed
// once the timeout passes. A request with a Transfer-Encoding is refused
// (guard). connContext, if not nil, becomes the server's ConnContext
// (ConnContext for the people's socket). Bound its listeners' connections
// with a ConnLimiter.
func NewHTTPServer(h http.Handler, t Timeouts, connContext func(context.Context, net.Conn) context.Context) *http.Server {
	return &http.Server{Handler: guard(h, t.Body), ReadHeaderTimeout: t.Header, IdleTimeout: t.Idle,
		MaxHeaderBytes: maxHeader, ConnContext: connContext}
}

// guard refuses a request whose body is framed by Transfer-Encoding: with
// a Content-Length beside it, a proxy in front may read it otherwise than
// Go does (request smuggling), and no client of the API needs it. It
// bounds the reading of the body by d from its first byte (the deadline
// lifted at its end, so that the handler may run as long as it needs),
// and what the server discards of a body nobody read.
func guard(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.TransferEncoding) > 0 {
			w.Header().Set("Connection", "close")
			writeJSON(w, http.StatusBadRequest, Error{Code: "invalid",
				Error: "Transfer-Encoding is refused: send the body with a Content-Length alone (with both, a proxy in front could frame the request otherwise: request smuggling)"})
			return
		}
		if d <= 0 || r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		b := &deadlineBody{ReadCloser: r.Body, rc: rc, d: d}
		r.Body = b
		h.ServeHTTP(w, r)
		if !b.eof {
			// The server reads what is left of a body (up to 256 KiB) to
			// reuse the connection: within d, or not at all when the
			// answer closes it (a refusal).
			until := time.Now().Add(d)
			if w.Header().Get("Connection") == "close" {
				until = time.Now()
			}
			rc.SetReadDeadline(until)
		}
	})
}

// deadlineBody is a request body read within d of its first read.
type deadlineBody struct {
	io.ReadCloser
	rc           *http.ResponseController
	d            time.Duration
	started, eof bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if !b.started {
		b.started = true
		b.rc.SetReadDeadline(time.Now().Add(b.d))
	}
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.eof {
		b.eof = true
		b.rc.SetReadDeadline(time.Time{}) // the handler may take its time
	}
	return n, err
}
