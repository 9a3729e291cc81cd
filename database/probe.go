package database

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// errProbe ends the write probe's transaction without a commit.
var errProbe = errors.New("write probe: roll back")

// TakesWrites returns nil when db can take a write now, and writes nothing that lasts. Every signed
// request writes (its nonce), so a database that answers reads but cannot take a write (SQLite's write
// lock held by another process; PostgreSQL read-only, or unable to flush its log) must not be reported
// ready. On SQLite a write of this process that committed within recent is proof enough: a probe
// would otherwise wait its turn behind this process's own writers, and fail a replica that is only
// busy. Else it takes the write lock (BEGIN IMMEDIATE, in its turn) and rolls back. On PostgreSQL it
// takes a transaction ID, whose commit is flushed to the log.
func TakesWrites(ctx context.Context, db *gorm.DB, recent time.Duration) error {
	if Dialect(db) == Postgres {
		var xid int64
		if err := db.WithContext(ctx).Raw("SELECT txid_current()").Row().Scan(&xid); err != nil {
			return fmt.Errorf("write probe: %w", err)
		}
		return nil
	}
	if p, ok := db.ConnPool.(*sqlitePool); ok && time.Since(time.Unix(0, p.q.wrote.Load())) < recent {
		return nil
	}
	err := db.WithContext(ctx).Transaction(func(*gorm.DB) error { return errProbe })
	if !errors.Is(err, errProbe) {
		return fmt.Errorf("write probe: %w", err)
	}
	return nil
}
