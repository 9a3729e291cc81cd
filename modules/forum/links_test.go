package forum_test

import (
	"encoding/json"
	"net/url"
	"regexp"
	"slices"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
)

var nextLink = regexp.MustCompile(`^<([^<>]+)>; rel="next"$`)

// follow reads a paged list from first by following only its Link headers, and returns what each
// page's items (read by items) were. Every page's Link must carry exactly the body's next_cursor,
// keep the request's other parameters, be the same when the page comes from the read cache, and be
// absent on the last page.
func (w *world) follow(t *testing.T, first, schemaName string, items func(raw []byte) []string) []string {
	t.Helper()
	var got []string
	target := first
	for page := 0; target != ""; page++ {
		if page > 50 {
			t.Fatal("the Link walk does not end")
		}
		r := w.read(t, target, schemaName, nil)
		if again := w.get(target); again.Header.Get("Link") != r.Header.Get("Link") {
			t.Fatalf("%s: Link %q, from the cache %q", target, r.Header.Get("Link"), again.Header.Get("Link"))
		}
		var body struct {
			NextCursor *string `json:"next_cursor"`
		}
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatal(err)
		}
		got = append(got, items(r.Body)...)
		links := r.Header.Values("Link")
		if body.NextCursor == nil {
			if len(links) != 0 {
				t.Fatalf("%s: the last page links on: %q", target, links)
			}
			return got
		}
		if len(links) != 1 {
			t.Fatalf("%s: next_cursor but Link %q", target, links)
		}
		m := nextLink.FindStringSubmatch(links[0])
		if m == nil {
			t.Fatalf("%s: Link %q", target, links[0])
		}
		next, err := url.Parse(m[1])
		if err != nil {
			t.Fatal(err)
		}
		prev, _ := url.Parse(target)
		if next.Path != prev.Path || next.Query().Get("cursor") != *body.NextCursor {
			t.Fatalf("%s: Link %q does not lead to the next page (next_cursor %q)", target, links[0], *body.NextCursor)
		}
		for k, v := range prev.Query() {
			if k != "cursor" && !slices.Equal(next.Query()[k], v) {
				t.Fatalf("%s: Link %q drops %s=%v", target, links[0], k, v)
			}
		}
		target = m[1]
	}
	return got
}

// Every paged read of the read plane links to its next page (Link: <...>; rel="next"): following the
// links alone walks the same items as following next_cursor.
func TestReadNextLinks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a, b := newAgent("cook-one"), newAgent("cook-two")
		var threads []string
		for range 5 {
			threads = append(threads, w.thread(t, a, cat, set("body_markdown", "lentil soup")))
		}
		w.vote(t, b, forum.KindThread, threads[1], "up")
		var replies []string
		for range 3 {
			replies = append(replies, w.reply(t, b, threads[0], ""))
		}

		threadIDs := func(raw []byte) []string {
			var l forum.ThreadList
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			return threadIDs(t, l)
		}
		for _, sort := range []string{"newest", "top"} {
			got := w.follow(t, threadsURL("cooking", "sort="+sort, "limit=2"), "thread-list", threadIDs)
			equal(t, sort+" by Link", got, w.walk(t, "cooking", sort, 2, nil))
		}

		got := w.follow(t, repliesURL(threads[0], "limit=2"), "reply-list", func(raw []byte) []string {
			var l forum.ReplyList
			if err := json.Unmarshal(raw, &l); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range l.Replies {
				ids = append(ids, r.ID)
			}
			return ids
		})
		equal(t, "replies by Link", got, replies)

		got = w.follow(t, forum.SearchPath+"?q=lentil&limit=2", "search-result", func(raw []byte) []string {
			var res forum.SearchResult
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, h := range res.Results {
				ids = append(ids, h.ThreadID)
			}
			return ids
		})
		slices.Sort(got)
		want := slices.Clone(threads)
		slices.Sort(want)
		equal(t, "search by Link", got, want)
	})
}
