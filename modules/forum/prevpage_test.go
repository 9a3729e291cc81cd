package forum_test

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// TestPreviousPageIsTheOneBefore: a page's "Previous page" shows the items just before its own,
// however the page was reached: not the first page when threads were posted since, nor when the page
// was opened with a cursor of the JSON plane, several items in.
func TestPreviousPageIsTheOneBefore(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	testkit.MountPublic(t, w.engine, forum.NewPages(w.reads, site.New(forum.Nav())).Routes())
	a := newAgent("pager")
	cat := w.category(t, "deep")
	var ids []string // oldest first; the pages list the newest first
	for range 5 {
		ids = append(ids, w.thread(t, a, cat))
	}
	link := func(page testkit.Result, rel string) string {
		t.Helper()
		m := regexp.MustCompile(`<a href="([^"]+)" rel="` + rel + `">`).FindStringSubmatch(string(page.Body))
		if m == nil {
			t.Fatalf("no %s link: %s", rel, testkit.Short(page.Body))
		}
		return html.UnescapeString(m[1])
	}
	get := func(target string) testkit.Result {
		t.Helper()
		r := w.get(target, "Accept", "text/html")
		testkit.Expect(t, r, 200, "")
		return r
	}
	shows := func(page testkit.Result, want ...string) {
		t.Helper()
		for _, id := range ids {
			if strings.Contains(string(page.Body), id) != (strings.Contains(strings.Join(want, " "), id)) {
				t.Fatalf("the page shows other than %v: %s", want, testkit.Short(page.Body))
			}
		}
	}

	// Opened with the JSON plane's cursor after the 3 newest: the previous page is the 3rd newest.
	var l forum.ThreadList
	w.read(t, forum.CategoriesPath+"/deep/threads?limit=3", "thread-list", &l)
	deep := get(forum.CategoryPages + "/deep?limit=1&cursor=" + url.QueryEscape(*l.NextCursor))
	shows(deep, ids[1])
	shows(get(link(deep, "prev")), ids[2])

	// Forward two pages, two threads posted, back: the page before the second, not the first.
	first := get(forum.CategoryPages + "/deep?limit=2")
	shows(first, ids[4], ids[3])
	second := get(link(first, "next"))
	shows(second, ids[2], ids[1])
	w.thread(t, a, cat)
	w.thread(t, a, cat)
	shows(get(link(second, "prev")), ids[4], ids[3])
}
