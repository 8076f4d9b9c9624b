package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// WaitEvents returns once the log holds an event with a sequence number
// above after, waiting for one to be committed, by any process, until ctx
// ends. It LISTENs on the store's event channel, to which AppendEvent
// notifies each new sequence number, so a follower of the log (tine events
// --follow, the dashboard) wakes at the commit instead of polling. It
// holds one of the pool's connections while it waits.
func (s *Store) WaitEvents(ctx context.Context, after int64) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: wait for events: %w", err)
	}
	defer c.Release()
	conn := c.Conn()
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
		return fmt.Errorf("postgres: wait for events: %w", err)
	}
	// UNLISTEN before the connection goes back to the pool; a connection
	// the wait broke off is closed instead.
	defer func() {
		if _, err := conn.Exec(context.WithoutCancel(ctx), "UNLISTEN "+pgx.Identifier{s.channel}.Sanitize()); err != nil {
			_ = conn.Close(context.WithoutCancel(ctx))
		}
	}()
	// An event committed before LISTEN took effect sent its notice to no
	// one: look for it first.
	var newer bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM events WHERE seq > $1)", after).Scan(&newer); err != nil {
		return fmt.Errorf("postgres: wait for events: %w", err)
	}
	for !newer {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("postgres: wait for events: %w", err)
		}
		var seq int64
		if _, err := fmt.Sscan(n.Payload, &seq); err == nil && seq > after {
			newer = true
		}
	}
	return nil
}
