package database

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The waits between a listener's reconnection attempts.
const (
	listenBackoffMin = 100 * time.Millisecond
	listenBackoffMax = 5 * time.Second
)

// Listen keeps a connection to the PostgreSQL database at dsn listening on channel until ctx ends. It
// calls up(true, nil) on every connection (changes may have been missed while it was down), notified
// on every notification, and up(false, err) when the connection ends; it then reconnects, waiting 100
// ms at first and twice as long after each failure, up to 5 s. Every call comes from Listen's
// goroutine. channel is a constant of the caller, a plain lowercase identifier.
func Listen(ctx context.Context, dsn, channel string, up func(connected bool, err error), notified func()) {
	backoff := listenBackoffMin
	for ctx.Err() == nil {
		err := listenOnce(ctx, dsn, channel, &backoff, up, notified)
		if ctx.Err() != nil {
			return
		}
		up(false, err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, listenBackoffMax)
	}
}

func listenOnce(ctx context.Context, dsn, channel string, backoff *time.Duration, up func(bool, error), notified func()) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect listener: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+channel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	*backoff = listenBackoffMin
	up(true, nil)
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		notified()
	}
}
