// Package database opens svc's database of record (PostgreSQL) or its zero-setup default (an embedded,
// pure-Go SQLite file) behind one *gorm.DB, and applies modules' migrations. It is shared by the host
// and by modules' store tests (through dbtest), so it imports no module.
//
// # SQLite's writers queue
//
// SQLite lets one connection write at a time, and has no queue: a writer that finds the write lock
// taken is left to its busy handler, which sleeps and polls (after 1, 2, 5, 10, 15, 20 and 25 ms, then
// every 25 to 100 ms), while a writer arriving as the lock is freed takes it at once. Under steady load
// the newcomers keep winning and a writer that has begun backing off keeps losing: with 16 writers,
// BEGIN waited 31 µs at the median and 550 ms at the 99th percentile (1.5 s at worst) for transactions
// that ran 1 ms, and through the service some requests starved past their 5 s timeout (503).
//
// So Open puts a queue in front of SQLite's write lock (writeQueue, one per database file in the
// process, shared by its pools). A write transaction, or a statement outside a transaction that may
// write, waits for its turn in the order it asked, on a channel; the turn passes to the next writer
// the moment the previous one commits or rolls back, or its statement ends. Writers wait before they
// take a connection from the pool, so the writer whose turn it is always gets one, even for a read on
// the pool from inside its transaction. Reads and read-only transactions never queue (in WAL mode they
// never wait for the writer). Timeouts are kept: a writer waits within its context (a statement's
// Options.Timeout; a transaction's, which runs from the moment it asks to begin) and gives up with the
// context's error when it ends; a transaction the timeout ends gives its turn up then. SQLite's busy
// timeout stays, for another process writing the same file. PostgreSQL is untouched.
//
// With the queue, one source of tail was left: SQLite's automatic checkpoint, which runs inside the
// COMMIT that takes the WAL past 1000 pages, so that writer held its turn while the pages were copied
// and the files synced (up to 650 ms on a busy disk). It is off; each pool checkpoints in the
// background instead, and lets the WAL start over by ending each round in one short turn of the queue
// (checkpointer).
//
// Measured with BenchmarkSQLiteWriters (host/sqlite_bench_test.go: signed create_reply requests from 16
// writers at once, through the whole service, on a SQLite file), on 2 cores that ran other work too:
//
//	cd host && GOWORK=off go test -run '^$' -bench BenchmarkSQLiteWriters -benchtime 1000x -count 6 .
//
//	impl=svc   p50      p99       p99/p50   req/s
//	before     4.4 ms   1162 ms   262       317
//	after      35 ms    56 ms     1.6       431
//
// The median rose because it measured the writers that barged in; every request now waits behind the
// ones that came before it (16 writers, about 2 ms of writing each), the mean fell with the throughput
// gain, and the tail is gone. impl=baseline (the same statements straight on the pool) moved alike:
// p99 1068 ms to 51 ms, p99/p50 231 to 1.5. With the machine busier (load 4 on its 2 cores), p99/p50
// after was 2.2 to 2.8 in most runs, and before, requests failed at their 5 s timeout.
//
// # Planned writes
//
// A signed write used to run its statements one round trip at a time inside a transaction: a
// create_reply was eleven round trips after its admission, most of them waiting, not working. A write
// whose statements can be decided before any of them runs is planned instead (write.Plan): each step
// says how many rows it must touch (or a condition that must hold) and how to explain a failure.
// Write sends the plan as one pgx batch: PostgreSQL runs it in one implicit transaction, ended by the
// batch's one Sync, so the write is one round trip and one commit. A step checks its own expectation
// (checkedSQL makes it divide by zero when it finds otherwise, which the planner cannot fold away), so
// a failed step aborts the batch there and rolls everything back, server-side; its explanation then
// reads what went wrong and gives the refusal, in the order a statement-at-a-time write would have.
// The reads a write needs first come from data that cannot change under it (a pricing version's
// prices, a ready upload) or are re-checked by a step. Numbers only the write learns, like a wallet's
// balance after its debit, are Late: the answer holds a placeholder that Go replaces with the value
// the step returned, and the stored idempotent copy replaces in SQL with the same value, so both hold
// the same bytes. On SQLite the same steps run in one transaction.
//
// The guard's admission of a signed write (its nonce, limits and Idempotency-Key claim) can go with
// the write too (port.Admission, for a route declared Planned): Write then puts it first in the plan,
// on PostgreSQL as a statement that checks itself (Step.Checked: its data-modifying CTEs cannot be
// nested in the usual check), on SQLite as statements run in the transaction (Step.Run), so the whole
// request commits once. When the batch fails at a later step, the admission runs
// on its own before the step is explained: a refused write has still used its nonce.
package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// The dialects svc runs on.
const (
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Options tune the connection pool. Zero values take the defaults below.
type Options struct {
	MaxOpenConns    int
	MaxIdleConns    int
	ConnMaxLifetime time.Duration
	ConnMaxIdleTime time.Duration
	// BusyTimeout is how long a SQLite writer waits for the write lock while another process holds it
	// (this process's writers wait their turn in its write queue: see the package documentation).
	BusyTimeout time.Duration
	// Timeout is the longest a statement, or a transaction from BEGIN to COMMIT, may take. Every call
	// whose context has no earlier deadline gets this one (a request's context has none, so each of its
	// statements is bounded by it), and on PostgreSQL the server enforces it too (statement_timeout,
	// lock_timeout, idle_in_transaction_session_timeout), so that a database that stops answering fails
	// the call instead of hanging it.
	Timeout time.Duration
	// SlowThreshold is the duration above which a statement is logged as slow (its SQL with
	// placeholders, never its values).
	SlowThreshold time.Duration
	// Logger receives the slow statements; nil discards them.
	Logger *slog.Logger
	// Tracer, on PostgreSQL, sees every query the driver sends (BEGIN and COMMIT included), as
	// pgx.QueryTracer: benchmarks count round trips with it. Nil traces nothing.
	Tracer pgx.QueryTracer
}

func (o Options) withDefaults() Options {
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 16
	}
	// As many idle connections as open ones: fewer makes a busy pool close and reopen connections
	// many times a second (measured: 4 idle of 16 gave 33-53 reconnects a second and a 7x p99).
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = o.MaxOpenConns
	}
	if o.ConnMaxLifetime <= 0 {
		o.ConnMaxLifetime = 30 * time.Minute
	}
	if o.ConnMaxIdleTime <= 0 {
		o.ConnMaxIdleTime = 5 * time.Minute
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.SlowThreshold <= 0 {
		o.SlowThreshold = 500 * time.Millisecond
	}
	return o
}

// ErrBadURL is returned for a database URL of no supported form.
var ErrBadURL = errors.New(`database URL must be "postgres://..." or "sqlite:<path>"`)

// Parse splits a database URL into its dialect and the driver's DSN.
func Parse(url string) (dialect, dsn string, err error) {
	switch {
	case strings.HasPrefix(url, "postgres://"), strings.HasPrefix(url, "postgresql://"):
		return Postgres, url, nil
	case strings.HasPrefix(url, "sqlite:"):
		path := strings.TrimPrefix(url, "sqlite:")
		if path == "" || strings.ContainsAny(path, "?#") {
			return "", "", fmt.Errorf("%w: sqlite path %q", ErrBadURL, path)
		}
		return SQLite, path, nil
	}
	return "", "", fmt.Errorf("%w: got %q", ErrBadURL, Redact(url))
}

// Open returns a pool for url. On PostgreSQL it does not connect (the first query or Ping does); on
// SQLite (modernc.org/sqlite, pure Go) it creates the file's directory and opens the file in WAL mode
// with a busy timeout, foreign keys on, immediate write transactions, and its writers served in the
// order they come (see the package documentation).
func Open(url string, o Options) (*gorm.DB, error) {
	o = o.withDefaults()
	dialect, dsn, err := Parse(url)
	if err != nil {
		return nil, err
	}
	cfg := &gorm.Config{
		TranslateError:         true,
		DisableAutomaticPing:   true,
		SkipDefaultTransaction: true,
		// gorm gives a statement, and a transaction, whose context has no deadline this one.
		DefaultContextTimeout:     o.Timeout,
		DefaultTransactionTimeout: o.Timeout,
		NowFunc:                   func() time.Time { return time.Now().UTC() },
		Logger:                    newSlowLog(o.Logger, o.SlowThreshold),
	}
	var (
		dial   gorm.Dialector
		opened *sql.DB // SQLite's pool, opened here
	)
	switch dialect {
	case Postgres:
		dial = postgres.New(postgres.Config{DSN: withServerTimeouts(withConnectTimeout(dsn), o.Timeout),
			OptionOpenDB: []stdlib.OptionOpenDB{stdlib.OptionBeforeConnect(func(ctx context.Context, c *pgx.ConnConfig) error {
				if o.Tracer != nil {
					c.Tracer = o.Tracer
				}
				return reportStreamEnd(ctx, c)
			})}})
	case SQLite:
		if dir := filepath.Dir(dsn); dir != "" {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("create sqlite directory: %w", err)
			}
		}
		pool, queued, err := openSQLite(dsn, dsn+"?"+strings.Join([]string{
			fmt.Sprintf("_pragma=busy_timeout(%d)", o.BusyTimeout.Milliseconds()),
			"_pragma=journal_mode(WAL)",
			"_pragma=synchronous(NORMAL)",
			"_pragma=foreign_keys(1)",
			"_pragma=wal_autocheckpoint(0)", // checkpoints run in the background (checkpointer)
			"_txlock=immediate",
		}, "&"), o.Logger)
		if err != nil {
			return nil, fmt.Errorf("open %s database: %w", dialect, err)
		}
		opened = pool
		dial = newSQLite(queued)
	}
	db, err := gorm.Open(dial, cfg)
	if err != nil {
		if opened != nil {
			_ = opened.Close()
		}
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	if err := boundStatements(db); err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	if dialect == Postgres {
		// gorm's PostgreSQL dialector opens the pool itself (with its time zone handling); each call
		// on it is bounded by its request's budget from here (budgetPool).
		db.ConnPool = budgetPool{db: sqlDB}
		db.Statement.ConnPool = db.ConnPool
	}
	sqlDB.SetMaxOpenConns(o.MaxOpenConns)
	sqlDB.SetMaxIdleConns(o.MaxIdleConns)
	sqlDB.SetConnMaxLifetime(o.ConnMaxLifetime)
	sqlDB.SetConnMaxIdleTime(o.ConnMaxIdleTime)
	return db, nil
}

// reportStreamEnd makes a PostgreSQL connection report the server ending its stream as the network
// error it is. The driver reports it as a bare io.ErrUnexpectedEOF when a query was waiting for its
// answer (a server killed, or its host gone: no FATAL message, the stream just ends), which says
// nothing of where it came from, so a request failing so was answered 500 instead of 503 not_ready.
func reportStreamEnd(_ context.Context, cfg *pgx.ConnConfig) error {
	dial := cfg.DialFunc
	if dial == nil {
		return nil
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return streamEndConn{Conn: c, network: network}, nil
	}
	return nil
}

// errStreamEnded is why a read from the database failed when the server ended the stream. It does not
// wrap io.EOF, which database/sql and the driver take for the clean end of rows.
var errStreamEnded = errors.New("the database server closed the connection")

// streamEndConn is a connection whose reads fail with a *net.OpError where the server ended the stream.
type streamEndConn struct {
	net.Conn
	network string
}

func (c streamEndConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err == io.EOF {
		err = &net.OpError{Op: "read", Net: c.network, Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: errStreamEnded}
	}
	return n, err
}

// Dialect names the dialect of an open database.
func Dialect(db *gorm.DB) string {
	if db.Dialector.Name() == "postgres" {
		return Postgres
	}
	return SQLite
}

// ForUpdate locks the rows tx reads next until tx ends (SELECT ... FOR UPDATE on PostgreSQL; SQLite's
// one writer holds the database for the transaction already).
func ForUpdate(tx *gorm.DB) *gorm.DB {
	if Dialect(tx) == Postgres {
		return tx.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	return tx
}

// Redact hides the passwords of a database URL (in its user information or a password parameter) for
// logs and errors.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable database URL>"
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") || strings.EqualFold(k, "sslpassword") {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}
