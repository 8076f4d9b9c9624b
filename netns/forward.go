package netns

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
)

// Forward publishes a port: it accepts connections on ln and, for each,
// calls dial for a fresh upstream connection and copies bytes both ways.
// A side that finishes writing is half-closed on the other (CloseWrite when
// the connection has it), so protocols that shut down one direction first
// still work. A connection whose dial fails is closed.
//
// Forward returns nil once ctx is done or ln is closed, after closing ln and
// every proxied connection and waiting for their goroutines; any other
// Accept error is returned. It closes ln in every case.
func Forward(ctx context.Context, ln net.Listener, dial func(ctx context.Context) (net.Conn, error)) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	defer ln.Close()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		wg.Go(func() { proxy(ctx, c, dial) })
	}
}

// proxy dials upstream for client c and copies between them until both
// directions are done or ctx ends.
func proxy(ctx context.Context, c net.Conn, dial func(ctx context.Context) (net.Conn, error)) {
	defer c.Close()
	up, err := dial(ctx)
	if err != nil {
		return
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { c.Close(); up.Close() })
	defer stop()
	Splice(c, up)
}

// Splice copies between a and b both ways until both directions are done,
// half-closing each side as the other finishes writing; a copy that fails
// (a reset) closes both (pipe).
func Splice(a, b net.Conn) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		pipe(b, a)
	}()
	pipe(a, b)
	<-done
}

// pipe copies src to dst, then half-closes dst's write side so the far end
// sees EOF. Without CloseWrite, dst is closed outright. A failed copy (a
// reset, say) closes both, which ends the other direction too.
func pipe(dst, src net.Conn) {
	if _, err := io.Copy(dst, src); err != nil {
		_ = dst.Close()
		_ = src.Close()
		return
	}
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = dst.Close()
}
