package forum_test

// Tests of the operator's thread moderation (svc admin thread lock|unlock|move): what a locked thread
// refuses and keeps, a move's thread counts, the commands' output, and that every replica's read
// cache shows a change at once although the command tells no running server.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// adminRun runs `svc admin args...` of the forum on w's database, as the host's invoke would (a one-off
// process: it shares no content version with the world), and returns what it printed.
func adminRun(t *testing.T, w *world, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	invoke := func(ctx context.Context, _ *cli.Command, fn any) error {
		return fn.(func(context.Context, *gorm.DB, port.Clock) error)(ctx, w.db, w.clock)
	}
	root := &cli.Command{Name: "admin", Writer: &out, Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}}, Commands: forum.Admin(invoke)}
	err := root.Run(context.Background(), append([]string{"admin", "--json"}, args...))
	return out.String(), err
}

func adminState(t *testing.T, w *world, args ...string) forum.ThreadState {
	t.Helper()
	out, err := adminRun(t, w, args...)
	if err != nil {
		t.Fatalf("admin %v: %v", args, err)
	}
	var s forum.ThreadState
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("admin %v printed %q: %v", args, out, err)
	}
	return s
}

// TestThreadLock: a locked thread takes no reply, vote, vote clear, tombstone or image change, on
// itself or on its replies (403 thread_locked, nothing charged or changed), stays readable, and takes
// them again once unlocked.
func TestThreadLock(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a, b := newAgent("locksmith"), newAgent("visitor")
		cat := w.category(t, "soups")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")
		w.vote(t, b, forum.KindReply, reply, "up")
		other := w.thread(t, a, cat)

		s := adminState(t, w, "thread", "lock", thread)
		if s.ThreadID != thread || !s.Locked || s.LockedAt == nil || !s.LockedAt.Equal(w.clock.Now()) || s.CategorySlug != "soups" {
			t.Fatalf("lock printed %+v", s)
		}
		// Locking again keeps the first lock time.
		w.clock.Add(60e9)
		if again := adminState(t, w, "thread", "lock", thread); !again.LockedAt.Equal(*s.LockedAt) {
			t.Fatalf("locked again: %+v, first %+v", again, s)
		}

		before := w.state(t)
		locked := func(r testkit.Result) {
			t.Helper()
			testkit.Expect(t, r, http.StatusForbidden, "thread_locked")
		}
		locked(w.post(t, b, forum.RepliesPath, replyBody(thread, "")))
		locked(w.post(t, b, forum.RepliesPath, replyBody(thread, reply)))
		locked(w.post(t, b, forum.VotesPath, targetBody(forum.KindThread, thread, "up")))
		locked(w.post(t, b, forum.VotesPath, targetBody(forum.KindReply, reply, "down")))
		locked(w.post(t, b, forum.ClearPath, targetBody(forum.KindReply, reply, "")))
		locked(w.post(t, a, forum.TombstonePath, targetBody(forum.KindReply, reply, "")))
		locked(w.put(t, a, forum.KindThread, thread))
		locked(w.put(t, a, forum.KindReply, reply))
		w.unchanged(t, before)

		// It stays readable, with its reply; the other thread of the category takes writes.
		if got := w.getThread(t, thread); got.ReplyCount != 1 || got.Title == nil {
			t.Fatalf("the locked thread reads %+v", got)
		}
		w.getReply(t, reply)
		w.reply(t, b, other, "")

		if s := adminState(t, w, "thread", "unlock", thread); s.Locked || s.LockedAt != nil {
			t.Fatalf("unlock printed %+v", s)
		}
		w.reply(t, b, thread, reply)
		w.vote(t, b, forum.KindThread, thread, "up")

		// An unknown thread, or a missing argument, is refused on one line.
		if _, err := adminRun(t, w, "thread", "lock", newID()); err == nil || !strings.Contains(err.Error(), "not_found") {
			t.Fatalf("lock of an unknown thread: %v", err)
		}
		if _, err := adminRun(t, w, "thread", "unlock"); err == nil {
			t.Fatal("unlock without THREAD_ID ran")
		}
	})
}

// TestThreadMove: a move changes the thread's category and both categories' thread counts together;
// moving it where it is changes nothing; an unknown category or thread changes nothing.
func TestThreadMove(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := newAgent("mover")
		soups, stews := w.category(t, "soups"), w.category(t, "stews")
		thread := w.thread(t, a, soups)
		w.thread(t, a, soups)
		w.reply(t, a, thread, "")
		counts := func() map[string]int64 {
			t.Helper()
			var list struct {
				Categories []forum.Category `json:"categories"`
			}
			w.read(t, forum.CategoriesPath, "category-list", &list)
			out := map[string]int64{}
			for _, c := range list.Categories {
				out[c.Slug] = c.ThreadCount
			}
			return out
		}
		if c := counts(); c["soups"] != 2 || c["stews"] != 0 {
			t.Fatalf("before: %v", c)
		}

		s := adminState(t, w, "thread", "move", thread, "--category", "stews")
		if s.CategorySlug != "stews" || s.MovedFrom != "soups" || s.Locked {
			t.Fatalf("move printed %+v", s)
		}
		// The read plane shows it once the change reaches its cache: at once on SQLite, through the
		// notification on PostgreSQL (the command is another process in production).
		deadline := time.Now().Add(10 * time.Second)
		for c := counts(); c["soups"] != 1 || c["stews"] != 1; c = counts() {
			if time.Now().After(deadline) {
				t.Fatalf("after the move: %v", c)
			}
			time.Sleep(10 * time.Millisecond)
		}
		if got := w.getThread(t, thread); got.CategoryID != stews || got.CategorySlug != "stews" || got.ReplyCount != 1 {
			t.Fatalf("the moved thread reads %+v", got)
		}

		before := w.state(t)
		if s := adminState(t, w, "thread", "move", thread, "--category", "stews"); s.MovedFrom != "" || s.CategorySlug != "stews" {
			t.Fatalf("a move where it is: %+v", s)
		}
		for _, args := range [][]string{
			{"thread", "move", thread, "--category", "nope"},
			{"thread", "move", newID(), "--category", "soups"},
			{"thread", "move", thread},
		} {
			if _, err := adminRun(t, w, args...); err == nil {
				t.Fatalf("%v ran", args)
			}
		}
		w.unchanged(t, before)

		// The thread takes writes in its new category's state: archived, none.
		w.setState(t, "stews", forum.CategoryArchived)
		testkit.Expect(t, w.post(t, a, forum.RepliesPath, replyBody(thread, "")), http.StatusForbidden, "category_not_open")
	})
}

// TestThreadAdminReachesReadCaches: the admin command tells no running server, yet another replica's
// cache drops its answers at once after a lock, an unlock and a move: on SQLite the content-version
// triggers bump the version row each read checks, on PostgreSQL they notify every replica's listener.
func TestThreadAdminReachesReadCaches(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := newAgent("cached")
		thread := w.thread(t, a, w.category(t, "soups"))
		w.category(t, "stews")
		r := rcNewReplica(t, w)
		path := forum.ThreadPath + "/" + thread
		// A cached answer runs no statement through gorm: none at all on PostgreSQL, and on SQLite
		// only the version row, read below gorm through a prepared statement; a change made by
		// another process (adminState) reaches r on SQLite through that row alone.
		const hit = 0
		statements := func() int {
			before := r.counter.count()
			testkit.Expect(t, r.get(path), http.StatusOK, "")
			return r.counter.count() - before
		}
		// The reads happen in statements, one per try.
		none := func() testkit.Result { return testkit.Result{} }
		cached := func(what string) {
			t.Helper()
			eventually(t, what, none, func(testkit.Result) bool { return statements() == hit })
		}
		dropped := func(what string) {
			t.Helper()
			eventually(t, what, none, func(testkit.Result) bool { return statements() > hit })
		}
		cached("the first answer cached")
		adminState(t, w, "thread", "lock", thread)
		dropped("the cache dropped after the lock")
		cached("cached again")
		adminState(t, w, "thread", "unlock", thread)
		dropped("the cache dropped after the unlock")
		cached("cached again")
		adminState(t, w, "thread", "move", thread, "--category", "stews")
		eventually(t, "the move shown", func() testkit.Result { return r.get(path) }, func(res testkit.Result) bool {
			var th forum.Thread
			return res.Status == http.StatusOK && json.Unmarshal(res.Body, &th) == nil && th.CategorySlug == "stews"
		})
	})
}
