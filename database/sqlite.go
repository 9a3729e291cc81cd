package database

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gorm.io/gorm"
	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/svcforum/svc/database/internal/sqlitedialect"
)

// sqliteDialector is gorm's SQLite dialector over modernc.org/sqlite, the maintained pure-Go SQLite (no
// cgo): its rows honour their context while they are read, so a long query is interrupted at its
// deadline. The dialector is upstream's without its link to the cgo driver (internal/sqlitedialect);
// modernc's errors are translated here.
type sqliteDialector struct {
	*sqlitedialect.Dialector
}

func newSQLite(pool gorm.ConnPool) gorm.Dialector {
	return sqliteDialector{&sqlitedialect.Dialector{DriverName: "sqlite", Conn: pool}}
}

// SQLite's own lower() folds ASCII letters only, so a case-insensitive match (LOWER(name) LIKE ...) of
// "Ärzte" missed "ärzte", where PostgreSQL's lower() folds by the database's LC_CTYPE (C.UTF-8 in the
// image: all of Unicode). Every SQLite connection gets Go's Unicode lower case in its place (an
// application-defined function overrides a built-in of the same name).
func init() {
	msqlite.MustRegisterDeterministicScalarFunction("lower", 1, func(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return strings.ToLower(v), nil
		case []byte:
			return strings.ToLower(string(v)), nil
		}
		return args[0], nil // NULL, or a number, whose text has no case
	})
}

// Translate turns modernc's constraint errors into gorm's, as TranslateError asks.
func (d sqliteDialector) Translate(err error) error {
	var e *msqlite.Error
	if errors.As(err, &e) {
		switch e.Code() {
		case sqlite3.SQLITE_CONSTRAINT_UNIQUE, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
			return gorm.ErrDuplicatedKey
		case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
			return gorm.ErrForeignKeyViolated
		}
	}
	return err
}

var _ gorm.ErrorTranslator = sqliteDialector{}

// openSQLite opens the database/sql pool of the SQLite file at path with the driver's dsn, every write
// on it passing the file's write queue (writeQueue), and returns it with the gorm connection pool in
// front of it that queues before taking a connection.
//
// The queue is taken in two places. gorm's calls (a transaction, or a statement outside one that may
// write) queue in sqlitePool, before database/sql hands them a connection, so that writers waiting
// their turn hold no connection: the writer whose turn it is can always get one, for its transaction
// or for a read it makes on the pool meanwhile. The connection's turn ends in the driver (sqliteConn),
// when its transaction commits or rolls back, its rows close or its statement returns, so the next
// writer starts the moment SQLite's lock is free. Callers that use the *sql.DB directly (the job
// runner) queue in the driver, holding their connection while they wait.
func openSQLite(path, dsn string, log *slog.Logger) (*sql.DB, *sqlitePool, error) {
	base, err := msqlite.NewConnector(dsn)
	if err != nil {
		return nil, nil, err
	}
	q := queueFor(path)
	k := newCheckpointer(q, log)
	db := sql.OpenDB(sqliteConnector{Connector: base, q: q, k: k})
	k.db = db
	return db, &sqlitePool{db: db, q: q}, nil
}

// sqlitePool is the *sql.DB of a SQLite file as gorm's connection pool: a write transaction, and a
// statement outside a transaction that may write, first wait for their turn in the write queue, and
// take a connection only then; the ticket goes with the call to the driver (withTicket), which ends
// the turn. A read-only transaction and a read do not queue: in WAL mode they never wait for writers.
type sqlitePool struct {
	db *sql.DB
	q  *writeQueue
}

// queued runs call with a turn in the write queue, taken before call asks for a connection, and ends
// the turn when call returns unless the driver took the ticket over.
func (p *sqlitePool) queued(ctx context.Context, call func(ctx context.Context) error) error {
	t, err := p.q.acquire(ctx)
	if err != nil {
		return err
	}
	err = call(withTicket(ctx, t))
	if !t.adopted.Load() {
		t.release()
	}
	return err
}

func (p *sqlitePool) BeginTx(ctx context.Context, opts *sql.TxOptions) (*sql.Tx, error) {
	// A statement has its request's budget from gorm's callback (boundStatements); a transaction's
	// BEGIN is no statement of gorm's, so it gets it here.
	ctx = bounded(ctx)
	if opts != nil && opts.ReadOnly {
		return p.db.BeginTx(ctx, opts)
	}
	var tx *sql.Tx
	err := p.queued(ctx, func(ctx context.Context) (err error) {
		tx, err = p.db.BeginTx(ctx, opts)
		return err
	})
	return tx, err
}

func (p *sqlitePool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if !mayWrite(query) {
		return p.db.ExecContext(ctx, query, args...)
	}
	var res sql.Result
	err := p.queued(ctx, func(ctx context.Context) (err error) {
		res, err = p.db.ExecContext(ctx, query, args...)
		return err
	})
	return res, err
}

func (p *sqlitePool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if !mayWrite(query) {
		return p.db.QueryContext(ctx, query, args...)
	}
	var rows *sql.Rows
	err := p.queued(ctx, func(ctx context.Context) (err error) {
		rows, err = p.db.QueryContext(ctx, query, args...)
		return err
	})
	return rows, err
}

func (p *sqlitePool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if !mayWrite(query) {
		return p.db.QueryRowContext(ctx, query, args...)
	}
	t, err := p.q.acquire(ctx)
	if err != nil {
		// ctx ended before the turn came: database/sql answers a call on an ended context with a Row
		// that carries the context's error.
		return p.db.QueryRowContext(ctx, query, args...)
	}
	row := p.db.QueryRowContext(withTicket(ctx, t), query, args...)
	if !t.adopted.Load() {
		t.release()
	}
	return row
}

// PrepareContext prepares on the pool: the statement queues in the driver each time it runs.
func (p *sqlitePool) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return p.db.PrepareContext(ctx, query)
}

// GetDBConn is the pool's *sql.DB, as gorm's DB() returns it.
func (p *sqlitePool) GetDBConn() (*sql.DB, error) { return p.db, nil }

var (
	_ gorm.ConnPool       = (*sqlitePool)(nil)
	_ gorm.TxBeginner     = (*sqlitePool)(nil)
	_ gorm.GetDBConnector = (*sqlitePool)(nil)
)

// sqliteConnector opens the driver's connections behind sqliteConn.
type sqliteConnector struct {
	driver.Connector
	q *writeQueue
	k *checkpointer
}

// Close is called by the pool's Close: it stops the checkpointer.
func (c sqliteConnector) Close() error {
	c.k.close()
	if closer, ok := c.Connector.(io.Closer); ok {
		return closer.Close()
	}
	return nil
}

func (c sqliteConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := conn.(driverConn)
	if !ok {
		_ = conn.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks an interface svc needs", conn)
	}
	return &sqliteConn{driverConn: inner, q: c.q, k: c.k}, nil
}

// driverConn is what every connection modernc.org/sqlite opens implements, and a wrapper must
// forward (msqlite.NewConnector).
type driverConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// sqliteConn is one connection, whose writes end their turn in the write queue: a transaction when it
// commits or rolls back, rows of a statement that may write when they close, such a statement run
// with Exec when it returns. A call that comes without a ticket (a caller of the *sql.DB itself, not
// gorm's) queues here.
type sqliteConn struct {
	driverConn
	q    *writeQueue
	k    *checkpointer
	inTx atomic.Bool // a transaction is open: its statements need no turn of their own
}

// Unwrap is the driver's connection (msqlite.Limit and the like look for it).
func (c *sqliteConn) Unwrap() driver.Conn { return c.driverConn }

// turn returns the ticket of a call that may write outside a transaction: the one its context carries
// (adopted), or one queued for here. nil: the call needs none.
func (c *sqliteConn) turn(ctx context.Context, query string) (t *ticket, err error) {
	if c.inTx.Load() || !mayWrite(query) {
		return nil, nil
	}
	if t := adoptTicket(ctx); t != nil {
		return t, nil
	}
	return c.q.acquire(ctx)
}

// BeginTx begins a transaction: a write transaction in its turn (the ticket its context carries, or
// one queued for here), a read-only one (a deferred BEGIN, a snapshot that never waits) at once.
func (c *sqliteConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	var t *ticket
	if !opts.ReadOnly {
		if t = adoptTicket(ctx); t == nil {
			var err error
			if t, err = c.q.acquire(ctx); err != nil {
				return nil, err
			}
		}
	}
	tx, err := c.driverConn.BeginTx(ctx, opts)
	if err != nil {
		t.release()
		return nil, err
	}
	c.inTx.Store(true)
	return &sqliteTx{Tx: tx, c: c, t: t}, nil
}

// Begin is BeginTx without a context (database/sql calls BeginTx).
func (c *sqliteConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *sqliteConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	t, err := c.turn(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := c.driverConn.ExecContext(ctx, query, args)
	c.wrote(t, err)
	return res, err
}

// wrote ends the turn t of a write outside a transaction (none: nil), which failed with err.
func (c *sqliteConn) wrote(t *ticket, err error) {
	if t == nil {
		return
	}
	t.release()
	if err == nil {
		c.q.wrote.Store(time.Now().UnixNano())
		c.k.wrote()
	}
}

func (c *sqliteConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	t, err := c.turn(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := c.driverConn.QueryContext(ctx, query, args)
	return c.holding(t, rows, err)
}

// holding returns rows that keep the turn t (nil: none) until they are closed; on an error the turn
// is given up at once.
func (c *sqliteConn) holding(t *ticket, rows driver.Rows, err error) (driver.Rows, error) {
	if t == nil {
		return rows, err
	}
	if err != nil {
		t.release()
		return nil, err
	}
	inner, ok := rows.(driverRows)
	if !ok {
		_ = rows.Close()
		t.release()
		return nil, fmt.Errorf("sqlite driver rows %T lack an interface svc needs", rows)
	}
	return &sqliteRows{driverRows: inner, c: c, t: t}, nil
}

func (c *sqliteConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.driverConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	inner, ok := s.(driverStmt)
	if !ok {
		_ = s.Close()
		return nil, fmt.Errorf("sqlite driver statement %T lacks an interface svc needs", s)
	}
	return &sqliteStmt{driverStmt: inner, c: c, query: query}, nil
}

// Prepare is PrepareContext without a context (database/sql calls PrepareContext).
func (c *sqliteConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// sqliteTx is a transaction; a write transaction holds its turn (t) until it ends.
type sqliteTx struct {
	driver.Tx
	c *sqliteConn
	t *ticket // nil: read-only
}

func (tx *sqliteTx) Commit() error {
	err := tx.Tx.Commit()
	tx.end()
	if err == nil && tx.t != nil {
		tx.c.q.wrote.Store(time.Now().UnixNano())
		tx.c.k.wrote()
	}
	return err
}

func (tx *sqliteTx) Rollback() error {
	defer tx.end()
	return tx.Tx.Rollback()
}

func (tx *sqliteTx) end() {
	tx.c.inTx.Store(false)
	tx.t.release()
}

// driverRows is what the driver's rows implement (the column types gorm reads to scan into maps).
type driverRows interface {
	driver.Rows
	driver.RowsColumnTypeDatabaseTypeName
	driver.RowsColumnTypeLength
	driver.RowsColumnTypeNullable
	driver.RowsColumnTypePrecisionScale
	driver.RowsColumnTypeScanType
}

// sqliteRows are the rows of a statement that may write, outside a transaction: its autocommit
// transaction lasts until they close, and so does its turn.
type sqliteRows struct {
	driverRows
	c *sqliteConn
	t *ticket
}

func (r *sqliteRows) Close() error {
	err := r.driverRows.Close()
	r.c.wrote(r.t, err)
	return err
}

// driverStmt is what the driver's prepared statements implement.
type driverStmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

// sqliteStmt is a prepared statement, which queues each time it runs outside a transaction if it may
// write.
type sqliteStmt struct {
	driverStmt
	c     *sqliteConn
	query string
}

func (s *sqliteStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	t, err := s.c.turn(ctx, s.query)
	if err != nil {
		return nil, err
	}
	res, err := s.driverStmt.ExecContext(ctx, args)
	s.c.wrote(t, err)
	return res, err
}

func (s *sqliteStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	t, err := s.c.turn(ctx, s.query)
	if err != nil {
		return nil, err
	}
	rows, err := s.driverStmt.QueryContext(ctx, args)
	return s.c.holding(t, rows, err)
}

// Exec and Query without a context are never called: database/sql uses the context forms.
func (s *sqliteStmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), namedValues(args))
}

func (s *sqliteStmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), namedValues(args))
}

func namedValues(args []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(args))
	for i, v := range args {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

var (
	_ driverConn = (*sqliteConn)(nil)
	_ driverRows = (*sqliteRows)(nil)
	_ driverStmt = (*sqliteStmt)(nil)
	_ driver.Tx  = (*sqliteTx)(nil)
)

// checkpointEvery is the least time between two checkpoints of one pool.
const checkpointEvery = 100 * time.Millisecond

// walRestartFrames is the length of the WAL, in frames (pages), past which a checkpoint makes it start
// over: the length at which SQLite's own automatic checkpoint runs.
const walRestartFrames = 1000

// checkpointTimeout bounds one checkpoint.
const checkpointTimeout = time.Minute

// checkpointer copies a pool's committed writes from the WAL into the database file in the background,
// so that no commit does. SQLite's own automatic checkpoint (wal_autocheckpoint, off on svc's
// connections) runs inside the COMMIT that takes the WAL past 1000 pages: that commit (one reply in a
// few dozen) returned only once the pages were copied and both files synced, up to 650 ms measured
// on a busy disk, while it held its turn and every writer behind it waited.
//
// At most every checkpointEvery, and only after a write committed, the pool runs a PASSIVE checkpoint,
// which blocks neither readers nor writers, on a connection of its own and outside the write queue.
// When the WAL has grown past walRestartFrames, it copies again what the writers committed during the
// first pass, and then what is left in one turn of the queue, during which nothing commits: the WAL is
// then wholly in the database file, and the next writer starts it over from its beginning (unless a
// reader still reads an older snapshot: then a later checkpoint does). SQLite restarts the WAL only
// so; a checkpoint the writers keep a step behind would leave it growing for as long as they write.
// That last pass copies a few milliseconds' worth of writes; the first ones, all the rest.
//
// Closing the pool ends a checkpoint under way; the last connection to close checkpoints what is
// left, as SQLite always does.
type checkpointer struct {
	db   *sql.DB
	q    *writeQueue
	log  *slog.Logger
	ctx  context.Context // ended when the pool closes
	stop context.CancelFunc
	wg   sync.WaitGroup
	done atomic.Int64 // checkpoints run
	wal  atomic.Int64 // frames in the WAL when the last checkpoint began

	mu      sync.Mutex
	running bool
	last    time.Time // when the last checkpoint started
}

func newCheckpointer(q *writeQueue, log *slog.Logger) *checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	return &checkpointer{q: q, log: log, ctx: ctx, stop: stop}
}

// wrote notes that a write committed: a checkpoint starts unless one runs, one started less than
// checkpointEvery ago, or the pool is closed.
func (k *checkpointer) wrote() {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.running || now.Sub(k.last) < checkpointEvery || k.ctx.Err() != nil {
		return
	}
	k.running, k.last = true, now
	k.wg.Go(func() {
		k.checkpoint()
		k.mu.Lock()
		k.running = false
		k.mu.Unlock()
	})
}

func (k *checkpointer) checkpoint() {
	ctx, cancel := context.WithTimeout(k.ctx, checkpointTimeout)
	defer cancel()
	err := k.run(ctx)
	switch {
	case err == nil:
		k.done.Add(1)
	// sql.DB.Close marks the pool closed before it closes the connector, which stops the checkpointer:
	// a checkpoint that starts in between fails so, and that is the pool closing, not a failure.
	case k.ctx.Err() == nil && k.log != nil && err.Error() != "sql: database is closed":
		k.log.LogAttrs(ctx, slog.LevelWarn, "sqlite checkpoint failed", slog.String("error", err.Error()))
	}
}

func (k *checkpointer) run(ctx context.Context) error {
	var frames int64
	if err := k.pass(ctx, func(c *sqliteConn) (err error) {
		if frames, err = c.checkpoint(ctx); err != nil || frames < walRestartFrames {
			return err
		}
		k.wal.Store(frames)
		_, err = c.checkpoint(ctx)
		return err
	}); err != nil || frames < walRestartFrames {
		return err
	}
	// The turn is taken before the connection, as a writer's is, so that the writer whose turn it is
	// never waits for a connection the checkpointer holds while it waits for its turn.
	turn, err := k.q.acquire(ctx)
	if err != nil {
		return err
	}
	defer turn.release()
	return k.pass(ctx, func(c *sqliteConn) error {
		_, err := c.checkpoint(ctx)
		return err
	})
}

// pass runs f on a connection of the pool.
func (k *checkpointer) pass(ctx context.Context, f func(c *sqliteConn) error) error {
	conn, err := k.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*sqliteConn)
		if !ok {
			return fmt.Errorf("connection %T", dc)
		}
		return f(c)
	})
}

// checkpoint runs a PASSIVE checkpoint on c (outside the write queue: it takes no turn of its own),
// and returns how many frames the WAL holds.
func (c *sqliteConn) checkpoint(ctx context.Context) (frames int64, err error) {
	rows, err := c.driverConn.QueryContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)", nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	vals := make([]driver.Value, 3) // busy, frames in the WAL, frames checkpointed
	if err := rows.Next(vals); err != nil {
		return 0, err
	}
	frames, _ = vals[1].(int64)
	return frames, nil
}

// close ends a checkpoint under way and waits for it; no other starts.
func (k *checkpointer) close() {
	k.mu.Lock()
	k.stop()
	k.mu.Unlock()
	k.wg.Wait()
}
