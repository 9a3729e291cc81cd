package forum_test

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/cursor"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// threadsURL is the thread list of a category with a query.
func threadsURL(slug string, query ...string) string {
	u := forum.CategoriesPath + "/" + slug + "/threads"
	if len(query) > 0 {
		u += "?" + strings.Join(query, "&")
	}
	return u
}

// repliesURL is the reply list of a thread with a query.
func repliesURL(thread string, query ...string) string {
	u := forum.ThreadPath + "/" + thread + "/replies"
	if len(query) > 0 {
		u += "?" + strings.Join(query, "&")
	}
	return u
}

// threadIDs returns the ids of a list's threads, checking that each is marked untrusted.
func threadIDs(t testing.TB, l forum.ThreadList) []string {
	t.Helper()
	ids := make([]string, 0, len(l.Threads))
	for _, th := range l.Threads {
		if th.Trust != "untrusted" {
			t.Fatalf("thread %s has trust %q", th.ID, th.Trust)
		}
		ids = append(ids, th.ID)
	}
	return ids
}

// equal fails unless got equals want.
func equal(t testing.TB, what string, got, want []string) {
	t.Helper()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// page reads one page of a thread list.
func (w *world) page(t testing.TB, target string) forum.ThreadList {
	t.Helper()
	var l forum.ThreadList
	w.read(t, target, "thread-list", &l)
	return l
}

// walk reads a thread list page by page with limit; between pages it calls between (which may
// write). It returns the ids in the order served.
func (w *world) walk(t testing.TB, slug, sort string, limit int, between func(page int)) []string {
	t.Helper()
	var ids []string
	q := []string{"sort=" + sort, "limit=" + strconv.Itoa(limit)}
	for page := 0; ; page++ {
		l := w.page(t, threadsURL(slug, q...))
		if len(l.Threads) > limit || l.Sort != sort {
			t.Fatalf("page %d: %d threads, sort %q", page, len(l.Threads), l.Sort)
		}
		ids = append(ids, threadIDs(t, l)...)
		if l.NextCursor == nil {
			return ids
		}
		if len(l.Threads) != limit {
			t.Fatalf("page %d has %d threads and a next cursor", page, len(l.Threads))
		}
		if between != nil {
			between(page)
		}
		q = []string{"sort=" + sort, "limit=" + strconv.Itoa(limit), "cursor=" + url.QueryEscape(*l.NextCursor)}
		if page > 100 {
			t.Fatal("the walk does not end")
		}
	}
}

// The categories, listed by slug and one by one; an unknown slug is 404.
func TestReadCategories(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ids := map[string]string{}
		for _, slug := range []string{"zeta", "alpha", "mid-dle", "alpha-2"} {
			ids[slug] = w.category(t, slug)
		}
		w.setState(t, "zeta", forum.CategoryArchived)
		w.thread(t, newAgent("cook-one"), ids["mid-dle"])
		var list forum.CategoryList
		w.read(t, forum.CategoriesPath, "category-list", &list)
		var slugs []string
		for _, c := range list.Categories {
			slugs = append(slugs, c.Slug)
			if c.ID != ids[c.Slug] || c.Name != "Category "+c.Slug || c.Description != "Threads about "+c.Slug+"." {
				t.Fatalf("category %+v", c)
			}
		}
		equal(t, "slugs", slugs, []string{"alpha", "alpha-2", "mid-dle", "zeta"})
		if list.Categories[2].ThreadCount != 1 || list.Categories[3].State != forum.CategoryArchived || list.Categories[0].State != forum.CategoryOpen {
			t.Fatalf("categories %+v", list.Categories)
		}
		var one forum.Category
		w.read(t, forum.CategoriesPath+"/mid-dle", "category", &one)
		if one.ID != ids["mid-dle"] || one.ThreadCount != 1 || !one.CreatedAt.Equal(testkit.T0) {
			t.Fatalf("category %+v", one)
		}
		for _, target := range []string{forum.CategoriesPath + "/nope", forum.CategoriesPath + "/ALPHA", threadsURL("nope")} {
			testkit.Expect(t, w.get(target), http.StatusNotFound, "not_found")
		}
	})
}

// A category's threads, newest first and by score; other categories' threads stay out.
func TestReadThreadOrders(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		other := w.category(t, "other")
		a, b, c := newAgent("cook-one"), newAgent("cook-two"), newAgent("cook-three")
		var th []string
		for range 5 {
			th = append(th, w.thread(t, a, cat))
			w.thread(t, a, other)
		}
		// Scores: th[0] 0, th[1] 2, th[2] 1, th[3] -1, th[4] 0.
		w.vote(t, b, forum.KindThread, th[1], "up")
		w.vote(t, c, forum.KindThread, th[1], "up")
		w.vote(t, b, forum.KindThread, th[2], "up")
		w.vote(t, b, forum.KindThread, th[3], "down")

		l := w.page(t, threadsURL("cooking"))
		if l.Sort != "newest" || l.NextCursor != nil || l.Category.Slug != "cooking" || l.Category.ThreadCount != 5 {
			t.Fatalf("list %+v", l)
		}
		equal(t, "newest", threadIDs(t, l), []string{th[4], th[3], th[2], th[1], th[0]})
		equal(t, "newest (explicit)", threadIDs(t, w.page(t, threadsURL("cooking", "sort=newest"))), []string{th[4], th[3], th[2], th[1], th[0]})
		top := w.page(t, threadsURL("cooking", "sort=top"))
		// Equal scores: the newer first.
		equal(t, "top", threadIDs(t, top), []string{th[1], th[2], th[4], th[0], th[3]})
		if top.Sort != "top" || top.Threads[0].Votes != (forum.Votes{Score: 2, Up: 2}) || top.Threads[4].Votes != (forum.Votes{Score: -1, Down: 1}) {
			t.Fatalf("top %+v", top)
		}
		for _, q := range []string{"sort=bogus", "sort=Top", "sort="} {
			testkit.Expect(t, w.get(threadsURL("cooking", q)), http.StatusBadRequest, "bad_request")
		}
	})
}

// Paging with limit walks every thread exactly once, also while new threads arrive between pages:
// for newest they are newer than the cursor and never show up in later pages.
func TestReadPagingWithInserts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		w.category(t, "other")
		a, b := newAgent("cook-one"), newAgent("cook-two")
		var originals []string
		for i := range 7 {
			id := w.thread(t, a, cat)
			originals = append([]string{id}, originals...) // newest first
			switch i % 3 {
			case 0:
				w.vote(t, b, forum.KindThread, id, "up")
			case 1:
				w.vote(t, b, forum.KindThread, id, "down")
			}
		}

		// An exact multiple of the limit ends without an empty page.
		equal(t, "limit 7", w.walk(t, "cooking", "newest", 7, nil), originals)
		equal(t, "limit 1", w.walk(t, "cooking", "newest", 1, nil), originals)

		var added []string
		got := w.walk(t, "cooking", "newest", 2, func(int) {
			added = append(added, w.thread(t, a, cat), w.thread(t, b, cat))
		})
		equal(t, "newest with inserts", got, originals)
		if len(added) != 6 {
			t.Fatalf("%d threads added between pages", len(added))
		}

		// top: every thread there was when the walk started is served exactly once.
		all := append(append([]string{}, originals...), added...)
		ranked := w.walk(t, "cooking", "top", 100, nil)
		if len(ranked) != len(all) {
			t.Fatalf("top lists %d threads, want %d", len(ranked), len(all))
		}
		equal(t, "top by 3", w.walk(t, "cooking", "top", 3, nil), ranked)
		seen := map[string]int{}
		for _, id := range w.walk(t, "cooking", "top", 2, func(int) { w.thread(t, a, cat) }) {
			seen[id]++
		}
		for _, id := range all {
			if seen[id] != 1 {
				t.Fatalf("top with inserts served %s %d times", id, seen[id])
			}
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("top with inserts served %s %d times", id, n)
			}
		}
		// Another category's list is empty.
		if ids := w.walk(t, "other", "newest", 2, nil); len(ids) != 0 {
			t.Fatalf("other category lists %v", ids)
		}
	})
}

// A thread's replies in creation order, threaded by parent_reply_id; paging walks them once, and
// replies added while paging come after.
func TestReadReplies(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a, b := newAgent("cook-one"), newAgent("cook-two")
		thread := w.thread(t, a, cat)
		otherThread := w.thread(t, a, cat)
		w.reply(t, b, otherThread, "")
		type node struct{ id, parent string }
		var want []node
		first := w.reply(t, b, thread, "")
		want = append(want, node{first, ""})
		for i := range 4 {
			w.clock.Add(time.Second)
			parent := want[i].id
			if i == 2 {
				parent = ""
			}
			want = append(want, node{w.reply(t, []agent{a, b}[i%2], thread, parent), parent})
		}
		var l forum.ReplyList
		w.read(t, repliesURL(thread), "reply-list", &l)
		if l.ThreadID != thread || l.NextCursor != nil || len(l.Replies) != len(want) {
			t.Fatalf("replies %+v", l)
		}
		for i, r := range l.Replies {
			parent := ""
			if r.ParentReplyID != nil {
				parent = *r.ParentReplyID
			}
			if r.ID != want[i].id || parent != want[i].parent || r.ThreadID != thread || r.Trust != "untrusted" ||
				!r.CreatedAt.Equal(testkit.T0.Add(time.Duration(i)*time.Second)) {
				t.Fatalf("reply %d: %+v, want %+v", i, r, want[i])
			}
		}

		var ids []string
		var added []string
		q := []string{"limit=2"}
		for page := 0; ; page++ {
			var p forum.ReplyList
			w.read(t, repliesURL(thread, q...), "reply-list", &p)
			for _, r := range p.Replies {
				ids = append(ids, r.ID)
			}
			if p.NextCursor == nil {
				break
			}
			if page < 2 {
				added = append(added, w.reply(t, a, thread, ""))
			}
			q = []string{"limit=2", "cursor=" + url.QueryEscape(*p.NextCursor)}
		}
		var all []string
		for _, n := range want {
			all = append(all, n.id)
		}
		equal(t, "replies paged with inserts", ids, append(all, added...))

		// An empty thread has an empty list.
		var empty forum.ReplyList
		w.read(t, repliesURL(w.thread(t, a, cat)), "reply-list", &empty)
		if len(empty.Replies) != 0 || empty.NextCursor != nil {
			t.Fatalf("empty thread: %+v", empty)
		}
	})
}

// A tombstoned thread or reply keeps its place, author, votes and replies, but shows no title, body,
// recipe or references, on every view.
func TestReadTombstones(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a, b := newAgent("cook-one"), newAgent("cook-two")
		target := w.thread(t, a, cat)
		thread := w.thread(t, a, cat, func(m map[string]any) {
			m["recipe"] = recipe()
			m["declared_model"] = "model-x"
			m["references"] = []any{map[string]any{"reference_type": "cites", "target_thread_id": target}}
		})
		reply := w.reply(t, b, thread, "", func(m map[string]any) {
			m["references"] = []any{map[string]any{"reference_type": "supports", "target_thread_id": target}}
		})
		child := w.reply(t, a, thread, reply)
		w.vote(t, b, forum.KindThread, thread, "up")
		w.vote(t, a, forum.KindReply, reply, "down")
		before := w.getThread(t, thread)
		if before.Recipe == nil || len(before.References) != 1 || before.Title == nil {
			t.Fatalf("thread before %+v", before)
		}

		w.clock.Add(time.Hour)
		at := w.clock.Now()
		if ts := w.tombstone(t, b, forum.KindReply, reply); !ts.TombstonedAt.Equal(at) || ts.TargetID != reply || ts.TargetKind != forum.KindReply {
			t.Fatalf("tombstone %+v", ts)
		}
		w.tombstone(t, a, forum.KindThread, thread)

		checkThread := func(th forum.Thread) {
			t.Helper()
			if !th.Tombstoned || th.TombstonedAt == nil || !th.TombstonedAt.Equal(at) || th.Title != nil || th.BodyMarkdown != nil ||
				th.Recipe != nil || th.References == nil || len(th.References) != 0 || th.Trust != "untrusted" ||
				th.Author.AgentID != a.ID || th.Votes != (forum.Votes{Score: 1, Up: 1}) || th.ReplyCount != 2 || !th.CreatedAt.Equal(testkit.T0) {
				t.Fatalf("tombstoned thread %+v", th)
			}
		}
		checkThread(w.getThread(t, thread))
		raw := w.read(t, forum.ThreadPath+"/"+thread, "thread", nil)
		m := raw.JSON(t)
		for _, k := range []string{"title", "body_markdown", "recipe"} {
			if v, ok := m[k]; !ok || v != nil {
				t.Fatalf("tombstoned thread member %s = %v (present %v)", k, v, ok)
			}
		}
		if strings.Contains(string(raw.Body), "Lentils") || strings.Contains(string(raw.Body), "lentils") {
			t.Fatalf("tombstoned thread still shows its text: %s", raw.Body)
		}
		found := false
		for _, th := range w.page(t, threadsURL("cooking")).Threads {
			if th.ID == thread {
				checkThread(th)
				found = true
			}
		}
		if !found {
			t.Fatal("the tombstoned thread left the list")
		}
		// Its replies stay readable; the tombstoned one without its body.
		checkReply := func(r forum.Reply) {
			t.Helper()
			if !r.Tombstoned || r.TombstonedAt == nil || !r.TombstonedAt.Equal(at) || r.BodyMarkdown != nil || r.References == nil ||
				len(r.References) != 0 || r.Trust != "untrusted" || r.Author.AgentID != b.ID || r.Votes != (forum.Votes{Score: -1, Down: 1}) {
				t.Fatalf("tombstoned reply %+v", r)
			}
		}
		checkReply(w.getReply(t, reply))
		var l forum.ReplyList
		w.read(t, repliesURL(thread), "reply-list", &l)
		if len(l.Replies) != 2 || l.Replies[0].ID != reply || l.Replies[1].ID != child {
			t.Fatalf("replies %+v", l.Replies)
		}
		checkReply(l.Replies[0])
		if c := l.Replies[1]; c.Tombstoned || c.BodyMarkdown == nil || c.ParentReplyID == nil || *c.ParentReplyID != reply {
			t.Fatalf("child of a tombstoned reply %+v", c)
		}
	})
}

// Every read answers with an ETag and Cache-Control, and 304 without a body to a matching
// If-None-Match; the ETag changes when the content does.
func TestReadCaching(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")
		targets := []string{forum.CategoriesPath, forum.CategoriesPath + "/cooking", threadsURL("cooking"),
			forum.ThreadPath + "/" + thread, repliesURL(thread), forum.ReplyPath + "/" + reply}
		etags := map[string]string{}
		for _, target := range targets {
			r := w.get(target)
			testkit.Expect(t, r, http.StatusOK, "")
			etag := r.Header.Get("ETag")
			if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 3 || r.Header.Get("Cache-Control") == "" {
				t.Fatalf("%s: ETag %q, Cache-Control %q", target, etag, r.Header.Get("Cache-Control"))
			}
			etags[target] = etag
			if again := w.get(target); again.Header.Get("ETag") != etag {
				t.Fatalf("%s: the ETag of unchanged content changed", target)
			}
			for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
				nm := w.get(target, "If-None-Match", inm)
				if nm.Status != http.StatusNotModified || len(nm.Body) != 0 || nm.Header.Get("ETag") != etag {
					t.Fatalf("%s with If-None-Match %s: %d %q, ETag %q", target, inm, nm.Status, nm.Body, nm.Header.Get("ETag"))
				}
			}
			if r := w.get(target, "If-None-Match", `"stale"`); r.Status != http.StatusOK || len(r.Body) == 0 {
				t.Fatalf("%s with a stale If-None-Match: %d", target, r.Status)
			}
		}

		w.clock.Add(time.Minute)
		w.reply(t, a, thread, reply)
		for _, target := range []string{forum.CategoriesPath + "/cooking/threads", forum.ThreadPath + "/" + thread, repliesURL(thread)} {
			r := w.get(target, "If-None-Match", etags[target])
			testkit.Expect(t, r, http.StatusOK, "")
			if r.Header.Get("ETag") == etags[target] || len(r.Body) == 0 {
				t.Fatalf("%s: the ETag did not change after a new reply", target)
			}
		}
		// The reply itself did not change.
		if r := w.get(forum.ReplyPath+"/"+reply, "If-None-Match", etags[forum.ReplyPath+"/"+reply]); r.Status != http.StatusNotModified {
			t.Fatalf("unchanged reply: %d", r.Status)
		}
		// A vote changes the thread's ETag too.
		w.vote(t, newAgent("cook-two"), forum.KindReply, reply, "up")
		if r := w.get(forum.ReplyPath+"/"+reply, "If-None-Match", etags[forum.ReplyPath+"/"+reply]); r.Status != http.StatusOK {
			t.Fatalf("voted reply: %d", r.Status)
		}
	})
}

// A bad limit is 400 bad_request; a cursor the list did not issue is 400 invalid_cursor.
func TestReadBadPaging(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		var thread string
		for range 3 {
			thread = w.thread(t, a, cat)
			w.reply(t, a, thread, "")
			w.reply(t, a, thread, "")
		}
		lists := []string{threadsURL("cooking"), threadsURL("cooking", "sort=top"), repliesURL(thread)}
		join := func(list, q string) string {
			if strings.Contains(list, "?") {
				return list + "&" + q
			}
			return list + "?" + q
		}
		for _, list := range lists {
			for _, limit := range []string{"0", "101", "-1", "abc", "1.5", "01", "+2", "", "1e1", "99999999999999999999"} {
				testkit.Expect(t, w.get(join(list, "limit="+url.QueryEscape(limit))), http.StatusBadRequest, "bad_request")
			}
			testkit.Expect(t, w.get(join(list, "limit=2&limit=3")), http.StatusBadRequest, "bad_request")
			for _, limit := range []string{"1", "100"} {
				testkit.Expect(t, w.get(join(list, "limit="+limit)), http.StatusOK, "")
			}
		}

		cursorOf := func(target string) string {
			t.Helper()
			var page struct {
				NextCursor *string `json:"next_cursor"`
			}
			w.read(t, target, "", nil).Decode(t, &page)
			if page.NextCursor == nil {
				t.Fatalf("%s: no next cursor", target)
			}
			return *page.NextCursor
		}
		newest := cursorOf(threadsURL("cooking", "limit=1"))
		top := cursorOf(threadsURL("cooking", "sort=top", "limit=1"))
		replies := cursorOf(repliesURL(thread, "limit=1"))
		forged := []string{
			"random-" + newID(),
			"!!!",
			base64.RawURLEncoding.EncodeToString([]byte("\x00\xffgarbage\x7f")),
			base64.RawURLEncoding.EncodeToString([]byte(`{"s":"newest","i":"not-a-uuid"}`)),
			base64.RawURLEncoding.EncodeToString([]byte(`{"s":"newest","i":"` + strings.ToUpper(thread) + `"}`)),
			base64.RawURLEncoding.EncodeToString([]byte(`[]`)),
			newest + "=", // a real cursor, padded
			newest + "x",
			strings.Repeat("A", 2049),
		}
		for _, list := range lists {
			for i, c := range forged {
				if r := w.get(join(list, "cursor="+url.QueryEscape(c))); r.Status != http.StatusBadRequest || r.Code != "invalid_cursor" {
					t.Errorf("%s with forged cursor %d (%.40q): %d %q", list, i, c, r.Status, r.Code)
				}
			}
			testkit.Expect(t, w.get(join(list, "cursor=")), http.StatusBadRequest, "invalid_cursor")
			testkit.Expect(t, w.get(join(list, "cursor="+url.QueryEscape(replies)+"&cursor="+url.QueryEscape(replies))), http.StatusBadRequest, "invalid_cursor")
		}
		// A cursor of one list is refused by the others.
		testkit.Expect(t, w.get(threadsURL("cooking", "sort=top", "cursor="+url.QueryEscape(newest))), http.StatusBadRequest, "invalid_cursor")
		testkit.Expect(t, w.get(threadsURL("cooking", "sort=newest", "cursor="+url.QueryEscape(top))), http.StatusBadRequest, "invalid_cursor")
		testkit.Expect(t, w.get(threadsURL("cooking", "cursor="+url.QueryEscape(replies))), http.StatusBadRequest, "invalid_cursor")
		testkit.Expect(t, w.get(repliesURL(thread, "cursor="+url.QueryEscape(newest))), http.StatusBadRequest, "invalid_cursor")
		// Each works on its own list.
		testkit.Expect(t, w.get(threadsURL("cooking", "cursor="+url.QueryEscape(newest))), http.StatusOK, "")
		testkit.Expect(t, w.get(threadsURL("cooking", "sort=top", "cursor="+url.QueryEscape(top))), http.StatusOK, "")
		testkit.Expect(t, w.get(repliesURL(thread, "cursor="+url.QueryEscape(replies))), http.StatusOK, "")
	})
}

// The read plane's ids are lowercase UUIDs: any other spelling, or an id of the other kind, is 404.
func TestReadIDs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		reply := w.reply(t, a, thread, "")
		spellings := func(id string) []string {
			return []string{strings.ToUpper(id), "{" + id + "}", "urn:uuid:" + id, strings.ReplaceAll(id, "-", ""),
				id + " ", "not-a-uuid", newID()}
		}
		for _, id := range spellings(thread) {
			testkit.Expect(t, w.get(forum.ThreadPath+"/"+url.PathEscape(id)), http.StatusNotFound, "not_found")
			testkit.Expect(t, w.get(forum.ThreadPath+"/"+url.PathEscape(id)+"/replies"), http.StatusNotFound, "not_found")
		}
		for _, id := range spellings(reply) {
			testkit.Expect(t, w.get(forum.ReplyPath+"/"+url.PathEscape(id)), http.StatusNotFound, "not_found")
		}
		testkit.Expect(t, w.get(forum.ThreadPath+"/"+reply), http.StatusNotFound, "not_found")
		testkit.Expect(t, w.get(forum.ReplyPath+"/"+thread), http.StatusNotFound, "not_found")
		testkit.Expect(t, w.get(repliesURL(reply)), http.StatusNotFound, "not_found")
	})
}

// The created_at a write answers is the one the read plane serves, to the digit, whatever the
// precision of the clock.
func TestCreatedAtMatchesReadPlane(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		w.clock.Set(testkit.T0.Add(123456789 * time.Nanosecond))
		r := w.post(t, a, forum.ThreadsPath, threadBody(cat))
		testkit.Expect(t, r, http.StatusOK, "")
		created := r.JSON(t)["created_at"]
		read := w.read(t, forum.ThreadPath+"/"+r.JSON(t)["thread_id"].(string), "thread", nil).JSON(t)
		if read["created_at"] != created || read["last_activity_at"] != created {
			t.Errorf("thread: the write answered created_at %v, the read plane serves %v (last activity %v)", created, read["created_at"], read["last_activity_at"])
		}
		w.clock.Set(testkit.T0.Add(time.Minute + 987654321*time.Nanosecond))
		rr := w.post(t, a, forum.RepliesPath, replyBody(read["id"].(string), ""))
		testkit.Expect(t, rr, http.StatusOK, "")
		readReply := w.read(t, forum.ReplyPath+"/"+rr.JSON(t)["reply_id"].(string), "reply", nil).JSON(t)
		if readReply["created_at"] != rr.JSON(t)["created_at"] {
			t.Errorf("reply: the write answered created_at %v, the read plane serves %v", rr.JSON(t)["created_at"], readReply["created_at"])
		}
		w.clock.Add(time.Second)
		ts := w.post(t, a, forum.TombstonePath, targetBody(forum.KindReply, readReply["id"].(string), ""))
		testkit.Expect(t, ts, http.StatusOK, "")
		readReply = w.read(t, forum.ReplyPath+"/"+readReply["id"].(string), "reply", nil).JSON(t)
		if readReply["tombstoned_at"] != ts.JSON(t)["tombstoned_at"] {
			t.Errorf("tombstone: the write answered tombstoned_at %v, the read plane serves %v", ts.JSON(t)["tombstoned_at"], readReply["tombstoned_at"])
		}
	})
}

// A cursor is sealed: the server accepts only what it issued for the same list, unchanged (WIRE.md
// section 5: a cursor not issued by the server is 400 invalid_cursor). An edited position, a cursor
// of another list, a re-encoding, or one sealed under another key is refused.
func TestReadCursorNotIssued(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		w.category(t, "baking")
		a := newAgent("cook-one")
		for range 3 {
			w.thread(t, a, cat)
		}
		var page forum.ThreadList
		w.read(t, threadsURL("cooking", "limit=1"), "thread-list", &page)
		issued := *page.NextCursor
		payload, mac, ok := strings.Cut(issued, ".")
		if !ok {
			t.Fatalf("cursor %q has no MAC", issued)
		}
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil {
			t.Fatal(err)
		}
		// The position a forger would want: the start of the list again, or past its end.
		edited := base64.RawURLEncoding.EncodeToString([]byte(strings.Replace(string(raw), `"i":"`, `"i":"f`, 1)))
		other, err := cursor.New([][]byte{[]byte("another service's key, 32 bytes or more")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var pos map[string]any
		if err := json.Unmarshal(raw, &pos); err != nil {
			t.Fatal(err)
		}
		foreign, err := other.Seal("forum:threads:"+cat+":newest", pos["v"])
		if err != nil {
			t.Fatal(err)
		}
		for name, c := range map[string]string{
			"an edited position":    edited + "." + mac,
			"a trailing space":      base64.RawURLEncoding.EncodeToString(append(raw, ' ')) + "." + mac,
			"no MAC":                payload,
			"another key":           foreign,
			"padding":               payload + "==." + mac,
			"the old unsealed form": payload,
		} {
			if r := w.get(threadsURL("cooking", "limit=1", "cursor="+url.QueryEscape(c))); r.Status != http.StatusBadRequest || r.Code != "invalid_cursor" {
				t.Errorf("%s: %d %q, want 400 invalid_cursor", name, r.Status, r.Code)
			}
		}
		// A cursor of one list opens no other: another category, another sort.
		if r := w.get(threadsURL("baking", "limit=1", "cursor="+url.QueryEscape(issued))); r.Status != http.StatusBadRequest || r.Code != "invalid_cursor" {
			t.Errorf("another category's cursor: %d %q", r.Status, r.Code)
		}
		if r := w.get(threadsURL("cooking", "limit=1", "sort=top", "cursor="+url.QueryEscape(issued))); r.Status != http.StatusBadRequest || r.Code != "invalid_cursor" {
			t.Errorf("another sort's cursor: %d %q", r.Status, r.Code)
		}
		// A day after the end of the hour it was sealed in, it has expired.
		w.clock.Add(25*time.Hour + time.Second)
		if r := w.get(threadsURL("cooking", "limit=1", "cursor="+url.QueryEscape(issued))); r.Status != http.StatusBadRequest || r.Code != "invalid_cursor" {
			t.Errorf("an expired cursor: %d %q", r.Status, r.Code)
		}
	})
}
