package database

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"gorm.io/gorm"
)

// A request's database budget. Each call used to get the pool's timeout of its own, so a request whose
// database stopped answering waited it out once per call: a signed write's batch, then its admission on
// its own, then its nonce, three timeouts in a row (15 s) before its 503. A request now gets one
// deadline for all its database work (WithBudget): it starts at the request's first call, so that
// reading a slow body or storing an image does not spend it, and every later call, those made on a
// context detached from the request's included (context.WithoutCancel keeps values), ends by it.
// Work that is not the database's (a storage put, rendering) never gets the deadline.

type budgetKey struct{}

// budget is one request's deadline for its database work.
type budget struct {
	timeout time.Duration
	mu      sync.Mutex
	end     time.Time // zero until the first call
	over    bool      // the request ended: its calls are bounded no more
	cancels []context.CancelFunc
}

// WithBudget gives ctx's database calls one deadline, timeout after the first of them, and returns the
// function that ends the budget when the request ends (it releases the deadlines' timers). A context
// that has a budget keeps it.
func WithBudget(ctx context.Context, timeout time.Duration) (context.Context, func()) {
	if _, ok := ctx.Value(budgetKey{}).(*budget); ok || timeout <= 0 {
		return ctx, func() {}
	}
	b := &budget{timeout: timeout}
	return context.WithValue(ctx, budgetKey{}, b), b.finish
}

// Deadline is the deadline of ctx's database budget, starting it if no call has yet; false when ctx has
// no budget (or its request has ended).
func Deadline(ctx context.Context) (time.Time, bool) {
	b, ok := ctx.Value(budgetKey{}).(*budget)
	if !ok {
		return time.Time{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		return time.Time{}, false
	}
	if b.end.IsZero() {
		b.end = time.Now().Add(b.timeout)
	}
	return b.end, true
}

// bounded is ctx ended by its budget's deadline, if it has a budget and no earlier deadline.
func bounded(ctx context.Context) context.Context {
	end, ok := Deadline(ctx)
	if !ok {
		return ctx
	}
	if d, has := ctx.Deadline(); has && !d.After(end) {
		return ctx
	}
	bctx, cancel := context.WithDeadline(ctx, end)
	return kept(ctx, bctx, cancel)
}

// sent is the context a request's statement that may write runs on once it is sent: bounded by the
// request's budget and no longer by its client (detached). A context that has ended, or has no budget
// (work that is not a request's), is left as it is: database/sql refuses the call on an ended one
// before sending it.
func sent(ctx context.Context, query string) context.Context {
	if !mayWrite(query) {
		return bounded(ctx) // a read cut short commits nothing: it ends with its client
	}
	if _, ok := ctx.Value(budgetKey{}).(*budget); !ok || ctx.Err() != nil {
		return ctx
	}
	d, cancel := detached(ctx)
	return kept(ctx, d, cancel)
}

// kept returns derived, whose cancel the budget of ctx calls when its request ends; once it has
// ended, ctx itself.
func kept(ctx, derived context.Context, cancel context.CancelFunc) context.Context {
	b := ctx.Value(budgetKey{}).(*budget)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.over {
		cancel()
		return ctx
	}
	b.cancels = append(b.cancels, cancel)
	return derived
}

// finish ends the budget: the contexts it bounded are released (the request has answered, and rows
// read after it are none of its own).
func (b *budget) finish() {
	b.mu.Lock()
	cancels := b.cancels
	b.cancels, b.over = nil, true
	b.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
}

// Afterwards is ctx for the clean-up a request does once its answer is decided (freeing an
// Idempotency-Key, recording a nonce): without its cancellation, and with a budget of its own, since
// the request's may be spent by the very wait that failed it. The request flushes its answer first, so
// that its client has it within the request's one deadline.
func Afterwards(ctx context.Context) context.Context {
	ctx = context.WithoutCancel(ctx)
	if b, ok := ctx.Value(budgetKey{}).(*budget); ok {
		return context.WithValue(ctx, budgetKey{}, &budget{timeout: b.timeout})
	}
	return ctx
}

// detached is ctx without its cancellation (a client that went away), keeping its values and its
// deadline: what a write runs on once it has been sent, so that its outcome is known, its
// connection's transaction is ended, and its Idempotency-Key is settled or released at once, rather
// than left to the server's noticing the client is gone.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if end, has := Deadline(ctx); has && (!ok || end.Before(d)) {
		d, ok = end, true
	}
	if !ok {
		return context.WithCancel(context.WithoutCancel(ctx))
	}
	return context.WithDeadline(context.WithoutCancel(ctx), d)
}

// budgetPool is PostgreSQL's *sql.DB as gorm's connection pool. gorm's statements have their
// request's budget already (boundStatements); a transaction's BEGIN gets it here, as in SQLite's pool
// (sqlitePool).
//
// A request's statement outside a transaction commits on its own, so once it is sent it runs to its
// end, within the budget, even if the client goes away (sent): cut short, the driver closes the
// connection while the server still runs the statement, which then commits, or not, unknown to the
// request. The guard's admission was such a statement: a client that hung up left its
// Idempotency-Key claimed and never released, answering 409 until its lease ran out.
type budgetPool struct{ db *sql.DB }

func (p budgetPool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	return p.db.BeginTx(bounded(ctx), opts)
}

func (p budgetPool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return p.db.ExecContext(sent(ctx, query), query, args...)
}

func (p budgetPool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return p.db.QueryContext(sent(ctx, query), query, args...)
}

func (p budgetPool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return p.db.QueryRowContext(sent(ctx, query), query, args...)
}

func (p budgetPool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.db.PrepareContext(ctx, query)
}

// GetDBConn is the pool's *sql.DB, as gorm's DB() returns it.
func (p budgetPool) GetDBConn() (*sql.DB, error) { return p.db, nil }

var (
	_ gorm.ConnPool       = budgetPool{}
	_ gorm.TxBeginner     = budgetPool{}
	_ gorm.GetDBConnector = budgetPool{}
)

// boundStatements bounds each of db's statements by its request's budget: inside a transaction a
// statement runs on the request's context, not its BEGIN's, and database/sql rolls a transaction back
// at its deadline only once the statement running then has returned.
func boundStatements(db *gorm.DB) error {
	bound := func(tx *gorm.DB) { tx.Statement.Context = bounded(tx.Statement.Context) }
	cb := db.Callback()
	for name, register := range map[string]func(string, func(*gorm.DB)) error{
		"create": cb.Create().Before("*").Register,
		"query":  cb.Query().Before("*").Register,
		"update": cb.Update().Before("*").Register,
		"delete": cb.Delete().Before("*").Register,
		"row":    cb.Row().Before("*").Register,
		"raw":    cb.Raw().Before("*").Register,
	} {
		if err := register("svc:budget", bound); err != nil {
			return fmt.Errorf("bound %s statements: %w", name, err)
		}
	}
	return nil
}
