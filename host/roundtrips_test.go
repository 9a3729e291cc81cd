package host

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// roundTrips is a pgx tracer that counts, for the contexts marked with counted, the round trips to
// PostgreSQL (a query, a prepare, a batch: each is one exchange ending in Sync) and the commits (an
// explicit COMMIT, or a writing statement run outside a transaction, which commits on its own).
// Benchmarks print them per request beside their ratios.
type roundTrips struct {
	trips   atomic.Int64
	commits atomic.Int64
	waited  atomic.Int64 // nanoseconds from sending a query, prepare or batch to its end
}

type startedKey struct{}

// started marks ctx with the time an exchange began, for the matching End.
func started(ctx context.Context) context.Context {
	return context.WithValue(ctx, startedKey{}, time.Now())
}

func (rt *roundTrips) ended(ctx context.Context) {
	if t, ok := ctx.Value(startedKey{}).(time.Time); ok {
		rt.waited.Add(int64(time.Since(t)))
	}
}

type countedKey struct{}

// counted marks ctx so that rt counts what runs under it; other work on the pool (the guard's memory
// poll, the job queue) is not counted.
func counted(ctx context.Context) context.Context { return context.WithValue(ctx, countedKey{}, true) }

func isCounted(ctx context.Context) bool { v, _ := ctx.Value(countedKey{}).(bool); return v }

func (rt *roundTrips) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if !isCounted(ctx) {
		return ctx
	}
	rt.trips.Add(1)
	sql := strings.ToLower(strings.TrimSpace(data.SQL))
	switch {
	case strings.HasPrefix(sql, "commit"):
		rt.commits.Add(1)
	case conn.PgConn().TxStatus() == 'I' && !strings.HasPrefix(sql, "begin") && !strings.HasPrefix(sql, "select"):
		rt.commits.Add(1)
	}
	return started(ctx)
}

func (rt *roundTrips) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	rt.ended(ctx)
}

func (rt *roundTrips) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	if !isCounted(ctx) {
		return ctx
	}
	rt.trips.Add(1)
	return started(ctx)
}

func (rt *roundTrips) TracePrepareEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareEndData) {
	rt.ended(ctx)
}

// A batch sent outside a transaction runs in one implicit transaction: one round trip, one commit.
func (rt *roundTrips) TraceBatchStart(ctx context.Context, conn *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	if !isCounted(ctx) {
		return ctx
	}
	rt.trips.Add(1)
	if conn.PgConn().TxStatus() == 'I' {
		rt.commits.Add(1)
	}
	return started(ctx)
}

func (rt *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (rt *roundTrips) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchEndData) {
	rt.ended(ctx)
}

// reset zeroes the counts.
func (rt *roundTrips) reset() { rt.trips.Store(0); rt.commits.Store(0); rt.waited.Store(0) }

// report returns the round trips, commits and milliseconds spent waiting for PostgreSQL per op over n
// ops.
func (rt *roundTrips) report(n int) (trips, commits, waitedMS float64) {
	return float64(rt.trips.Load()) / float64(n), float64(rt.commits.Load()) / float64(n),
		float64(rt.waited.Load()) / 1e6 / float64(n)
}

var (
	_ pgx.QueryTracer   = (*roundTrips)(nil)
	_ pgx.PrepareTracer = (*roundTrips)(nil)
	_ pgx.BatchTracer   = (*roundTrips)(nil)
)
