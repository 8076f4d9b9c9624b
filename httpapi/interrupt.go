package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/tinehq/tine"
)

// A long request (a merge, a release, a fork) may be interrupted, as a
// person's Ctrl-C interrupts the same command run without the daemon: the
// client names it with an id of its own (InterruptHeader, 128 random bits
// only it knows) and, to interrupt it, sends POST /v1/requests/{id}/cancel
// while it still waits for the answer. The daemon cancels that request's
// work, which stops at its next safe point (rolled back, or finished when
// it was past its commit), and the answer says which. Hanging up does not
// cancel anything: a state-changing request is detached from its
// connection (ctxOf).

// InterruptHeader carries the id a client gave a request it may interrupt.
const InterruptHeader = "Tine-Interrupt-Id"

// interrupts are the requests in progress that their clients may cancel,
// by caller and id.
type interrupts struct {
	mu sync.Mutex
	m  map[interruptKey]context.CancelFunc
}

// interruptKey is a request's id with the uid of who sent it (-1 for a
// caller that sees every workspace), so only its sender may cancel it.
type interruptKey struct {
	uid int
	id  string
}

// workCtxKey is the request context's key of its interruptible work context.
type workCtxKey struct{}

// keyOf returns the registry key of id sent by r's caller.
func keyOf(r *http.Request, id string) interruptKey {
	k := interruptKey{uid: -1, id: id}
	if c := callerOf(r); c != nil {
		k.uid = c.UID
	}
	return k
}

// register makes r's work interruptible when its client named it, and
// returns r with that work context and the function that forgets it.
func (s *Server) register(r *http.Request) (*http.Request, func()) {
	id := r.Header.Get(InterruptHeader)
	if id == "" {
		return r, func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	k := keyOf(r, id)
	s.interrupts.mu.Lock()
	if s.interrupts.m == nil {
		s.interrupts.m = map[interruptKey]context.CancelFunc{}
	}
	s.interrupts.m[k] = cancel
	s.interrupts.mu.Unlock()
	return r.WithContext(context.WithValue(r.Context(), workCtxKey{}, ctx)), func() {
		s.interrupts.mu.Lock()
		delete(s.interrupts.m, k)
		s.interrupts.mu.Unlock()
		cancel()
	}
}

// workCtx is the context of r's work for an operation that stops at a safe
// point when cancelled: cancelled by POST /v1/requests/{id}/cancel when the
// client named r, never by the client hanging up (ctxOf).
func workCtx(r *http.Request) context.Context {
	if ctx, ok := r.Context().Value(workCtxKey{}).(context.Context); ok {
		return ctx
	}
	return ctxOf(r)
}

// cancelRequest interrupts the work of the caller's request {id}.
func (s *Server) cancelRequest(w http.ResponseWriter, r *http.Request) {
	k := keyOf(r, r.PathValue("id"))
	s.interrupts.mu.Lock()
	cancel, ok := s.interrupts.m[k]
	s.interrupts.mu.Unlock()
	if !ok {
		writeErr(w, fmt.Errorf("no request %q of yours is in progress: %w", k.id, tine.ErrNotFound))
		return
	}
	cancel()
	w.WriteHeader(http.StatusNoContent)
}

// Interruptible returns a context for a request of the client whose work
// the daemon interrupts when ctx ends: the request itself outlives ctx
// (its answer says what became of the work); ctx's end is sent to the
// daemon as POST /v1/requests/{id}/cancel. A daemon that cannot be told
// (an older one) goes on; the request then fails with an error wrapping
// ErrNotInterrupted.
func Interruptible(ctx context.Context) context.Context {
	return context.WithValue(context.WithoutCancel(ctx), interruptOnKey{}, ctx)
}

// interruptOnKey is the context key of what interrupts a request.
type interruptOnKey struct{}

// ErrNotInterrupted is a request the client was asked to interrupt but
// could not: the daemon goes on with its work.
var ErrNotInterrupted = errors.New("the tine daemon goes on with it")

// interruptible sets up the interruption of req, if its context asks for
// it, and returns req and the function to call once the answer came; the
// request is aborted (and abort returns the reason) when the daemon could
// not be told.
func (c *Client) interruptible(req *http.Request) (*http.Request, func() error) {
	on, ok := req.Context().Value(interruptOnKey{}).(context.Context)
	if !ok {
		return req, func() error { return nil }
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	req.Header.Set(InterruptHeader, id)
	ctx, abort := context.WithCancelCause(req.Context())
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-on.Done():
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, err := c.Do(cctx, http.MethodPost, "/v1/requests/"+id+"/cancel", nil, nil)
			// Not in progress: the work has just finished (or not begun),
			// and the request's own answer says what became of it.
			if err != nil && !errors.Is(err, tine.ErrNotFound) {
				abort(fmt.Errorf("%w (it could not be interrupted: %v)", ErrNotInterrupted, err))
			}
		}
	}()
	return req.WithContext(ctx), func() error {
		close(done)
		return context.Cause(ctx)
	}
}
