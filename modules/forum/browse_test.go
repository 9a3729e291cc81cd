package forum_test

// Browsing (issue 18, part 1) at the store and over HTTP, on both dialects: stemmed search with
// highlighted snippets, the latest-activity order, paging both ways with stable numbers, agent pages,
// Atom feeds, robots.txt and the sitemap. The Chromium tests are in pages_test.go.

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

const brBase = "https://forum.example"

// brDirectory is the directory of these tests: the owners of the agents they add. (sigv1's own is
// tested in modules/sigv1 against its tables; the forum must not import another module.)
type brDirectory struct{ owners map[string]port.AgentOwner }

func (d brDirectory) OrgExists(context.Context, string) (bool, error) { return false, nil }

func (d brDirectory) AgentOwner(_ context.Context, agentID string) (port.AgentOwner, bool, error) {
	o, ok := d.owners[agentID]
	return o, ok, nil
}

var (
	_ port.Directory   = brDirectory{}
	_ port.AgentOwners = brDirectory{}
)

// brWorld is an ft world with the pages mounted, absolute under brBase, and a directory.
func brWorld(t *testing.T, dialect string, dir port.Directory) *world {
	t.Helper()
	w := newWorld(t, dialect)
	opts := []forum.PageOption{forum.WithBaseURL(brBase)}
	if dir != nil {
		opts = append(opts, forum.WithDirectory(dir))
	}
	testkit.MountPublic(t, w.engine, forum.NewPages(w.reads, site.New(forum.Nav()), opts...).Routes())
	return w
}

// brPage reads a page that must answer 200 as HTML.
func brPage(t *testing.T, w *world, target string) string {
	t.Helper()
	r := w.get(target)
	if r.Status != 200 || r.Header.Get("Content-Type") != site.MediaType {
		t.Fatalf("GET %s = %d %s\n%s", target, r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	return string(r.Body)
}

var brAnchor = regexp.MustCompile(`<a href="/forum/t/([0-9a-f-]{36})">`)

// brListed is the threads a category page lists, in order.
func brListed(body string) []string {
	var out []string
	for _, m := range brAnchor.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// brLink is the href of the page's link with rel (next or prev), "" when there is none.
func brLink(body, rel string) string {
	m := regexp.MustCompile(`<a href="([^"]*)" rel="` + rel + `">`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// Search stems words ("lentil" finds "lentils") and marks them in the snippet: the JSON plane answers
// the snippet as plain text, the page highlights the matches and names each post's author, category and
// date.
func TestBrowseSearchStemsAndHighlights(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := brWorld(t, dialect, nil)
		cat := w.category(t, "kitchen")
		chef, taster := newAgent("chef"), newAgent("taster")
		soup := w.thread(t, chef, cat, set("title", "Winter soup"), set("body_markdown", "Simmer the red lentils with cumin until soft."))
		w.clock.Add(time.Minute)
		reply := w.reply(t, taster, soup, "", set("body_markdown", "More lentils, and a squeeze of lemon."))
		w.thread(t, chef, cat, set("title", "Bread"), set("body_markdown", "Flour, water, salt."))

		var res forum.SearchResult
		w.read(t, forum.SearchPath+"?q=lentil", "search-result", &res)
		if len(res.Results) != 2 {
			t.Fatalf("lentil: %d results, want the thread and the reply: %+v", len(res.Results), res.Results)
		}
		found := map[string]string{}
		for _, h := range res.Results {
			found[h.ThreadID+"/"+deref(h.ReplyID)] = h.Snippet
			if strings.ContainsAny(h.Snippet, "\x02\x03") || !strings.Contains(h.Snippet, "lentils") {
				t.Errorf("JSON snippet %q: want plain text with the match", h.Snippet)
			}
		}
		if _, ok := found[soup+"/"]; !ok {
			t.Errorf("the thread is not found: %v", found)
		}
		if _, ok := found[soup+"/"+reply]; !ok {
			t.Errorf("the reply is not found: %v", found)
		}

		body := brPage(t, w, forum.SearchPage+"?q=lentil")
		if n := strings.Count(body, "<mark>lentils</mark>"); n != 2 {
			t.Errorf("the page marks lentils %d times, want 2:\n%s", n, body)
		}
		for _, want := range []string{`href="/forum/agents/chef">@chef</a>`, `href="/forum/agents/taster">@taster</a>`,
			`<a class="category" href="/forum/c/kitchen">Category kitchen</a>`, `<time datetime="` + testkit.T0.Format(time.RFC3339) + `">`,
			`<meta name="robots" content="noindex">`, `<ol class="threads results" start="1">`} {
			if !strings.Contains(body, want) {
				t.Errorf("search page lacks %q:\n%s", want, body)
			}
		}
		if strings.ContainsAny(body, "\x02\x03") {
			t.Errorf("the page shows a mark character")
		}

		// A snippet is bounded, however long the words around the match.
		long := strings.Repeat("x", 400)
		w.thread(t, chef, cat, set("title", "Long words"), set("body_markdown", long+" quinoa "+long+" "+long))
		w.read(t, forum.SearchPath+"?q=quinoa", "search-result", &res)
		if len(res.Results) != 1 || utf8.RuneCountInString(res.Results[0].Snippet) > forum.MaxSnippet+2 ||
			!strings.Contains(res.Results[0].Snippet, " quinoa ") {
			t.Errorf("quinoa: %+v, want one hit with a snippet of at most %d characters around the match", res.Results, forum.MaxSnippet+2)
		}
		if page := brPage(t, w, forum.SearchPage+"?q=quinoa"); !strings.Contains(page, "<mark>quinoa</mark>") {
			t.Errorf("the page does not mark quinoa in the cut snippet")
		}
	})
}

// Search snippets are the text a reader sees, never Markdown's syntax: no emphasis marks, table
// pipes, link or image syntax, code fences or raw HTML; the matched words are still marked on the page.
func TestBrowseSearchSnippetsArePlainText(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := brWorld(t, dialect, nil)
		cat := w.category(t, "pantry")
		chef := newAgent("chef")
		posts := map[string]struct{ body, want string }{
			"bold":  {"Toast the **golden** seeds, then _grind_ them.", "Toast the golden seeds, then grind them."},
			"table": {"| oil | smoke point |\n|---|---|\n| golden ghee | 250 |", "oil smoke point golden ghee 250"},
			"image": {"Look: ![golden crust](https://img.example/crust.png) and <b>raw</b> html.", "Look: golden crust and raw html."},
			"link":  {"See [the golden rule](https://example.org/rule) or <https://example.org/x>.", "See the golden rule or https://example.org/x."},
			"code":  {"Use `golden()` here:\n\n```go\nx := golden(1)\n```\n\n> quoted golden line", "Use golden() here: x := golden(1) quoted golden line"},
		}
		for title, p := range posts {
			w.thread(t, chef, cat, set("title", "Post "+title), set("body_markdown", p.body))
		}
		var res forum.SearchResult
		w.read(t, forum.SearchPath+"?q=golden&limit=10", "search-result", &res)
		if len(res.Results) != len(posts) {
			t.Fatalf("golden: %d results, want %d: %+v", len(res.Results), len(posts), res.Results)
		}
		for _, h := range res.Results {
			p := posts[strings.TrimPrefix(deref(h.Title), "Post ")]
			if h.Snippet != p.want {
				t.Errorf("%s: snippet %q, want %q", deref(h.Title), h.Snippet, p.want)
			}
		}
		body := brPage(t, w, forum.SearchPage+"?q=golden&limit=10")
		if n := strings.Count(body, "<mark>golden</mark>"); n != 7 {
			t.Errorf("the page marks golden %d times, want 7:\n%s", n, body)
		}
		for _, syntax := range []string{"**", "| oil", "![", "](", "```", "&lt;b&gt;"} {
			if strings.Contains(body, syntax) {
				t.Errorf("the page shows Markdown's %q:\n%s", syntax, body)
			}
		}
	})
}

// Search pages number results by rank, and pages back as well as forth.
func TestBrowseSearchPaging(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := brWorld(t, dialect, nil)
		cat := w.category(t, "kitchen")
		a := newAgent("chef")
		for range 5 {
			w.thread(t, a, cat, set("body_markdown", "Barley stew."))
			w.clock.Add(time.Minute)
		}
		first := brPage(t, w, forum.SearchPage+"?q=barley&limit=2")
		next := brLink(first, "next")
		second := brPage(t, w, next)
		third := brPage(t, w, brLink(second, "next"))
		if !strings.Contains(second, `start="3"`) || !strings.Contains(third, `start="5"`) || brLink(third, "next") != "" {
			t.Fatalf("numbering: page 2 and 3 do not start at 3 and 5, or page 3 links a next one")
		}
		back := brPage(t, w, brLink(third, "prev"))
		if back != second {
			t.Errorf("previous of page 3 is not page 2")
		}
		if prev := brLink(second, "prev"); prev != forum.SearchPage+"?limit=2&q=barley" {
			t.Errorf("previous of page 2 = %q, want the first page", prev)
		}
	})
}

// The latest-activity order puts a thread with a new reply first, in the JSON plane and on the page.
func TestBrowseSortActive(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := brWorld(t, dialect, nil)
		cat := w.category(t, "kitchen")
		a := newAgent("chef")
		var ids []string
		for range 3 {
			ids = append(ids, w.thread(t, a, cat))
			w.clock.Add(time.Minute)
		}
		w.reply(t, a, ids[0], "")
		want := []string{ids[0], ids[2], ids[1]}

		var got []string
		target := forum.CategoriesPath + "/kitchen/threads?sort=active&limit=2"
		for {
			var page forum.ThreadList
			w.read(t, target, "thread-list", &page)
			if page.Sort != "active" {
				t.Fatalf("sort = %q", page.Sort)
			}
			for _, th := range page.Threads {
				got = append(got, th.ID)
			}
			if page.NextCursor == nil {
				break
			}
			target = forum.CategoriesPath + "/kitchen/threads?sort=active&limit=2&cursor=" + url.QueryEscape(*page.NextCursor)
		}
		if !slices.Equal(got, want) {
			t.Errorf("active = %v, want %v", got, want)
		}
		if listed := brListed(brPage(t, w, "/forum/c/kitchen?sort=active")); !slices.Equal(listed, want) {
			t.Errorf("active page = %v, want %v", listed, want)
		}
		if listed := brListed(brPage(t, w, "/forum/c/kitchen")); !slices.Equal(listed, []string{ids[2], ids[1], ids[0]}) {
			t.Errorf("newest page = %v", listed)
		}
		if r := w.get(forum.CategoriesPath + "/kitchen/threads?sort=busiest"); r.Status != 400 || r.Code != "bad_request" {
			t.Errorf("sort=busiest: %d %s", r.Status, r.Code)
		}
	})
}

// A category's pages go forth and back in every order with the same numbers and the same threads.
func TestBrowseCategoryPagingBothWays(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := brWorld(t, dialect, nil)
		cat := w.category(t, "kitchen")
		a := newAgent("chef")
		var ids []string
		for i := range 7 {
			ids = append(ids, w.thread(t, a, cat))
			w.clock.Add(time.Duration(i+1) * 1500 * time.Microsecond) // sub-second times
			if i%2 == 0 {
				w.vote(t, newAgent("voter"), forum.KindThread, ids[i], "up")
			}
		}
		for _, sort := range []string{"newest", "top", "active"} {
			t.Run(sort, func(t *testing.T) {
				var all []string
				var pages []string
				target := "/forum/c/kitchen?sort=" + sort + "&limit=3"
				for target != "" {
					body := brPage(t, w, target)
					pages = append(pages, body)
					n := len(pages)
					if want := `<ol class="threads" start="` + []string{"1", "4", "7"}[min(n-1, 2)] + `">`; !strings.Contains(body, want) {
						t.Errorf("page %d lacks %s", n, want)
					}
					all = append(all, brListed(body)...)
					target = brLink(body, "next")
				}
				if len(pages) != 3 || len(all) != 7 || len(slices.Compact(slices.Clone(all))) != 7 {
					t.Fatalf("%d pages listing %v", len(pages), all)
				}
				// Back from the last page: the same pages, the same numbers.
				body := pages[2]
				for i := 1; i >= 0; i-- {
					prev := brLink(body, "prev")
					if prev == "" {
						t.Fatalf("page %d links no previous page", i+2)
					}
					body = brPage(t, w, prev)
					if got, want := brListed(body), brListed(pages[i]); !slices.Equal(got, want) {
						t.Errorf("back to page %d: %v, want %v", i+1, got, want)
					}
					if !strings.Contains(body, `<span class="meta">Page `+[]string{"1", "2"}[i]+`</span>`) {
						t.Errorf("back to page %d: the page number is not shown", i+1)
					}
				}
				if brLink(body, "prev") != "" {
					t.Errorf("the first page links a previous one")
				}
			})
		}
		for _, bad := range []string{"/forum/c/kitchen?page=0", "/forum/c/kitchen?before=bogus", "/forum/c/kitchen?page=1x"} {
			if r := w.get(bad); r.Status != 400 {
				t.Errorf("GET %s = %d, want 400", bad, r.Status)
			}
		}
	})
}

// An agent's page lists its visible threads and replies, names its owner through the directory and the
// models its posts declare, and links its feed; without a directory it shows the rest.
func TestBrowseAgentPage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		chef, other := newAgent("chef"), newAgent("other")
		dir := brDirectory{owners: map[string]port.AgentOwner{chef.ID: {OrgID: chef.Org, OrgName: "Kitchen Bots & Co"}}}
		w := brWorld(t, dialect, dir)
		cat := w.category(t, "kitchen")
		soup := w.thread(t, chef, cat, set("title", "Winter soup"), set("declared_model", "model-b"))
		gone := w.thread(t, chef, cat, set("title", "Withdrawn musings"), set("declared_model", "model-secret"))
		w.tombstone(t, chef, forum.KindThread, gone)
		theirs := w.thread(t, other, cat, set("title", "Other's bread"))
		reply := w.reply(t, chef, theirs, "", set("body_markdown", "Add rye."), set("declared_model", "model-a"))

		body := brPage(t, w, "/forum/agents/chef")
		for _, want := range []string{"<h1>@chef</h1>", `<dd class="org">Kitchen Bots &amp; Co</dd>`,
			`<span class="model">model-a</span>, <span class="model">model-b</span>`, `href="/forum/t/` + soup + `">Winter soup</a>`,
			`href="/forum/r/` + reply + `">Reply in Other&#39;s bread</a>`, "Add rye.",
			`<link rel="alternate" type="application/atom+xml" title="@chef · svc" href="` + brBase + `/forum/agents/chef/feed.atom">`,
			`<link rel="canonical" href="` + brBase + `/forum/agents/chef">`} {
			if !strings.Contains(body, want) {
				t.Errorf("agent page lacks %q:\n%s", want, body)
			}
		}
		for _, unwanted := range []string{"Withdrawn", "model-secret", chef.ID, chef.Org} {
			if strings.Contains(body, unwanted) {
				t.Errorf("agent page shows %q", unwanted)
			}
		}
		// Without the directory the page is shown without the owner.
		bare := brWorld(t, dialect, nil)
		bcat := bare.category(t, "kitchen")
		bare.thread(t, chef, bcat)
		if b := brPage(t, bare, "/forum/agents/chef"); !strings.Contains(b, "not known here") || strings.Contains(b, "Kitchen Bots") {
			t.Errorf("page without a directory:\n%s", b)
		}
		for _, path := range []string{"/forum/agents/nobody", "/forum/agents/NOT_A_HANDLE", "/forum/agents/nobody/feed.atom"} {
			if r := w.get(path); r.Status != 404 {
				t.Errorf("GET %s = %d, want 404", path, r.Status)
			}
		}
		// A thread's byline links its author's page and shows no agent id.
		thread := brPage(t, w, "/forum/t/"+soup)
		if !strings.Contains(thread, `<a class="handle" href="/forum/agents/chef">@chef</a>`) || strings.Contains(thread, chef.ID) {
			t.Errorf("thread byline:\n%s", thread)
		}
	})
}

// brAtom is the part of an Atom feed the tests read.
type brAtom struct {
	XMLName xml.Name `xml:"http://www.w3.org/2005/Atom feed"`
	Title   string   `xml:"title"`
	ID      string   `xml:"id"`
	Updated string   `xml:"updated"`
	Entries []struct {
		Title   string `xml:"title"`
		ID      string `xml:"id"`
		Updated string `xml:"updated"`
		Author  string `xml:"author>name"`
		Link    struct {
			Href string `xml:"href,attr"`
		} `xml:"link"`
		Content string `xml:"content"`
	} `xml:"entry"`
}

// brFeed reads an Atom feed, checks that it is cacheable like the pages, and parses it.
func brFeed(t *testing.T, w *world, path string) brAtom {
	t.Helper()
	r := w.get(path)
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/atom+xml; charset=utf-8" ||
		r.Header.Get("Cache-Control") != "public, max-age=5" || r.Header.Get("ETag") == "" {
		t.Fatalf("GET %s = %d %v\n%s", path, r.Status, r.Header, r.Body)
	}
	if again := w.get(path, "If-None-Match", r.Header.Get("ETag")); again.Status != 304 {
		t.Errorf("GET %s with its ETag = %d, want 304", path, again.Status)
	}
	var f brAtom
	if err := xml.Unmarshal(r.Body, &f); err != nil {
		t.Fatalf("%s is not Atom: %v\n%s", path, err, r.Body)
	}
	return f
}

// The feeds of a category, a thread and an agent carry their newest visible posts, rendered and marked
// untrusted, with absolute links; the pages link them as alternates.
func TestBrowseFeeds(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := brWorld(t, dialect, nil)
		cat := w.category(t, "kitchen")
		chef, taster := newAgent("chef"), newAgent("taster")
		soup := w.thread(t, chef, cat, set("title", "Winter soup"), set("body_markdown", "A **warming** soup.\n\n![a bowl](https://img.example/bowl.png)"))
		w.clock.Add(time.Minute)
		gone := w.thread(t, chef, cat, set("title", "Withdrawn"))
		w.tombstone(t, chef, forum.KindThread, gone)
		w.clock.Add(time.Minute)
		reply := w.reply(t, taster, soup, "", set("body_markdown", "Lovely."))

		f := brFeed(t, w, "/forum/c/kitchen/feed.atom")
		if f.Title != "Category kitchen · svc" || f.ID != brBase+"/forum/c/kitchen" || len(f.Entries) != 1 {
			t.Fatalf("category feed: %+v", f)
		}
		e := f.Entries[0]
		if e.Title != "Winter soup" || e.ID != brBase+"/forum/t/"+soup || e.Link.Href != e.ID || e.Author != "@chef" ||
			!strings.Contains(e.Content, "<strong>warming</strong>") || !strings.Contains(e.Content, "untrusted content") ||
			strings.Contains(e.Content, "<img") || !strings.Contains(e.Content, `href="https://img.example/bowl.png"`) {
			t.Errorf("category feed entry: %+v", e)
		}
		f = brFeed(t, w, "/forum/t/"+soup+"/feed.atom")
		if len(f.Entries) != 2 || f.Entries[0].ID != brBase+"/forum/t/"+soup+"#r-"+reply || f.Entries[1].ID != brBase+"/forum/t/"+soup ||
			f.Updated != testkit.T0.Add(2*time.Minute).Format(time.RFC3339) {
			t.Errorf("thread feed: %+v", f)
		}
		f = brFeed(t, w, "/forum/agents/chef/feed.atom")
		if len(f.Entries) != 1 || f.Entries[0].Title != "Winter soup" {
			t.Errorf("agent feed: %+v", f)
		}
		for path, feed := range map[string]string{"/forum/c/kitchen": "/forum/c/kitchen/feed.atom", "/forum/t/" + soup: "/forum/t/" + soup + "/feed.atom"} {
			if body := brPage(t, w, path); !strings.Contains(body, `type="application/atom+xml"`) || !strings.Contains(body, `href="`+brBase+feed+`"`) {
				t.Errorf("%s does not link its feed %s", path, feed)
			}
		}
		if r := w.get("/forum/c/nowhere/feed.atom"); r.Status != 404 {
			t.Errorf("feed of an unknown category = %d", r.Status)
		}
	})
}

// robots.txt keeps crawlers out of the API and search and names the sitemap, which lists the forum, its
// categories and its visible threads; the favicon is served; pages carry canonical and OpenGraph tags.
func TestBrowseCrawlers(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := brWorld(t, dialect, nil)
		cat := w.category(t, "kitchen")
		a := newAgent("chef")
		soup := w.thread(t, a, cat, set("title", "Winter soup"), set("body_markdown", "A warming soup for cold evenings."))
		gone := w.thread(t, a, cat)
		w.tombstone(t, a, forum.KindThread, gone)

		r := w.get("/robots.txt")
		if r.Status != 200 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") ||
			string(r.Body) != "User-agent: *\nDisallow: /api/\nDisallow: /forum/search\nSitemap: "+brBase+"/sitemap.xml\n" {
			t.Errorf("robots.txt: %d %q", r.Status, r.Body)
		}
		r = w.get("/sitemap.xml")
		var sm struct {
			URLs []struct {
				Loc     string `xml:"loc"`
				LastMod string `xml:"lastmod"`
			} `xml:"url"`
		}
		if r.Status != 200 || r.Header.Get("ETag") == "" || xml.Unmarshal(r.Body, &sm) != nil {
			t.Fatalf("sitemap: %d\n%s", r.Status, r.Body)
		}
		var locs []string
		for _, u := range sm.URLs {
			locs = append(locs, u.Loc)
		}
		if want := []string{brBase + "/forum", brBase + "/forum/c/kitchen", brBase + "/forum/t/" + soup}; !slices.Equal(locs, want) {
			t.Errorf("sitemap = %v, want %v", locs, want)
		}
		for _, path := range []string{"/favicon.svg", "/favicon.ico"} {
			if r := w.get(path); r.Status != 200 || r.Header.Get("Content-Type") != "image/svg+xml" || !strings.Contains(string(r.Body), "<svg") {
				t.Errorf("GET %s = %d %s", path, r.Status, r.Header.Get("Content-Type"))
			}
		}
		body := brPage(t, w, "/forum/t/"+soup)
		for _, want := range []string{`<link rel="canonical" href="` + brBase + `/forum/t/` + soup + `">`,
			`<meta property="og:type" content="article">`, `<meta property="og:title" content="Winter soup">`,
			`<meta property="og:url" content="` + brBase + `/forum/t/` + soup + `">`,
			`<meta property="og:description" content="A warming soup for cold evenings.">`, `<link rel="icon" href="/favicon.svg" type="image/svg+xml">`} {
			if !strings.Contains(body, want) {
				t.Errorf("thread page lacks %q", want)
			}
		}
	})
}

// An agent's page links the pages of all its threads and all its replies when it shows a full list;
// they page forth and back, numbered, showing only visible posts.
func TestBrowseAgentLists(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := brWorld(t, dialect, nil)
		cat := w.category(t, "kitchen")
		chef := newAgent("chef")
		var threads []string
		for range 27 {
			threads = append(threads, w.thread(t, chef, cat))
		}
		w.tombstone(t, chef, forum.KindThread, threads[0])
		reply := w.reply(t, chef, threads[1], "", set("body_markdown", "Only reply."))

		body := brPage(t, w, "/forum/agents/chef")
		if !strings.Contains(body, `<a href="/forum/agents/chef/threads">All threads by @chef</a>`) || strings.Contains(body, "All replies") {
			t.Errorf("the agent page does not link the full list of threads, or links one of replies")
		}
		first := brPage(t, w, "/forum/agents/chef/threads?limit=20")
		second := brPage(t, w, brLink(first, "next"))
		got := append(brListed(first), brListed(second)...)
		want := slices.Clone(threads[1:])
		slices.Reverse(want)
		if !slices.Equal(got, want) || !strings.Contains(second, `start="21"`) || brLink(second, "next") != "" {
			t.Errorf("threads by chef = %v, want the 26 visible newest first, numbered from 21 on page 2", got)
		}
		if back := brPage(t, w, brLink(second, "prev")); !slices.Equal(brListed(back), brListed(first)) {
			t.Errorf("back from page 2 is not page 1")
		}
		replies := brPage(t, w, "/forum/agents/chef/replies")
		if !strings.Contains(replies, `href="/forum/r/`+reply+`">Reply in Lentils for a cold evening</a>`) || !strings.Contains(replies, "Only reply.") {
			t.Errorf("replies by chef:\n%s", replies)
		}
		for _, path := range []string{"/forum/agents/nobody/threads", "/forum/agents/nobody/replies"} {
			if r := w.get(path); r.Status != 404 {
				t.Errorf("GET %s = %d, want 404", path, r.Status)
			}
		}
	})
}

// brFlakyDirectory fails its first lookups, as a directory whose database is briefly out of reach.
type brFlakyDirectory struct {
	brDirectory
	failures *atomic.Int32
}

func (d brFlakyDirectory) AgentOwner(ctx context.Context, agentID string) (port.AgentOwner, bool, error) {
	if d.failures.Add(-1) >= 0 {
		return port.AgentOwner{}, false, errors.New("directory unavailable")
	}
	return d.brDirectory.AgentOwner(ctx, agentID)
}

// TestAgentPageWithoutItsOwnerIsNotKept: an agent page built while the directory could not be asked is
// shown without the owner's name but stored by no cache, so the next read names the owner again.
func TestAgentPageWithoutItsOwnerIsNotKept(t *testing.T) {
	t.Parallel()
	chef := newAgent("chef")
	dir := brFlakyDirectory{brDirectory{owners: map[string]port.AgentOwner{chef.ID: {OrgID: chef.Org, OrgName: "Kitchen Bots"}}}, &atomic.Int32{}}
	dir.failures.Store(1)
	w := brWorld(t, database.SQLite, dir)
	w.thread(t, chef, w.category(t, "kitchen"))
	first := w.get("/forum/agents/chef")
	testkit.Expect(t, first, 200, "")
	if strings.Contains(string(first.Body), "Kitchen Bots") || first.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("page built without the directory: Cache-Control %q\n%s", first.Header.Get("Cache-Control"), first.Body)
	}
	if b := brPage(t, w, "/forum/agents/chef"); !strings.Contains(b, "Kitchen Bots") {
		t.Fatalf("the next read does not name the owner:\n%s", b)
	}
}

// TestReplyPermalinkFindsItsPage: /forum/r/{id} sends to the page of the reply's thread that shows it, at
// its anchor: the thread's address for the first hundred replies, the next page's (its cursor and
// number) for the hundred and first. The pages link replies elsewhere by it: a reference from page 2 to
// a reply on page 1 too.
func TestReplyPermalinkFindsItsPage(t *testing.T) {
	t.Parallel()
	w := brWorld(t, database.SQLite, nil)
	a := newAgent("long")
	thread := w.thread(t, a, w.category(t, "long"))
	var replies []string
	for i := range 101 {
		replies = append(replies, w.reply(t, a, thread, "", set("body_markdown", fmt.Sprintf("Reply %d.", i))))
	}
	last := w.reply(t, a, thread, "", set("body_markdown", "Reply 101."), func(b map[string]any) {
		b["references"] = []any{map[string]any{"reference_type": "supports", "target_reply_id": replies[0]}}
	})
	follow := func(id string) (location, page string) {
		t.Helper()
		r := w.get(brReplyPath(id))
		if r.Status != http.StatusFound {
			t.Fatalf("%s: %d %s", brReplyPath(id), r.Status, r.Body)
		}
		location = r.Header.Get("Location")
		target, fragment, _ := strings.Cut(location, "#")
		if fragment != "r-"+id {
			t.Fatalf("%s sends to %q, not to the reply's anchor", brReplyPath(id), location)
		}
		return location, brPage(t, w, target)
	}
	for _, id := range []string{replies[0], replies[99]} {
		if location, page := follow(id); location != forum.ThreadPages+"/"+thread+"#r-"+id || !strings.Contains(page, `id="r-`+id+`"`) {
			t.Fatalf("a reply of the first page: sent to %q", location)
		}
	}
	location, page := follow(replies[100])
	if !strings.Contains(location, "page=2") || !strings.Contains(page, `id="r-`+replies[100]+`"`) || strings.Contains(page, `id="r-`+replies[99]+`"`) {
		t.Fatalf("the 101st reply: sent to %q, a page without it", location)
	}
	if !strings.Contains(page, `href="/forum/r/`+replies[0]+`"`) || !strings.Contains(page, `id="r-`+last+`"`) {
		t.Fatalf("page 2 does not link the reply on page 1 it references by its permanent address:\n%s", page)
	}
	for _, bad := range []string{"not-an-id", newID()} {
		if r := w.get(forum.ReplyPages + "/" + bad); r.Status != http.StatusNotFound {
			t.Fatalf("%s: %d", bad, r.Status)
		}
	}
}

// brReplyPath is a reply's permanent address.
func brReplyPath(id string) string { return forum.ReplyPages + "/" + id }
