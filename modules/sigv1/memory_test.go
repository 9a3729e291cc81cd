package sigv1_test

// Tests of the guard's memory (memory.go): changes made elsewhere (another process, here plain SQL on
// the database, which no local Switches or Registry call announces) reach the guard within the bound
// without a restart, the PostgreSQL listener reconnects after its connection is killed, and the guard
// reads the database when reloads fail.

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"
)

// withMemory starts a memory for the world's guard, stopped when the test ends.
func withMemory(t *testing.T, w *world) *sigv1.Memory {
	t.Helper()
	m := sigv1.NewMemory(w.db, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err := m.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Stop(context.Background()) })
	w.guard.UseMemory(m)
	return m
}

// eventually fails the test unless cond holds within d, checking every 20 ms.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// elsewhere runs SQL as another process would: straight on the database.
func elsewhere(t *testing.T, w *world, sql string, args ...any) {
	t.Helper()
	if err := w.db.Exec(sql, args...).Error; err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// writeAnswers reports whether a write by a answers status and code (a new Idempotency-Key each time).
func writeAnswers(t *testing.T, w *world, a agent, status int, code string) func() bool {
	n := 0
	return func() bool {
		n++
		r := w.send(t, a, "POST", writePath, noteBody("m"), "mem-"+strconv.Itoa(n))
		return r.Status == status && (code == "" || r.Code == code)
	}
}

func TestMemorySeesChangesMadeElsewhere(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "remembered")
		m := withMemory(t, w)
		eventually(t, 5*time.Second, "the memory is fresh", m.Fresh)
		eventually(t, 5*time.Second, "a write passes", writeAnswers(t, w, a, 201, ""))

		elsewhere(t, w, `INSERT INTO sigv1_switches (name, set_at) VALUES (?, ?)`, "freeze:agent:"+a.AgentID, time.Now())
		eventually(t, 5*time.Second, "the freeze applies", writeAnswers(t, w, a, 403, "writes_frozen"))
		elsewhere(t, w, `DELETE FROM sigv1_switches WHERE name = ?`, "freeze:agent:"+a.AgentID)
		eventually(t, 5*time.Second, "the unfreeze applies", writeAnswers(t, w, a, 201, ""))

		elsewhere(t, w, `INSERT INTO sigv1_switches (name, set_at) VALUES (?, ?)`, "gate:"+plugin.ChannelEdge+":closed", time.Now())
		eventually(t, 5*time.Second, "the closed gate applies", writeAnswers(t, w, a, 503, "channel_closed"))
		elsewhere(t, w, `DELETE FROM sigv1_switches WHERE name = ?`, "gate:"+plugin.ChannelEdge+":closed")

		elsewhere(t, w, `UPDATE sigv1_agents SET state = ? WHERE id = ?`, sigv1.AgentSuspended, a.AgentID)
		eventually(t, 5*time.Second, "the suspension applies", writeAnswers(t, w, a, 403, "agent_suspended"))
		elsewhere(t, w, `UPDATE sigv1_agents SET state = ? WHERE id = ?`, sigv1.AgentActive, a.AgentID)
		eventually(t, 5*time.Second, "the resumption applies", writeAnswers(t, w, a, 201, ""))

		// A key added elsewhere after the snapshot works at once (looked up in the database), and its
		// revocation applies.
		b := w.newAgent(t, "newcomer")
		testkit.Expect(t, w.send(t, b, "POST", writePath, noteBody("b"), "b1"), 201, "")
		elsewhere(t, w, `UPDATE sigv1_keys SET state = ? WHERE id = ?`, sigv1.KeyRevoked, b.KeyID)
		eventually(t, 5*time.Second, "the revocation applies", writeAnswers(t, w, b, 403, "key_revoked"))
		if !m.Fresh() {
			t.Fatal("the memory is not fresh after the changes")
		}
	})
}

func TestMemoryListenerReconnects(t *testing.T) {
	w := newWorld(t, "postgres")
	a := w.newAgent(t, "listener")
	m := withMemory(t, w)
	listeners := func() []int64 {
		var pids []int64
		if err := w.db.Raw(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query = ?`, "LISTEN "+sigv1.NotifyChannel).Scan(&pids).Error; err != nil {
			t.Fatal(err)
		}
		return pids
	}
	var old []int64
	eventually(t, 10*time.Second, "the listener connects", func() bool { old = listeners(); return m.Listening() && len(old) == 1 })

	var killed bool
	if err := w.db.Raw(`SELECT pg_terminate_backend(?)`, old[0]).Scan(&killed).Error; err != nil || !killed {
		t.Fatalf("terminate the listener: %v %v", killed, err)
	}
	eventually(t, 10*time.Second, "the listener reconnects", func() bool {
		pids := listeners()
		return m.Listening() && len(pids) == 1 && pids[0] != old[0]
	})

	elsewhere(t, w, `INSERT INTO sigv1_switches (name, set_at) VALUES (?, ?)`, "writes:paused", time.Now())
	eventually(t, 5*time.Second, "the pause applies", writeAnswers(t, w, a, 503, "writes_unavailable"))
	elsewhere(t, w, `DELETE FROM sigv1_switches WHERE name = ?`, "writes:paused")
	eventually(t, 5*time.Second, "the pause lifts", writeAnswers(t, w, a, 201, ""))
}

func TestMemoryFallsBackToTheDatabaseWhenReloadsFail(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "fallback")
		m := withMemory(t, w)
		eventually(t, 5*time.Second, "the memory is fresh", m.Fresh)

		m.FailLoads(true)
		eventually(t, 5*time.Second, "the memory goes stale", func() bool { return !m.Fresh() })
		// Stale: every check reads the database, so a change made elsewhere applies at once.
		elsewhere(t, w, `INSERT INTO sigv1_switches (name, set_at) VALUES (?, ?)`, "freeze:all", time.Now())
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("f"), "f1"), 403, "writes_frozen")
		elsewhere(t, w, `DELETE FROM sigv1_switches WHERE name = ?`, "freeze:all")
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("f"), "f2"), 201, "")

		m.FailLoads(false)
		eventually(t, 5*time.Second, "the memory is fresh again", m.Fresh)
		elsewhere(t, w, `INSERT INTO sigv1_switches (name, set_at) VALUES (?, ?)`, "freeze:org:"+a.OrgID, time.Now())
		eventually(t, 5*time.Second, "the freeze applies", writeAnswers(t, w, a, 403, "writes_frozen"))
	})
}

// guardReads counts the statements on the switches, keys and agents run with a context from marked.
type guardReads struct{ n atomic.Int64 }

type markKey struct{}

func (g *guardReads) marked(req *http.Request) *http.Request {
	return req.WithContext(context.WithValue(req.Context(), markKey{}, true))
}

func countGuardReads(t *testing.T, w *world) *guardReads {
	t.Helper()
	g := &guardReads{}
	count := func(db *gorm.DB) {
		if db.Statement.Context.Value(markKey{}) == nil {
			return
		}
		sql := db.Statement.SQL.String()
		if strings.Contains(sql, "sigv1_switches") || strings.Contains(sql, "sigv1_keys") || strings.Contains(sql, "sigv1_agents") {
			g.n.Add(1)
		}
	}
	cb := w.db.Callback()
	for name, err := range map[string]error{
		"query": cb.Query().After("gorm:query").Register("sigv1test:count_query", count),
		"row":   cb.Row().After("gorm:row").Register("sigv1test:count_row", count),
		"raw":   cb.Raw().After("gorm:raw").Register("sigv1test:count_raw", count),
	} {
		if err != nil {
			t.Fatalf("register %s callback: %v", name, err)
		}
	}
	return g
}

// While the memory is fresh, the guard's gate, key and freeze checks read no switch, key or agent from
// the database; while it is stale, they do.
func TestMemoryServesTheGuardWithoutTheDatabase(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "from-memory")
		reads := countGuardReads(t, w)
		m := withMemory(t, w)
		eventually(t, 5*time.Second, "the memory is fresh", m.Fresh)

		// Fresh is checked after the request: a refresh is due at most every PollInterval, so a
		// request that overlapped the snapshot's expiry is tried again.
		n := 0
		eventually(t, 5*time.Second, "a write checked from memory", func() bool {
			n++
			before := reads.n.Load()
			r := w.serve(reads.marked(signed(t, a, "POST", writePath, noteBody("m"), "fresh-"+strconv.Itoa(n))))
			if r.Status != 201 {
				t.Fatalf("write: %d %s", r.Status, r.Body)
			}
			return reads.n.Load() == before && m.Fresh()
		})

		m.FailLoads(true)
		eventually(t, 5*time.Second, "the memory goes stale", func() bool { return !m.Fresh() })
		before := reads.n.Load()
		testkit.Expect(t, w.serve(reads.marked(signed(t, a, "POST", writePath, noteBody("s"), "stale"))), 201, "")
		if got := reads.n.Load() - before; got < 3 {
			t.Fatalf("a write checked while the memory is stale read the state %d times, want the gate, the key and the freezes", got)
		}
	})
}
