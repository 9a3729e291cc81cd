package forum

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"sync/atomic"

	"gorm.io/gorm"

	"github.com/svcforum/svc/database"
)

// NotifyChannel is the PostgreSQL channel that every change to the forum's tables notifies
// (migration forum_0008): the read caches of every replica listen on it.
const NotifyChannel = "svc_forum"

// contentToken is the version of the forum's content a cached read was built at: it is served again
// only while the token is unchanged.
type contentToken struct {
	gen uint64 // this process's generation: local writes, notifications, reconnections
	row int64  // SQLite: forum_content_version's row, which every change bumps
}

// ContentVersion tells the read cache whether the forum's content changed. On PostgreSQL a trigger
// on every forum table notifies NotifyChannel when a change commits; a listener bumps the generation
// on each notification and on every (re)connection, and while it is not connected the cache is not
// used. On SQLite, where no notification exists, the same triggers bump a version row that each read
// checks (a read of one row in process, no network). Writes of this process bump the generation as
// soon as they commit, so that a replica reads its own writes at once.
type ContentVersion struct {
	db        *gorm.DB
	notifies  bool   // PostgreSQL notifies changes; else (SQLite) the version row is read
	dsn       string // where to listen for them: "" where there is nowhere to
	log       *slog.Logger
	gen       atomic.Uint64
	listening atomic.Bool

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// NewContentVersion returns the version on db (the writes' pool); Start begins listening.
func NewContentVersion(db *gorm.DB, log *slog.Logger) *ContentVersion {
	d := dialectOf(db)
	return &ContentVersion{db: db, notifies: d.notifies(), dsn: d.listenDSN(db), log: log}
}

// Start listens on NotifyChannel on PostgreSQL, until Stop.
func (v *ContentVersion) Start(context.Context) error {
	if v.dsn == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	v.done.Go(func() { v.listen(ctx, v.dsn) })
	return nil
}

// Stop ends the listener.
func (v *ContentVersion) Stop(context.Context) error {
	if v.cancel != nil {
		v.cancel()
		v.done.Wait()
	}
	return nil
}

// Changed records that this process changed the forum's content (a write committed).
func (v *ContentVersion) Changed() {
	if v != nil {
		v.gen.Add(1)
	}
}

// token returns the current version, and whether cached reads may be served and stored now.
func (v *ContentVersion) token(ctx context.Context, row *versionRow) (contentToken, bool) {
	t := contentToken{gen: v.gen.Load()}
	if v.notifies {
		return t, v.listening.Load()
	}
	var err error
	if t.row, err = row.read(ctx); err != nil {
		return t, false
	}
	return t, true
}

// versionRow reads SQLite's version row through a statement prepared on first use and kept: parsing
// the query on every cached read was nine tenths of the read's time.
type versionRow struct {
	db   *gorm.DB
	mu   sync.Mutex
	stmt atomic.Pointer[sql.Stmt]
}

const versionRowSQL = `SELECT version FROM forum_content_version WHERE id = 1`

func (r *versionRow) read(ctx context.Context) (int64, error) {
	stmt := r.stmt.Load()
	if stmt == nil {
		var err error
		if stmt, err = r.prepare(ctx); err != nil {
			return 0, err
		}
	}
	var version int64
	err := stmt.QueryRowContext(ctx).Scan(&version)
	return version, err
}

// prepare prepares the statement once; a failure (the table not migrated yet) is tried again on the
// next read.
func (r *versionRow) prepare(ctx context.Context) (*sql.Stmt, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if stmt := r.stmt.Load(); stmt != nil {
		return stmt, nil
	}
	pool, err := r.db.DB()
	if err != nil {
		return nil, err
	}
	stmt, err := pool.PrepareContext(ctx, versionRowSQL)
	if err != nil {
		return nil, err
	}
	r.stmt.Store(stmt)
	return stmt, nil
}

// listen keeps a connection listening on NotifyChannel (database.Listen), bumping the generation on
// every notification and every new connection (changes may have been missed while down), and logs
// each change of state once.
func (v *ContentVersion) listen(ctx context.Context, dsn string) {
	down := false // logged as down since the last connection
	database.Listen(ctx, dsn, NotifyChannel, func(connected bool, err error) {
		switch {
		case connected:
			v.gen.Add(1)
			if !v.listening.Swap(true) {
				v.log.Info("forum read cache: listening for changes on " + NotifyChannel)
			}
		case v.listening.Swap(false) || !down:
			down = true
			v.log.Warn("forum read cache: listener not connected; reads go to the database until it reconnects", "error", err)
		}
	}, func() { v.gen.Add(1) })
}
