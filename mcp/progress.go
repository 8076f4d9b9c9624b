package mcp

import (
	"context"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressKey holds a call's progress reporter in its context.
type progressKey struct{}

// progress reports how far a call has come, in order (the MCP progress
// notifications of the call's progress token).
type progress struct {
	mu   sync.Mutex
	send func(done, total int, msg string)
}

// withProgress gives ctx the reporter of req, when its client asked for
// progress (a progress token in the request's _meta).
func withProgress(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	if req == nil || req.Session == nil || req.Params == nil {
		return ctx
	}
	tok := req.Params.GetProgressToken()
	if tok == nil {
		return ctx
	}
	p := &progress{send: func(done, total int, msg string) {
		// A notification that cannot be sent (the client went away) is
		// not the call's failure. One sent after the client cancelled the
		// call still goes: it says what became of each fork.
		_ = req.Session.NotifyProgress(context.WithoutCancel(ctx), &sdk.ProgressNotificationParams{ProgressToken: tok,
			Progress: float64(done), Total: float64(total), Message: msg})
	}}
	return context.WithValue(ctx, progressKey{}, p)
}

// notify reports progress done of total with msg, if the caller asked for
// progress; calls are sent one at a time, in the order made.
func notify(ctx context.Context, done, total int, msg string) {
	p, ok := ctx.Value(progressKey{}).(*progress)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.send(done, total, msg)
}
