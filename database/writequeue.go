package database

import (
	"container/list"
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"weak"
)

// writeQueue lets a SQLite database's writers take its one write lock in the order they asked for it,
// each waiting its turn on a channel instead of polling in SQLite's busy handler (see the package
// documentation for why). A writer holds a ticket from the moment it leaves the queue until its
// transaction ends (or its statement, outside a transaction), and release hands the lock straight to
// the oldest waiter; a waiter whose context ends leaves the queue with the context's error. There is one
// queue per database file in the process (queueFor), shared by every pool opened on the file; another
// process writing the file still meets SQLite's busy handler, which stays set.
type writeQueue struct {
	mu      sync.Mutex
	held    bool      // a ticket holds the lock; while it is false, waiters is empty
	waiters list.List // of *ticket, oldest first
	// wrote is when a write of this process last committed (Unix nanoseconds): proof the database takes
	// writes (TakesWrites), without a probe that waits its turn behind them.
	wrote atomic.Int64
}

// ticket is one writer's turn.
type ticket struct {
	q        *writeQueue
	ready    chan struct{} // closed when the lock is handed to this ticket
	waiting  *list.Element // its place in q.waiters while it waits; guarded by q.mu
	released atomic.Bool
	// adopted is set by the driver's transaction, rows or statement that took the ticket over from
	// the call that queued for it (see withTicket): from then on that object releases it.
	adopted atomic.Bool
}

// acquire waits for the lock, in the order of arrival, until ctx ends.
func (q *writeQueue) acquire(ctx context.Context) (*ticket, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := &ticket{q: q}
	q.mu.Lock()
	if !q.held {
		q.held = true
		q.mu.Unlock()
		return t, nil
	}
	t.ready = make(chan struct{})
	t.waiting = q.waiters.PushBack(t)
	q.mu.Unlock()
	select {
	case <-t.ready:
		return t, nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	if t.waiting != nil { // still in the queue: leave it
		q.waiters.Remove(t.waiting)
		t.waiting = nil
		q.mu.Unlock()
		return nil, ctx.Err()
	}
	q.mu.Unlock()
	t.release() // the lock was handed over as ctx ended: pass it on
	return nil, ctx.Err()
}

// release hands the lock to the oldest waiter, or frees it. Only its first call does anything.
func (t *ticket) release() {
	if t == nil || !t.released.CompareAndSwap(false, true) {
		return
	}
	q := t.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if e := q.waiters.Front(); e != nil {
		next := q.waiters.Remove(e).(*ticket)
		next.waiting = nil
		close(next.ready)
		return
	}
	q.held = false
}

// ticketKey carries, in the context of one call into database/sql, the ticket the call queued for
// before it asked the pool for a connection.
type ticketKey struct{}

func withTicket(ctx context.Context, t *ticket) context.Context {
	return context.WithValue(ctx, ticketKey{}, t)
}

// adoptTicket returns the ticket ctx carries, which the caller's transaction, rows or statement then
// owns and must release; nil when ctx carries none or it was adopted already.
func adoptTicket(ctx context.Context) *ticket {
	t, _ := ctx.Value(ticketKey{}).(*ticket)
	if t == nil || !t.adopted.CompareAndSwap(false, true) {
		return nil
	}
	return t
}

// queues holds the write queue of each SQLite file a pool of this process has open, by absolute path.
// An entry lives as long as a pool on its file does.
var queues = struct {
	sync.Mutex
	m map[string]weak.Pointer[writeQueue]
}{m: map[string]weak.Pointer[writeQueue]{}}

// queueFor returns the write queue of the SQLite file at path.
func queueFor(path string) *writeQueue {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	queues.Lock()
	defer queues.Unlock()
	if q := queues.m[path].Value(); q != nil {
		return q
	}
	q := &writeQueue{}
	wp := weak.Make(q)
	queues.m[path] = wp
	runtime.AddCleanup(q, func(path string) {
		queues.Lock()
		defer queues.Unlock()
		if queues.m[path] == wp {
			delete(queues.m, path)
		}
	}, path)
	return q
}

// mayWrite reports whether a SQLite statement may write, and so must queue for the write lock: any
// statement but a SELECT, VALUES or EXPLAIN, or a WITH that names no INSERT, UPDATE, DELETE or
// REPLACE. It errs towards writing: a read taken for a write only waits its turn needlessly, while a
// write taken for a read would meet SQLite's busy handler.
func mayWrite(query string) bool {
	q := skipSpaceAndComments(query)
	end := 0
	for end < len(q) && isWordByte(q[end]) {
		end++
	}
	switch strings.ToUpper(q[:end]) {
	case "SELECT", "VALUES", "EXPLAIN":
		return false
	case "WITH":
		for w := range words(q[end:]) {
			switch strings.ToUpper(w) {
			case "INSERT", "UPDATE", "DELETE", "REPLACE":
				return true
			}
		}
		return false
	}
	return true
}

func skipSpaceAndComments(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n\f(")
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q[2:], "*/")
			if i < 0 {
				return ""
			}
			q = q[i+4:]
		default:
			return q
		}
	}
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// words yields the runs of word characters of s.
func words(s string) func(yield func(string) bool) {
	return func(yield func(string) bool) {
		for i := 0; i < len(s); {
			if !isWordByte(s[i]) {
				i++
				continue
			}
			j := i
			for j < len(s) && isWordByte(s[j]) {
				j++
			}
			if !yield(s[i:j]) {
				return
			}
			i = j
		}
	}
}
