package forum

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"gorm.io/driver/postgres"
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
	log       *slog.Logger
	gen       atomic.Uint64
	listening atomic.Bool

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// NewContentVersion returns the version on db (the writes' pool); Start begins listening.
func NewContentVersion(db *gorm.DB, log *slog.Logger) *ContentVersion {
	return &ContentVersion{db: db, log: log}
}

// Start listens on NotifyChannel on PostgreSQL, until Stop.
func (v *ContentVersion) Start(context.Context) error {
	d, ok := v.db.Dialector.(*postgres.Dialector)
	if !ok || d.Config == nil || d.DSN == "" {
		return nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	v.cancel = cancel
	v.done.Go(func() { v.listen(ctx, d.DSN) })
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
func (v *ContentVersion) token(ctx context.Context, read *gorm.DB) (contentToken, bool) {
	t := contentToken{gen: v.gen.Load()}
	if database.Dialect(v.db) == database.Postgres {
		return t, v.listening.Load()
	}
	if err := read.WithContext(ctx).Raw(`SELECT version FROM forum_content_version WHERE id = 1`).Scan(&t.row).Error; err != nil {
		return t, false
	}
	return t, true
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
