package database_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// Every PostgreSQL connection carries the pool's timeout as the server's statement, lock and
// idle-transaction timeouts, unless the URL names them.
func TestServerTimeoutsOnPostgres(t *testing.T) {
	u := dbtest.URL(t, database.Postgres)
	db := open(t, u, database.Options{Timeout: 1500 * time.Millisecond})
	for _, name := range []string{"statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"} {
		if got := show(t, db, name); got != "1500ms" {
			t.Errorf("SHOW %s = %q, want 1500ms", name, got)
		}
	}
	// The operator's own value wins.
	db = open(t, u+"&statement_timeout=7000", database.Options{Timeout: time.Second})
	if got := show(t, db, "statement_timeout"); got != "7s" {
		t.Errorf("SHOW statement_timeout = %q, want the URL's 7s", got)
	}
	// The server ends a statement that runs past it (57014), which is answered 503.
	db = open(t, u, database.Options{Timeout: 300 * time.Millisecond})
	err := db.Exec("SELECT pg_sleep(3)").Error
	if err == nil || !render.Unavailable(err) {
		t.Fatalf("a statement past the timeout: %v, want an error answered 503", err)
	}
}

// A statement on a database that stops answering (its connection open, nothing coming back: a
// paused container, a partition) fails within the pool's timeout instead of hanging, and the error is
// answered 503; so does a transaction. When the database answers again, the pool recovers.
func TestFrozenDatabaseFailsWithinTimeout(t *testing.T) {
	target, err := url.Parse(dbtest.URL(t, database.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	p := newFreezer(t, target.Host)
	target.Host = p.addr
	const timeout = 500 * time.Millisecond
	db := open(t, target.String(), database.Options{Timeout: timeout, MaxOpenConns: 4})
	var one int
	if err := db.Raw("SELECT 1").Scan(&one).Error; err != nil || one != 1 {
		t.Fatalf("SELECT 1 before the freeze: %d, %v", one, err)
	}

	p.freeze()
	// The bound each call must keep: the timeout, plus the second the driver gives a cancelled query
	// to be cancelled on the server before it closes the connection, plus scheduling slack.
	bound := timeout + 2*time.Second
	for name, call := range map[string]func(context.Context) error{
		"statement": func(ctx context.Context) error { return db.WithContext(ctx).Raw("SELECT 1").Scan(&one).Error },
		"transaction": func(ctx context.Context) error {
			return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return tx.Exec("SELECT 1").Error })
		},
		// A context that can never be cancelled (a claim released after its request ended) is bounded too.
		"detached": func(ctx context.Context) error {
			return db.WithContext(context.WithoutCancel(ctx)).Exec("SELECT 1").Error
		},
	} {
		done := make(chan error, 1)
		go func() { done <- call(context.Background()) }()
		select {
		case err := <-done:
			if err == nil || !render.Unavailable(err) {
				t.Errorf("%s on a frozen database: %v, want an error answered 503", name, err)
			}
		case <-time.After(bound):
			t.Fatalf("%s on a frozen database still runs after %s", name, bound)
		}
	}

	p.thaw()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := db.Raw("SELECT 1").Scan(&one).Error
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool did not recover after the database answered again: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Migrations may wait and work longer than the timeout every connection has; the connection they
// pinned goes back to the pool with the timeouts restored.
func TestMigrationsLiftServerTimeouts(t *testing.T) {
	db := open(t, dbtest.URL(t, database.Postgres), database.Options{Timeout: 200 * time.Millisecond, MaxOpenConns: 1})
	slow := plugin.Migrations{Module: "demo", Steps: []*gormigrate.Migration{{ID: "demo_0001_slow", Migrate: func(tx *gorm.DB) error {
		return tx.Exec("SELECT pg_sleep(0.6)").Error
	}}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := database.Migrate(ctx, db, []plugin.Migrations{slow}); err != nil {
		t.Fatalf("a migration longer than the statement timeout: %v", err)
	}
	if got := show(t, db, "statement_timeout"); got != "200ms" {
		t.Errorf("after migrating, the pooled connection's statement_timeout is %q, want 200ms", got)
	}
}

// A slow statement is logged by where svc ran it, never with its values.
func TestSlowStatementLogHasNoValues(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		var logged strings.Builder
		log := newTestLogger(&logged)
		db := open(t, dbtest.URL(t, dialect), database.Options{SlowThreshold: time.Nanosecond, Logger: log})
		const secret = "-----BEGIN PRIVATE KEY----- agent text"
		var got string
		if err := db.Raw("SELECT ?", secret).Scan(&got).Error; err != nil || got != secret {
			t.Fatalf("SELECT: %q, %v", got, err)
		}
		out := logged.String()
		if !strings.Contains(out, "slow statement") || !strings.Contains(out, "timeouts_test.go:") {
			t.Fatalf("no slow statement logged: %s", out)
		}
		if strings.Contains(out, "PRIVATE KEY") || strings.Contains(out, "agent text") {
			t.Fatalf("a statement's value was logged: %s", out)
		}
	})
}

func open(t *testing.T, u string, o database.Options) *gorm.DB {
	t.Helper()
	db, err := database.Open(u, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			_ = s.Close()
		}
	})
	return db
}

func show(t *testing.T, db *gorm.DB, name string) string {
	t.Helper()
	var v string
	if err := db.Raw("SHOW " + name).Scan(&v).Error; err != nil {
		t.Fatalf("SHOW %s: %v", name, err)
	}
	return v
}

// A connection whose stream ends while a query waits for its answer, without a word from the server
// (PostgreSQL killed with SIGKILL, or its host gone), fails the write transaction with an error
// answered 503, not 500: the driver alone would report a bare io.ErrUnexpectedEOF, which says nothing
// of where it came from.
func TestConnectionEndedWithoutAnswer(t *testing.T) {
	u := dbtest.URL(t, database.Postgres)
	target, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	p := newFreezer(t, target.Host)
	target.Host = p.addr
	db := open(t, target.String(), database.Options{Timeout: 30 * time.Second, MaxOpenConns: 1})
	direct := open(t, u, database.Options{})

	done := make(chan error, 1)
	go func() {
		done <- db.Transaction(func(tx *gorm.DB) error {
			var n int
			return tx.Raw("SELECT 1 FROM pg_sleep(3)").Scan(&n).Error
		})
	}()
	// Once the server sleeps in the query (not merely parses it), the driver waits for its answer: end
	// the stream then.
	deadline := time.Now().Add(10 * time.Second)
	for {
		var sleeping int64
		if err := direct.Raw("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event = 'PgSleep'").Scan(&sleeping).Error; err != nil {
			t.Fatal(err)
		}
		if sleeping > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the query did not start within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.sever()
	select {
	case err := <-done:
		if err == nil || !render.Unavailable(err) {
			t.Fatalf("a transaction whose connection ended without an answer: %v, want an error answered 503", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a transaction whose connection ended still runs after 10 s")
	}
}

// freezer is a TCP proxy to a database that can stop forwarding in both directions, its connections
// left open: the database, as its clients see it, stops answering. It can also end its clients'
// connections (sever), as a database that dies without a word does.
type freezer struct {
	addr    string
	target  string
	gate    sync.RWMutex // held for writing while frozen; each forwarded chunk holds it for reading
	mu      sync.Mutex
	frozen  bool
	closed  bool // the test ended: no more connections
	clients map[net.Conn]bool
}

// sever closes every client connection: each client sees its stream end (a FIN, no error message).
func (f *freezer) sever() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.clients {
		_ = c.Close()
	}
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{addr: ln.Addr().String(), target: target}
	var conns sync.WaitGroup
	t.Cleanup(func() {
		f.thaw()
		// A connection accepted from now on is not forwarded: conns.Add must not race conns.Wait.
		f.mu.Lock()
		f.closed = true
		f.mu.Unlock()
		ln.Close()
		conns.Wait()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.mu.Lock()
			if f.closed {
				f.mu.Unlock()
				c.Close()
				return
			}
			conns.Add(1)
			f.mu.Unlock()
			go func() {
				defer conns.Done()
				f.forward(t.Context(), c)
			}()
		}
	}()
	return f
}

func (f *freezer) freeze() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.frozen {
		f.gate.Lock()
		f.frozen = true
	}
}

func (f *freezer) thaw() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.frozen {
		f.gate.Unlock()
		f.frozen = false
	}
}

func (f *freezer) forward(ctx context.Context, client net.Conn) {
	defer client.Close()
	f.mu.Lock()
	if f.clients == nil {
		f.clients = map[net.Conn]bool{}
	}
	f.clients[client] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.clients, client)
		f.mu.Unlock()
	}()
	var d net.Dialer
	server, err := d.DialContext(ctx, "tcp", f.target)
	if err != nil {
		return
	}
	defer server.Close()
	stop := context.AfterFunc(ctx, func() { client.Close(); server.Close() })
	defer stop()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				f.gate.RLock()
				_, werr := dst.Write(buf[:n])
				f.gate.RUnlock()
				if werr != nil {
					break
				}
			}
			if err != nil {
				break
			}
		}
		_ = dst.Close()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
}

// newTestLogger returns a logger writing JSON lines to w, safe for concurrent use.
func newTestLogger(w *strings.Builder) *slog.Logger {
	return slog.New(slog.NewJSONHandler(&lockedWriter{w: w}, nil))
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// On SQLite too, a statement that runs past the timeout is interrupted, and answered 503.
func TestSQLiteLongStatementEndsAtTimeout(t *testing.T) {
	db := open(t, dbtest.URL(t, database.SQLite), database.Options{Timeout: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() {
		var n int64
		done <- db.Raw("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 10000000000) SELECT count(*) FROM c").Scan(&n).Error
	}()
	select {
	case err := <-done:
		if err == nil || !render.Unavailable(err) {
			t.Fatalf("a statement past the timeout: %v, want an error answered 503", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a statement past the timeout still runs after 10 s")
	}
}

// A connection dropped in the middle of a write transaction (its backend terminated, as a restart or a
// failover does) fails the transaction with an error answered 503, not 500, and commits nothing.
func TestConnectionDroppedMidTransaction(t *testing.T) {
	db := dbtest.Open(t, database.Postgres, widgetSteps())
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&widget{Name: "half-written"}).Error; err != nil {
			return err
		}
		var pid int
		if err := tx.Raw("SELECT pg_backend_pid()").Scan(&pid).Error; err != nil {
			return err
		}
		var ok bool
		if err := db.Raw("SELECT pg_terminate_backend(?)", pid).Scan(&ok).Error; err != nil || !ok {
			t.Fatalf("terminate the backend: %v, %v", ok, err)
		}
		return tx.Create(&widget{Name: "after the drop"}).Error
	})
	if err == nil || !render.Unavailable(err) {
		t.Fatalf("a transaction whose connection dropped: %v, want an error answered 503", err)
	}
	var n int64
	if err := db.Model(&widget{}).Where("name <> ?", "first").Count(&n).Error; err != nil || n != 0 {
		t.Fatalf("rows written by the dropped transaction: %d (%v)", n, err)
	}
}
