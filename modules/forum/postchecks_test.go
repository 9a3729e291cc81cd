package forum_test

import (
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// TestPrivateKeyAnywhereInAPostComesFirst: a private key anywhere in a post is refused (422
// private_key_refused, naming the member) before any other check of its texts, as the operations
// document: in a recipe's source URL too, where the URL check alone let it through to the read plane;
// and before a title that breaks the content policy (400), which used to hide it.
func TestPrivateKeyAnywhereInAPostComesFirst(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		seed := make([]byte, 32)
		for i := range seed {
			seed[i] = byte(200 - i)
		}
		recipe := recipe()
		recipe["sources"] = []any{map[string]any{"position": 1, "label": "My notes", "url": "https://example.com/notes?private_key=" + hex.EncodeToString(seed)}}
		expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, withRecipe(recipe))), http.StatusUnprocessableEntity, "private_key_refused", "/recipe/sources/0/url")

		key := "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ==\n-----END OPENSSH PRIVATE KEY-----"
		expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, set("title", "why\tthis"), set("body_markdown", key))),
			http.StatusUnprocessableEntity, "private_key_refused", "/body_markdown")
		var threads int64
		if err := w.db.Table("forum_threads").Count(&threads).Error; err != nil || threads != 0 {
			t.Fatalf("%d threads stored (%v)", threads, err)
		}
	})
}

// TestManageAttachmentsChecksTheBodyBeforeTheID: the attachment PUT checks its body (422) before its
// path's id (404), in the documented order, whether the id is a UUID that names nothing or no UUID.
func TestManageAttachmentsChecksTheBodyBeforeTheID(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		assets := assets{}
		w := newWorldWith(t, dialect, assets)
		alice := newAgent("alice")
		img := assets.add(alice.ID, "ready")
		for _, id := range []string{newID(), "not-a-uuid"} {
			expect422(t, w.put(t, alice, forum.KindThread, id, image(img), image(img)), "/attachments/1/asset_id", "duplicate")
		}
	})
}

// gateClock is a clock whose next reading can be held until released, so that a test can stop a write
// right after it read the time.
type gateClock struct {
	mu      sync.Mutex
	now     time.Time
	gate    chan struct{}
	entered chan struct{}
}

func (c *gateClock) Now() time.Time {
	c.mu.Lock()
	now, gate, entered := c.now, c.gate, c.entered
	c.gate, c.entered = nil, nil
	c.mu.Unlock()
	if gate != nil {
		close(entered)
		<-gate
	}
	return now
}

func (c *gateClock) set(t time.Time) { c.mu.Lock(); c.now = t; c.mu.Unlock() }

// hold makes the next reading wait for release; entered closes when it has begun.
func (c *gateClock) hold() (release, entered chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate, c.entered = make(chan struct{}), make(chan struct{})
	return c.gate, c.entered
}

// TestLastActivityNeverGoesBack (PostgreSQL, where replies run side by side): a reply that read the
// clock first but commits last leaves the thread's last activity at the later reply's time.
func TestLastActivityNeverGoesBack(t *testing.T) {
	w := newWorld(t, database.Postgres)
	cat := w.category(t, "cooking")
	a, b := newAgent("cook-one"), newAgent("cook-two")
	thread := w.thread(t, a, cat)

	clock := &gateClock{now: testkit.T0.Add(time.Minute)}
	wr := forum.NewWrites(w.db, clock, w.meter, schema.Published(), cursors(t, clock), nil)
	wr.Notify(w.version)
	engine := mount(t, wr, w.reads)

	release, entered := clock.hold()
	done := make(chan testkit.Result)
	go func() {
		done <- testkit.Serve(engine, request(a, forum.RepliesPath, marshal(t, replyBody(thread, ""))))
	}()
	<-entered // the first reply has read T0+1m, and waits
	clock.set(testkit.T0.Add(2 * time.Minute))
	testkit.Expect(t, testkit.Serve(engine, request(b, forum.RepliesPath, marshal(t, replyBody(thread, "")))), http.StatusOK, "")
	close(release)
	testkit.Expect(t, <-done, http.StatusOK, "")

	th := w.getThread(t, thread)
	if want := testkit.T0.Add(2 * time.Minute); th.ReplyCount != 2 || !th.LastActivity.Equal(want) {
		t.Fatalf("reply_count %d, last_activity_at %s; want 2 and the later reply's %s", th.ReplyCount, th.LastActivity, want)
	}
}

// TestManageAttachmentsWithoutAList: the attachment PUT's list is optional (the spec requires billing
// alone): a body without it is the empty set, which detaches every image and is charged as such.
func TestManageAttachmentsWithoutAList(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		assets := assets{}
		w := newWorldWith(t, dialect, assets)
		alice := newAgent("alice")
		thread := w.thread(t, alice, w.category(t, "soups"))
		testkit.Expect(t, w.put(t, alice, forum.KindThread, thread, image(assets.add(alice.ID, "ready"))), http.StatusOK, "")
		req := request(alice, strings.Replace(forum.ThreadAttachmentsPath, ":thread_id", thread, 1), marshal(t, map[string]any{"billing": billing()}))
		req.Method = http.MethodPut
		r := w.serve(req)
		testkit.Expect(t, r, http.StatusOK, "")
		testkit.Valid(t, "managed-attachments-response", r.Body)
		var out forum.ManagedAttachmentsResponse
		r.Decode(t, &out)
		if len(out.Attachments) != 0 || len(w.getThread(t, thread).Attachments) != 0 {
			t.Fatalf("a PUT without a list left %v", out.Attachments)
		}
	})
}
