package database

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"
)

// len is how many writers wait in q.
func (q *writeQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiters.Len()
}

// isHeld reports whether a writer holds the lock.
func (q *writeQueue) isHeld() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.held
}

// waitFor polls until cond holds, for at most 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting after 10 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Writers get the lock in the order they asked for it.
func TestWriteQueueServesInOrder(t *testing.T) {
	q := &writeQueue{}
	first, err := q.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const n = 20
	served := make(chan int, n)
	for i := range n {
		go func() {
			tk, err := q.acquire(context.Background())
			if err != nil {
				t.Error(err)
				return
			}
			served <- i
			tk.release()
		}()
		waitFor(t, fmt.Sprintf("writer %d to queue", i), func() bool { return q.len() == i+1 })
	}
	first.release()
	for want := range n {
		if got := <-served; got != want {
			t.Fatalf("writer %d served in place %d", got, want)
		}
	}
	// The last writer sends before it releases: wait for its release rather than race it.
	waitFor(t, "the last writer to release", func() bool { return !q.isHeld() })
	if q.len() != 0 {
		t.Fatalf("after every writer: %d waiting", q.len())
	}
}

// A writer whose context ends while it waits leaves the queue with the context's error, and the
// writers behind it move up.
func TestWriteQueueWaiterGivesUp(t *testing.T) {
	q := &writeQueue{}
	holder, _ := q.acquire(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	behind := make(chan error, 1)
	go func() {
		waitFor(t, "the first waiter", func() bool { return q.len() == 1 })
		tk, err := q.acquire(context.Background())
		tk.release()
		behind <- err
	}()
	began := time.Now()
	if _, err := q.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter past its deadline: %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("the waiter gave up after %s", took)
	}
	waitFor(t, "the waiter to leave", func() bool { return q.len() == 1 })
	holder.release()
	if err := <-behind; err != nil {
		t.Fatalf("the writer behind: %v", err)
	}
	if _, err := q.acquire(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a writer whose context ended before it asked: %v", err)
	}
	if q.isHeld() || q.len() != 0 {
		t.Fatalf("held %v, %d waiting", q.isHeld(), q.len())
	}
}

// Writers that give up at any moment, the moment the lock reaches them included, never leave it held.
func TestWriteQueueCancellationsLoseNoTurn(t *testing.T) {
	q := &writeQueue{}
	var wg sync.WaitGroup
	for range 2000 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(rand.IntN(200))*time.Microsecond)
			defer cancel()
			if tk, err := q.acquire(ctx); err == nil {
				tk.release()
				tk.release() // a second release does nothing
			}
		})
	}
	wg.Wait()
	if q.isHeld() || q.len() != 0 {
		t.Fatalf("held %v, %d waiting", q.isHeld(), q.len())
	}
	tk, err := q.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tk.release()
}

func TestMayWrite(t *testing.T) {
	for query, want := range map[string]bool{
		"SELECT 1":                                           false,
		"  select * from t":                                  false,
		"-- a comment\nSELECT 1":                             false,
		"/* hint */ SELECT 1":                                false,
		"(SELECT 1) UNION SELECT 2":                          false,
		"VALUES (1)":                                         false,
		"EXPLAIN QUERY PLAN SELECT 1":                        false,
		"WITH c AS (SELECT 1) SELECT * FROM c":               false,
		"INSERT INTO t VALUES (1)":                           true,
		"insert into t values (1) returning id":              true,
		"UPDATE t SET a = 1":                                 true,
		"DELETE FROM t":                                      true,
		"REPLACE INTO t VALUES (1)":                          true,
		"CREATE TABLE t (a)":                                 true,
		"PRAGMA user_version = 3":                            true,
		"WITH c AS (SELECT 1) INSERT INTO t SELECT * FROM c": true,
		"with c as (select 1) delete from t":                 true,
		"":                                                   true,
		"-- only a comment":                                  true,
	} {
		if got := mayWrite(query); got != want {
			t.Errorf("mayWrite(%q) = %v, want %v", query, got, want)
		}
	}
}

// openQueued opens a SQLite database in a temporary directory with a table t, and returns it with its
// write queue.
func openQueued(t *testing.T, o Options) (*gorm.DB, *writeQueue) {
	t.Helper()
	return openQueuedAt(t, filepath.Join(t.TempDir(), "svc.db"), o)
}

func openQueuedAt(t *testing.T, path string, o Options) (*gorm.DB, *writeQueue) {
	t.Helper()
	db, err := Open("sqlite:"+path, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if s, err := db.DB(); err == nil {
			_ = s.Close()
		}
	})
	if err := db.Exec("CREATE TABLE t (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL)").Error; err != nil {
		t.Fatal(err)
	}
	return db, queueFor(path)
}

// hold begins a write transaction on db and returns it; the caller commits it.
func hold(t *testing.T, db *gorm.DB) *gorm.DB {
	t.Helper()
	tx := db.Begin()
	if tx.Error != nil {
		t.Fatal(tx.Error)
	}
	if err := tx.Exec("INSERT INTO t (seq) VALUES (-1)").Error; err != nil {
		t.Fatal(err)
	}
	return tx
}

// Writers of a SQLite database, transactions and single statements alike, write in the order they
// asked to.
func TestSQLiteWritersServedInOrder(t *testing.T) {
	db, q := openQueued(t, Options{})
	holder := hold(t, db)
	const n = 12
	errs := make(chan error, n)
	for i := range n {
		go func() {
			if i%2 == 0 {
				errs <- db.Transaction(func(tx *gorm.DB) error { return tx.Exec("INSERT INTO t (seq) VALUES (?)", i).Error })
			} else {
				errs <- db.Exec("INSERT INTO t (seq) VALUES (?)", i).Error
			}
		}()
		waitFor(t, fmt.Sprintf("writer %d to queue", i), func() bool { return q.len() == i+1 })
	}
	if err := holder.Commit().Error; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var seqs []int
	if err := db.Raw("SELECT seq FROM t WHERE seq >= 0 ORDER BY id").Scan(&seqs).Error; err != nil {
		t.Fatal(err)
	}
	for i, s := range seqs {
		if s != i {
			t.Fatalf("writes in the order %v", seqs)
		}
	}
	if len(seqs) != n {
		t.Fatalf("%d writes, want %d", len(seqs), n)
	}
}

// Writers waiting their turn hold no connection: the writer whose turn it is may read through the
// pool, even when the waiters outnumber the pool's connections, instead of waiting for a connection
// one of them holds until the timeout ends it.
func TestSQLiteQueuedWritersLeaveConnectionsToTheHolder(t *testing.T) {
	db, q := openQueued(t, Options{MaxOpenConns: 2, Timeout: 30 * time.Second})
	var wg sync.WaitGroup
	err := db.Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO t (seq) VALUES (-1)").Error; err != nil {
			return err
		}
		for i := range 8 {
			wg.Go(func() {
				if err := db.Transaction(func(tx *gorm.DB) error { return tx.Exec("INSERT INTO t (seq) VALUES (?)", i).Error }); err != nil {
					t.Error(err)
				}
			})
			wg.Go(func() {
				if err := db.Exec("INSERT INTO t (seq) VALUES (?)", 100+i).Error; err != nil {
					t.Error(err)
				}
			})
		}
		waitFor(t, "16 writers to queue", func() bool { return q.len() == 16 })
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for range 3 {
			var n int64
			if err := db.WithContext(ctx).Raw("SELECT count(*) FROM t").Scan(&n).Error; err != nil {
				return fmt.Errorf("a read on the pool while 16 writers wait: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	var n int64
	if err := db.Raw("SELECT count(*) FROM t").Scan(&n).Error; err != nil || n != 17 {
		t.Fatalf("%d rows, %v; want 17", n, err)
	}
}

// A transaction's timeout ends its turn when it ends the transaction, not when the code that began it
// returns.
func TestSQLiteTimedOutTransactionEndsItsTurn(t *testing.T) {
	db, _ := openQueued(t, Options{Timeout: 200 * time.Millisecond})
	slow := make(chan error, 1)
	go func() {
		slow <- db.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("INSERT INTO t (seq) VALUES (-1)").Error; err != nil {
				return err
			}
			time.Sleep(time.Second)
			return tx.Exec("INSERT INTO t (seq) VALUES (-2)").Error
		})
	}()
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	began := time.Now()
	if err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		return tx.Exec("INSERT INTO t (seq) VALUES (1)").Error
	}); err != nil {
		t.Fatalf("the writer behind a transaction that timed out: %v", err)
	}
	if took := time.Since(began); took > time.Second {
		t.Fatalf("the writer behind waited %s: the turn outlived the transaction's timeout", took)
	}
	if err := <-slow; err == nil {
		t.Fatal("a transaction past its timeout committed")
	}
	var seqs []int
	if err := db.Raw("SELECT seq FROM t ORDER BY id").Scan(&seqs).Error; err != nil || len(seqs) != 1 || seqs[0] != 1 {
		t.Fatalf("rows %v, %v; want only the second writer's", seqs, err)
	}
}

// Commits leave the WAL to the pool's checkpointer, which copies it into the database file in the
// background.
func TestSQLiteCheckpointsInTheBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc.db")
	db, err := Open("sqlite:"+path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	k := checkpointerOf(t, db)
	idle := func() bool { k.mu.Lock(); defer k.mu.Unlock(); return !k.running }
	var auto int
	if err := db.Raw("PRAGMA wal_autocheckpoint").Scan(&auto).Error; err != nil || auto != 0 {
		t.Fatalf("wal_autocheckpoint = %d, %v; want 0", auto, err)
	}
	if err := db.Exec("CREATE TABLE b (v TEXT)").Error; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the checkpoint of CREATE TABLE", idle)
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before, done := size(), k.done.Load()
	k.mu.Lock()
	k.last = time.Time{} // the next commit starts a checkpoint at once
	k.mu.Unlock()
	if err := db.Transaction(func(tx *gorm.DB) error {
		for range 200 {
			if err := tx.Exec("INSERT INTO b (v) VALUES (?)", strings.Repeat("x", 1000)).Error; err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a checkpoint", func() bool { return k.done.Load() > done && idle() })
	if after := size(); after < before+150_000 {
		t.Fatalf("the database file grew from %d to %d bytes: the 200 KB committed stayed in the WAL", before, after)
	}
	// Closing the pool stops the checkpointer.
	if err := sqlDB.Close(); err != nil {
		t.Fatal(err)
	}
	k.wrote()
	if !idle() {
		t.Fatal("a checkpoint started after the pool closed")
	}
}

// Callers of the *sql.DB itself (the job runner) queue too, in the driver.
func TestSQLiteDirectCallersQueue(t *testing.T) {
	db, q := openQueued(t, Options{BusyTimeout: 20 * time.Millisecond})
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	holder := hold(t, db)
	errs := make(chan error, 3)
	go func() {
		tx, err := sqlDB.BeginTx(context.Background(), nil)
		if err == nil {
			if _, err = tx.Exec("INSERT INTO t (seq) VALUES (1)"); err == nil {
				err = tx.Commit()
			}
		}
		errs <- err
	}()
	go func() {
		_, err := sqlDB.Exec("INSERT INTO t (seq) VALUES (2)")
		errs <- err
	}()
	go func() {
		var id int
		errs <- sqlDB.QueryRow("INSERT INTO t (seq) VALUES (3) RETURNING id").Scan(&id)
	}()
	waitFor(t, "3 writers to queue", func() bool { return q.len() == 3 })
	time.Sleep(100 * time.Millisecond) // five times the busy timeout
	if err := holder.Commit().Error; err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("a writer on the *sql.DB: %v", err)
		}
	}
	// A read-only transaction does not queue.
	holder = hold(t, db)
	defer holder.Rollback()
	tx, err := sqlDB.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := tx.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 4 {
		t.Fatalf("read-only transaction beside a writer: %d, %v", n, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// gorm's writers wait for their turn however long it takes within their timeout, instead of polling
// SQLite's lock until its busy timeout refuses them (SQLITE_BUSY): a transaction, a statement, and a
// statement whose rows are read (INSERT ... RETURNING).
func TestSQLiteWritersQueueInsteadOfPolling(t *testing.T) {
	db, q := openQueued(t, Options{BusyTimeout: 20 * time.Millisecond})
	holder := hold(t, db)
	errs := make(chan error, 3)
	go func() {
		errs <- db.Transaction(func(tx *gorm.DB) error { return tx.Exec("INSERT INTO t (seq) VALUES (1)").Error })
	}()
	go func() { errs <- db.Exec("INSERT INTO t (seq) VALUES (2)").Error }()
	go func() {
		var id int
		errs <- db.Raw("INSERT INTO t (seq) VALUES (3) RETURNING id").Scan(&id).Error
	}()
	waitFor(t, "3 writers to queue", func() bool { return q.len() == 3 })
	time.Sleep(100 * time.Millisecond) // five times the busy timeout
	// Reads do not queue.
	var n int64
	if err := db.Raw("SELECT count(*) FROM t").Scan(&n).Error; err != nil || n != 0 {
		t.Fatalf("a read beside the writers: %d, %v", n, err)
	}
	if err := holder.Commit().Error; err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatalf("a queued writer: %v", err)
		}
	}
	if err := db.Raw("SELECT count(*) FROM t").Scan(&n).Error; err != nil || n != 4 {
		t.Fatalf("%d rows, %v; want 4", n, err)
	}
}

// SQLite has one writer, so a write on the pool from inside a write transaction can never run before
// that transaction ends: it waits in the queue until its timeout, fails with the timeout's error, and
// the transaction goes on.
func TestSQLiteWriteOnThePoolInsideATransactionEndsAtTimeout(t *testing.T) {
	db, q := openQueued(t, Options{Timeout: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second) // the transaction's own
	defer cancel()
	began := time.Now()
	err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO t (seq) VALUES (1)").Error; err != nil {
			return err
		}
		err := db.Exec("INSERT INTO t (seq) VALUES (2)").Error
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("a write on the pool inside a transaction: %v, want context.DeadlineExceeded", err)
		}
		// Reads on the pool are served.
		var n int64
		return db.Raw("SELECT count(*) FROM t").Scan(&n).Error
	})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("took %s", took)
	}
	if q.len() != 0 {
		t.Fatalf("%d writers still wait", q.len())
	}
	var seqs []int
	if err := db.Raw("SELECT seq FROM t").Scan(&seqs).Error; err != nil || len(seqs) != 1 || seqs[0] != 1 {
		t.Fatalf("rows %v, %v; want the transaction's", seqs, err)
	}
}

// While writers keep committing, checkpoints still let the WAL start over, instead of leaving it
// growing with every commit.
func TestSQLiteWALStartsOverUnderSteadyWrites(t *testing.T) {
	db, _ := openQueued(t, Options{})
	k := checkpointerOf(t, db)
	if err := db.Exec("CREATE TABLE b (v TEXT)").Error; err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.Exec("INSERT INTO b (v) VALUES (?)", strings.Repeat("x", 2000)).Error; err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	var longest int64
	waitFor(t, "the WAL to start over", func() bool {
		n := k.wal.Load()
		if n < longest {
			return true
		}
		longest = n
		return false
	})
}

// checkpointerOf returns the checkpointer of db's pool.
func checkpointerOf(t *testing.T, db *gorm.DB) *checkpointer {
	t.Helper()
	sqlDB, err := db.DB()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := sqlDB.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var k *checkpointer
	if err := conn.Raw(func(dc any) error { k = dc.(*sqliteConn).k; return nil }); err != nil {
		t.Fatal(err)
	}
	return k
}

// A pool of one connection serves its writers and its checkpoints without either waiting for the
// other's connection.
func TestSQLiteOneConnectionPool(t *testing.T) {
	db, _ := openQueued(t, Options{MaxOpenConns: 1, Timeout: 3 * time.Second})
	k := checkpointerOf(t, db)
	if err := db.Exec("CREATE TABLE b (v TEXT)").Error; err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := db.Transaction(func(tx *gorm.DB) error {
					return tx.Exec("INSERT INTO b (v) VALUES (?)", strings.Repeat("x", 2000)).Error
				}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// A transaction of more than walRestartFrames pages, so that a checkpoint takes a turn.
	if err := db.Transaction(func(tx *gorm.DB) error {
		return tx.Exec("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) INSERT INTO b (v) SELECT printf('%.2000c', 'y') FROM n").Error
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a checkpoint of a long WAL", func() bool { return k.wal.Load() >= walRestartFrames })
	done := k.done.Load()
	waitFor(t, "it to end", func() bool { return k.done.Load() > done })
	time.Sleep(100 * time.Millisecond) // and the writers to go on after it
	close(stop)
	wg.Wait()
}
