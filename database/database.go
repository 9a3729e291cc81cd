// Package database opens svc's database of record (PostgreSQL) or its zero-setup default (an embedded,
// pure-Go SQLite file) behind one *gorm.DB, and applies modules' migrations. It is shared by the host
// and by modules' store tests (through dbtest), so it imports no module.
package database

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
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
	// BusyTimeout is how long a SQLite writer waits for the write lock.
	BusyTimeout time.Duration
	// Logger receives gorm's warnings (slow queries); nil discards them.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 16
	}
	if o.MaxIdleConns <= 0 {
		o.MaxIdleConns = min(4, o.MaxOpenConns)
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
// SQLite it creates the file's directory and opens the file in WAL mode with a busy timeout, foreign
// keys on, and immediate write transactions so that concurrent writers queue instead of failing.
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
		NowFunc:                func() time.Time { return time.Now().UTC() },
		Logger:                 gormLogger(o.Logger),
	}
	var dial gorm.Dialector
	switch dialect {
	case Postgres:
		dial = postgres.New(postgres.Config{DSN: withConnectTimeout(dsn)})
	case SQLite:
		if dir := filepath.Dir(dsn); dir != "" {
			if err := os.MkdirAll(dir, 0o750); err != nil {
				return nil, fmt.Errorf("create sqlite directory: %w", err)
			}
		}
		dial = sqlite.Open(dsn + "?" + strings.Join([]string{
			fmt.Sprintf("_pragma=busy_timeout(%d)", o.BusyTimeout.Milliseconds()),
			"_pragma=journal_mode(WAL)",
			"_pragma=synchronous(NORMAL)",
			"_pragma=foreign_keys(1)",
			"_txlock=immediate",
		}, "&"))
	}
	db, err := gorm.Open(dial, cfg)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	sqlDB.SetMaxOpenConns(o.MaxOpenConns)
	sqlDB.SetMaxIdleConns(o.MaxIdleConns)
	sqlDB.SetConnMaxLifetime(o.ConnMaxLifetime)
	sqlDB.SetConnMaxIdleTime(o.ConnMaxIdleTime)
	return db, nil
}

// Dialect names the dialect of an open database.
func Dialect(db *gorm.DB) string {
	if db.Dialector.Name() == "postgres" {
		return Postgres
	}
	return SQLite
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

// gormLogger reports slow statements only: a failed statement's error is returned to its caller, which
// classifies and logs it once.
func gormLogger(l *slog.Logger) logger.Interface {
	if l == nil {
		return logger.Discard
	}
	return slowOnly{logger.NewSlogLogger(l, logger.Config{SlowThreshold: 500 * time.Millisecond, LogLevel: logger.Warn})}
}

type slowOnly struct{ logger.Interface }

func (s slowOnly) LogMode(level logger.LogLevel) logger.Interface {
	return slowOnly{s.Interface.LogMode(level)}
}

func (s slowOnly) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), _ error) {
	s.Interface.Trace(ctx, begin, fc, nil)
}

// connectTimeout bounds a new connection to PostgreSQL unless the URL sets connect_timeout: a database
// whose address stopped answering (a stopped container, a dead host) must fail a request quickly
// (503) rather than hang it until the operating system gives up.
const connectTimeout = "5"

func withConnectTimeout(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Query().Has("connect_timeout") {
		return dsn
	}
	q := u.Query()
	q.Set("connect_timeout", connectTimeout)
	u.RawQuery = q.Encode()
	return u.String()
}
