package forum_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
)

// Search answers the best match first, threads and replies alike, and pages through every match.
func TestSearchBestFirst(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		body := func(s string) func(map[string]any) { return set("body_markdown", s) }
		once := w.thread(t, a, cat, set("title", "Soup"), body("lentil rice bean corn"))
		thrice := w.reply(t, a, once, "", body("lentil lentil lentil corn"))
		twice := w.thread(t, a, cat, set("title", "Stew"), body("lentil lentil bean corn"))
		w.thread(t, a, cat, set("title", "Bread"), body("flour water salt yeast"))

		var got []string
		target := forum.SearchPath + "?q=lentil&limit=2"
		for {
			var res forum.SearchResult
			w.read(t, target, "search-result", &res)
			for _, h := range res.Results {
				got = append(got, deref(h.ReplyID)+h.ThreadID)
			}
			if res.NextCursor == nil {
				break
			}
			target = forum.SearchPath + "?q=lentil&limit=2&cursor=" + url.QueryEscape(*res.NextCursor)
		}
		if want := []string{thrice + once, twice, once}; !slices.Equal(got, want) {
			t.Fatalf("search lentil: %v, want %v", got, want)
		}
	})
}

// On PostgreSQL search ranks the newest thousand matches: with more, an older post never shows, however
// well it matches, and the thousand newest do, best first (README, Decisions).
func TestSearchRanksNewestMatches(t *testing.T) {
	w := newWorld(t, database.Postgres)
	cat := w.category(t, "cooking")
	a := newAgent("cook-one")
	var old, newest []string
	post := func(body string) string {
		id := newID() // UUIDv7: later ids sort after
		now := w.clock.Now()
		if err := w.db.Exec(`INSERT INTO forum_threads (id, category_id, author_id, author_handle, title, body_markdown, intent, score, up, down, reply_count, created_at, last_activity)
VALUES (?, ?, ?, ?, 'Soup', ?, 'discussion', 0, 0, 0, 0, ?, ?)`, id, cat, a.ID, a.Handle, body, now, now).Error; err != nil {
			t.Fatal(err)
		}
		return id
	}
	for range 3 {
		old = append(old, post("lentil lentil lentil lentil"))
	}
	for i := range 1000 {
		body := "lentil"
		if i == 500 {
			body = "lentil lentil" // the best of the newest
		}
		newest = append(newest, post(body))
	}
	var seen []string
	target := forum.SearchPath + "?q=lentil&limit=100"
	for {
		var res forum.SearchResult
		w.read(t, target, "search-result", &res)
		for _, h := range res.Results {
			seen = append(seen, h.ThreadID)
		}
		if res.NextCursor == nil {
			break
		}
		target = forum.SearchPath + "?q=lentil&limit=100&cursor=" + url.QueryEscape(*res.NextCursor)
	}
	if len(seen) != 1000 || seen[0] != newest[500] {
		t.Fatalf("%d results, first %s; want 1000, first %s", len(seen), seen[0], newest[500])
	}
	for _, id := range old {
		if slices.Contains(seen, id) {
			t.Fatalf("an older match %s is among the newest thousand", id)
		}
	}
	rest := slices.Clone(seen[1:])
	if !slices.IsSortedFunc(rest, func(x, y string) int { return strings.Compare(y, x) }) {
		t.Fatal("equal matches are not newest first")
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
