package forum_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// rcCounter is a gorm logger that counts statements.
type rcCounter struct {
	logger.Interface
	mu sync.Mutex
	n  int
}

func (c *rcCounter) Trace(context.Context, time.Time, func() (string, int64), error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *rcCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// rcReplica is another replica's read plane on the world's database: its own content version and
// cache, counting the statements its reads run.
type rcReplica struct {
	engine  *gin.Engine
	counter *rcCounter
	version *forum.ContentVersion
}

func rcNewReplica(t *testing.T, w *world) *rcReplica {
	t.Helper()
	r := &rcReplica{counter: &rcCounter{Interface: logger.Discard}}
	db := w.db.Session(&gorm.Session{Logger: r.counter})
	r.version = forum.NewContentVersion(w.db, slog.New(slog.DiscardHandler))
	if err := r.version.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.version.Stop(context.Background()) })
	reads := forum.NewReads(plugin.ReadDB{DB: db}, cursors(t, w.clock), nil)
	reads.UseCache(forum.NewReadCache(r.version, db, w.clock))
	r.engine = testkit.Engine(t)
	testkit.MountPublic(t, r.engine, reads.Routes())
	testkit.MountPublic(t, r.engine, forum.NewPages(reads, site.New(forum.Nav())).Routes())
	return r
}

func (r *rcReplica) get(target string, hdr ...string) testkit.Result {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	return testkit.Serve(r.engine, req)
}

// eventually retries read until done accepts its answer; a change another replica commits reaches
// this one through a notification (PostgreSQL), which arrives after the commit.
func eventually(t *testing.T, what string, read func() testkit.Result, done func(testkit.Result) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := read()
		if done(r) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still %d %s", what, r.Status, r.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestReadCache: a public read is answered again from memory, with the same bytes and ETag (and 304 for
// that ETag), running no statement on PostgreSQL and only the version check on SQLite; any change to
// the forum's content, made through the writes of another replica or straight in the database, makes
// every cached answer stale on every replica; pages are cached the same way.
func TestReadCache(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := newAgent("cacher")
		thread := w.thread(t, a, w.category(t, "cache"))
		r := rcNewReplica(t, w)
		path := forum.ThreadPath + "/" + thread
		page := forum.ThreadPages + "/" + thread

		// The listener connects in the background; until then reads go to the database.
		eventually(t, "the first answer stored", func() testkit.Result { return r.get(path) }, func(testkit.Result) bool {
			// No statement through gorm: SQLite's version row is read below it, prepared once.
			before := r.counter.count()
			r.get(path)
			return r.counter.count() == before
		})
		first := r.get(path)
		testkit.Expect(t, first, 200, "")
		again := r.get(path)
		if string(again.Body) != string(first.Body) || again.Header.Get("ETag") != first.Header.Get("ETag") || again.Header.Get("ETag") == "" {
			t.Fatalf("a cached answer differs: %s %q, then %s %q", first.Body, first.Header.Get("ETag"), again.Body, again.Header.Get("ETag"))
		}
		if got := r.get(path, "If-None-Match", first.Header.Get("ETag")); got.Status != http.StatusNotModified {
			t.Fatalf("If-None-Match with the cached ETag: %d", got.Status)
		}
		html := r.get(page)
		testkit.Expect(t, html, 200, "")

		// A reply written through the other replica's writes.
		w.reply(t, a, thread, "")
		eventually(t, "the reply counted", func() testkit.Result { return r.get(path) }, func(res testkit.Result) bool {
			var th forum.Thread
			return res.Status == 200 && json.Unmarshal(res.Body, &th) == nil && th.ReplyCount == 1
		})
		eventually(t, "the reply on the page", func() testkit.Result { return r.get(page) }, func(res testkit.Result) bool {
			return res.Status == 200 && string(res.Body) != string(html.Body)
		})

		// A change made straight in the database, by no code of the forum.
		if err := w.db.Exec(`UPDATE forum_threads SET reply_count = 41 WHERE id = ?`, thread).Error; err != nil {
			t.Fatal(err)
		}
		check := func(res testkit.Result) bool {
			var th forum.Thread
			return res.Status == 200 && json.Unmarshal(res.Body, &th) == nil && th.ReplyCount == 41
		}
		if dialect == database.SQLite {
			if res := r.get(path); !check(res) {
				t.Fatalf("SQLite served a stale answer after a change: %s", res.Body)
			}
		}
		eventually(t, "the change seen", func() testkit.Result { return r.get(path) }, check)
	})
}

// TestMarkdownRenderedAtWriteTime: a post's Markdown is rendered (and sanitised) once, by the write
// that stores it, and the page shows what was stored rather than rendering it again.
func TestMarkdownRenderedAtWriteTime(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := newAgent("renderer")
		thread := w.thread(t, a, w.category(t, "render"), func(b map[string]any) {
			b["body_markdown"] = "Season **red lentils** <script>alert(1)</script> [well](javascript:alert(1))."
		})
		reply := w.reply(t, a, thread, "", func(b map[string]any) { b["body_markdown"] = "Use *cumin*." })
		var stored struct{ Thread, Reply string }
		if err := w.db.Raw(`SELECT t.body_html AS thread, r.body_html AS reply FROM forum_threads t JOIN forum_replies r ON r.thread_id = t.id WHERE t.id = ?`, thread).Scan(&stored).Error; err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stored.Thread, "<strong>red lentils</strong>") || strings.Contains(stored.Thread, "<script") || strings.Contains(stored.Thread, "javascript:") {
			t.Fatalf("thread stored as %q", stored.Thread)
		}
		if !strings.Contains(stored.Reply, "<em>cumin</em>") {
			t.Fatalf("reply stored as %q", stored.Reply)
		}
		if err := w.db.Exec(`UPDATE forum_replies SET body_html = '<p>as stored</p>' WHERE id = ?`, reply).Error; err != nil {
			t.Fatal(err)
		}
		r := rcNewReplica(t, w)
		page := r.get(forum.ThreadPages + "/" + thread)
		testkit.Expect(t, page, 200, "")
		if !strings.Contains(string(page.Body), "<p>as stored</p>") || !strings.Contains(string(page.Body), "<strong>red lentils</strong>") {
			t.Fatalf("the page does not show the stored bodies:\n%s", page.Body)
		}
	})
}

// TestReadCacheRebuildsOldAnswers: however quiet the forum, an answer is served again for at most an
// hour, so that the cursors a cached list hands out are fresh ones: after a day without a write the
// list's next cursor still pages on (it was refused as a day old when the answer was kept).
func TestReadCacheRebuildsOldAnswers(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	a := newAgent("quiet")
	cat := w.category(t, "quiet")
	w.thread(t, a, cat)
	w.thread(t, a, cat)
	list := forum.CategoriesPath + "/quiet/threads?limit=1"
	var first forum.ThreadList
	w.read(t, list, "thread-list", &first)
	if first.NextCursor == nil {
		t.Fatal("no next cursor")
	}
	w.clock.Add(25 * time.Hour) // a quiet day: nothing written
	var again forum.ThreadList
	w.read(t, list, "thread-list", &again)
	if again.NextCursor == nil || *again.NextCursor == *first.NextCursor {
		t.Fatalf("a day later the list hands out the cursor it sealed a day ago")
	}
	testkit.Expect(t, w.get(list+"&cursor="+url.QueryEscape(*again.NextCursor)), 200, "")
}

// TestPagedListKeepsItsETag: a paged list whose items did not change keeps its bytes and ETag when it is
// built again after a change elsewhere in the forum, so a conditional GET still gets 304: its next
// cursor is the same one (contracts/cursor dates a cursor to its hour), not one sealed a second later.
func TestPagedListKeepsItsETag(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	w.clock.Set(testkit.T0.Add(5 * time.Minute))
	a := newAgent("steady")
	cat := w.category(t, "steady")
	w.thread(t, a, cat)
	w.thread(t, a, cat)
	other := w.category(t, "busy")
	r := rcNewReplica(t, w)
	for _, target := range []string{forum.CategoriesPath + "/steady/threads?limit=1", forum.CategoryPages + "/steady?limit=1"} {
		first := r.get(target)
		testkit.Expect(t, first, 200, "")
		etag := first.Header.Get("ETag")
		w.clock.Add(10 * time.Minute)
		w.thread(t, a, other) // a change in another category: the content version moves on
		again := r.get(target, "If-None-Match", etag)
		if again.Status != http.StatusNotModified {
			t.Fatalf("%s after an unrelated change: %d (ETag %q, was %q)", target, again.Status, again.Header.Get("ETag"), etag)
		}
	}
}
