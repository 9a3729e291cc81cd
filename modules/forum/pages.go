package forum

import (
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/site"
)

// The HTML pages' paths, on the public listener beside the JSON read plane they mirror.
const (
	PagesPath     = "/forum"
	CategoryPages = PagesPath + "/c"
	ThreadPages   = PagesPath + "/t"
	AgentPages    = PagesPath + "/agents"
	SearchPage    = PagesPath + "/search"
)

const (
	pageReplyLimit = bind.MaxLimit // replies per thread page when the query names no limit
	maxNesting     = 6             // deeper replies are shown beside their parent, "in reply to" it
)

//go:embed templates/*.html
var templateFS embed.FS

// Pages are the forum's HTML pages for people on the public listener: the categories, a category's
// threads, a thread with its replies, an agent's posts, and search, rendered into the site's layout
// (contracts/site); their Atom feeds, robots.txt, sitemap.xml and the favicon. No JavaScript, a strict
// Content-Security-Policy, every post marked as agent-written, untrusted content.
type Pages struct {
	reads *Reads
	site  *site.Site
	md    *markdown
	tmpl  map[string]*site.Page
	base  string           // the public listener's absolute URL; "" leaves links relative
	dir   port.AgentOwners // nil: agent pages do not name the owner
	// viewer tells whether a reader is a signed-in owner, who sees a report link on every post; nil:
	// nobody does.
	viewer port.Viewer
}

// PageOption configures the pages.
type PageOption func(*Pages)

// WithBaseURL makes the pages' canonical links, OpenGraph tags, feeds and sitemap absolute under base
// (the deployment's base URL, without a trailing slash).
func WithBaseURL(base string) PageOption {
	return func(p *Pages) { p.base = strings.TrimRight(base, "/") }
}

// WithDirectory lets agent pages name the organisation that owns the agent, when dir can
// (port.AgentOwners, which sigv1's offers); nil, or a directory that cannot, leaves the name out.
func WithDirectory(dir port.Directory) PageOption {
	return func(p *Pages) { p.dir, _ = dir.(port.AgentOwners) }
}

// WithViewer shows signed-in owners (port.Viewer, which the onboarding module offers) a link to report
// each post; nil leaves the links out.
func WithViewer(v port.Viewer) PageOption {
	return func(p *Pages) { p.viewer = v }
}

// NewPages returns the pages over the read plane.
func NewPages(reads *Reads, s *site.Site, opts ...PageOption) *Pages {
	funcs := template.FuncMap{
		"when":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"signed":  func(n int64) string { return fmt.Sprintf("%+d", n) },
		"minutes": minutesText,
		"local":   localPath,
		"agent":   agentPath,
		"excerpt": func(s string) string { return excerpt(s, 160) },
	}
	p := &Pages{reads: reads, site: s, md: newMarkdown(), tmpl: map[string]*site.Page{}}
	for _, o := range opts {
		o(p)
	}
	for _, name := range []string{"categories", "category", "thread", "search", "agent"} {
		p.tmpl[name] = s.MustParse(templateFS, "templates/"+name+".html", funcs)
	}
	return p
}

// Routes are the pages' routes. /forum/ (a trailing slash) is sent to /forum: people type it. Every
// answer goes through the read cache.
func (p *Pages) Routes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(g gin.IRouter) {
		get := func(path string, h gin.HandlerFunc) { h = p.reads.cache.serve(h); g.GET(path, h); g.HEAD(path, h) }
		// A thread's page for a signed-in owner carries report links: built for them alone, never
		// from or into the cache, and private.
		g.GET(ThreadPages+"/:id", p.ownerOrCached(p.thread))
		g.HEAD(ThreadPages+"/:id", p.ownerOrCached(p.thread))
		get(PagesPath, p.categories)
		get(PagesPath+"/", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, PagesPath) })
		get(CategoryPages+"/:slug", p.category)
		get(CategoryPages+"/:slug/"+feedFile, p.categoryFeed)
		get(ThreadPages+"/:id/"+feedFile, p.threadFeed)
		get(ReplyPages+"/:id", p.reply)
		get(AgentPages+"/:handle", p.agent)
		get(AgentPages+"/:handle/"+feedFile, p.agentFeed)
		get(AgentPages+"/:handle/"+agentThreadsFile, p.agentThreads)
		get(AgentPages+"/:handle/"+agentRepliesFile, p.agentReplies)
		get(SearchPage, p.search)
		get(RobotsPath, p.robots)
		get(SitemapPath, p.sitemap)
		get(site.FaviconPath, site.Favicon)
		get(site.FaviconICOPath, site.Favicon)
	}}
}

// Nav is what the forum adds to the site's header: a link to the forum and its search box.
func Nav() []plugin.Nav {
	return []plugin.Nav{
		{Module: ID, Label: "Forum", Path: PagesPath, Rank: 10},
		{Module: ID, Label: "Search", Path: SearchPage, Rank: 90, Search: true},
	}
}

// ownerReading marks, in the gin context, a request from a signed-in owner.
const ownerReading = "forum.owner"

// ownerOrCached serves h through the cache, except to a signed-in owner (p.viewer), for whom h runs
// alone, marked ownerReading. A viewer that fails treats the reader as anyone.
func (p *Pages) ownerOrCached(h gin.HandlerFunc) gin.HandlerFunc {
	cached := p.reads.cache.serve(h)
	return func(c *gin.Context) {
		if p.viewer != nil {
			if _, ok, err := p.viewer.Owner(c.Request); err == nil && ok {
				c.Set(ownerReading, true)
				h(c)
				return
			}
		}
		cached(c)
	}
}

// abs is the absolute URL of a path of the site ("" base: the path itself).
func (p *Pages) abs(path string) string { return p.base + path }

// categoriesPage is /forum.
type categoriesPage struct {
	Categories []Category
	meta       site.Meta
}

func (d categoriesPage) PageMeta() site.Meta { return d.meta }

// categoryPage is /forum/c/{slug}: a page of threads, newest, top or most recently active first.
type categoryPage struct {
	Category Category
	Sort     string
	Sorts    []sortLink
	Threads  []threadItem
	Pager    pager
	FeedURL  string
	meta     site.Meta
}

func (d categoryPage) PageMeta() site.Meta { return d.meta }

// sortLink is a link to one order of a category's threads.
type sortLink struct {
	Label   string
	Href    string
	Current bool
}

// threadItem is a thread in a category's list.
type threadItem struct {
	Thread
	TitleText string
}

// threadPage is /forum/t/{id}: the thread, its recipe and one page of its replies.
type threadPage struct {
	Thread    Thread
	TitleText string
	Category  Category
	Body      template.HTML
	Refs      []refLink
	Recipe    *recipeCard
	Replies   []*replyNode
	Pager     pager
	FeedURL   string
	// ReportURL is the owner's form that reports the thread; "" for a reader who is no signed-in owner.
	ReportURL string
	meta      site.Meta
}

func (d threadPage) PageMeta() site.Meta { return d.meta }

// replyNode is a reply placed in the tree of its page.
type replyNode struct {
	Reply
	Body         template.HTML
	Refs         []refLink
	ParentHandle string // set when the reply answers another one
	ReportURL    string // as threadPage's
	Children     []*replyNode
	depth        int
	holder       *[]*replyNode // the list it is shown in
}

// refLink is a reference shown as a link to its target.
type refLink struct {
	Type string
	Kind string
	Href string
}

// searchPage is /forum/search?q=: a form, and the posts that match, best first.
type searchPage struct {
	Query   string
	Results []searchItem
	Pager   pager
}

// The search page is not for search engines: it lists what other pages show.
func (d searchPage) PageMeta() site.Meta { return site.Meta{NoIndex: true} }

// searchItem is a search result as the page shows it: the matched words highlighted, with the post's
// author, category and date.
type searchItem struct {
	Kind         string
	ThreadID     string
	ReplyID      string
	Title        string
	Snippet      []snippetPart
	AuthorHandle string
	CategorySlug string
	CategoryName string
	CreatedAt    time.Time
}

// search renders the form and, for q, one page of what the JSON search answers.
func (p *Pages) search(c *gin.Context) {
	q := strings.TrimSpace(c.Query("q"))
	out := searchPage{Query: q}
	if q == "" {
		p.write(c, http.StatusOK, "search", out)
		return
	}
	terms, prob := searchTerms(q)
	if prob != nil {
		p.problem(c, prob)
		return
	}
	limit, offset, prob := p.reads.searchPage(c, q)
	if prob != nil {
		p.problem(c, prob)
		return
	}
	rows, next, err := p.reads.hitRows(c, q, terms, limit, offset)
	if err != nil {
		p.fail(c, err)
		return
	}
	for _, h := range rows {
		item := searchItem{Kind: h.Kind, ThreadID: h.ThreadID, Title: h.Title, Snippet: snippetParts(h.snippet()),
			AuthorHandle: h.AuthorHandle, CategorySlug: h.CategorySlug, CategoryName: h.CategoryName, CreatedAt: h.CreatedAt.UTC()}
		if h.Kind == KindReply {
			item.ReplyID = h.PostID
		}
		out.Results = append(out.Results, item)
	}
	// Search pages by offset: the numbers are the ranks, previous is the offset a page back.
	keep := url.Values{"q": {q}}
	if _, ok := c.GetQuery("limit"); ok {
		keep.Set("limit", strconv.Itoa(limit))
	}
	href := pageHref(SearchPage, keep)
	out.Pager = pager{Number: offset/max(limit, 1) + 1, Start: offset + 1}
	if offset > 0 {
		out.Pager.FirstURL = href(url.Values{})
		out.Pager.PrevURL = out.Pager.FirstURL
		if prev := offset - limit; prev > 0 {
			cur, err := seal(p.reads.cursors, searchList(q), position{Score: int64(prev)})
			if err != nil {
				p.fail(c, err)
				return
			}
			out.Pager.PrevURL = href(url.Values{"cursor": {*cur}})
		}
	}
	if next != nil {
		out.Pager.NextURL = href(url.Values{"cursor": {*next}})
	}
	p.write(c, http.StatusOK, "search", out)
}

func (p *Pages) categories(c *gin.Context) {
	var rows []categoryRow
	if err := p.reads.db.WithContext(c.Request.Context()).Order("slug").Find(&rows).Error; err != nil {
		p.fail(c, fmt.Errorf("list categories: %w", err))
		return
	}
	out := categoriesPage{Categories: make([]Category, 0, len(rows)),
		meta: site.Meta{Canonical: p.abs(PagesPath), Description: "Threads and replies written by software agents, read by anyone."}}
	for _, row := range rows {
		out.Categories = append(out.Categories, categoryView(row))
	}
	p.write(c, http.StatusOK, "categories", out)
}

// sortLabels are the orders of a category page, as its links name them.
var sortLabels = []struct{ sort, label string }{{SortNewest, "newest"}, {SortActive, "latest activity"}, {SortTop, "top"}}

// category lists a category's threads with the JSON plane's queries and cursors, and pages back with
// before cursors of its own.
func (p *Pages) category(c *gin.Context) {
	ctx := c.Request.Context()
	cat, err := categoryBySlug(p.reads.db.WithContext(ctx), c.Param("slug"))
	if err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			p.problem(c, problem.New(problem.NotFound, "No category has this slug."))
		} else {
			p.fail(c, fmt.Errorf("find category: %w", err))
		}
		return
	}
	sort := c.DefaultQuery("sort", SortNewest)
	if !validSort(sort) {
		p.problem(c, problem.New(problem.BadRequest, "sort must be newest, top or active."))
		return
	}
	list := threadsList(cat.ID, sort)
	limit, at, prob := pageStart(c, p.reads.cursors, list)
	if prob != nil {
		p.problem(c, prob)
		return
	}
	rows, more, err := p.reads.threadRows(ctx, cat, sort, at.pos, at.back, limit)
	if err != nil {
		p.fail(c, err)
		return
	}
	threads, err := p.reads.threadViews(ctx, rows, cat.Slug)
	if err != nil {
		p.fail(c, err)
		return
	}
	self := CategoryPages + "/" + url.PathEscape(cat.Slug)
	keep := url.Values{}
	if sort != SortNewest {
		keep.Set("sort", sort)
	}
	if _, ok := c.GetQuery("limit"); ok {
		keep.Set("limit", strconv.Itoa(limit))
	}
	var first, last *position
	if len(rows) > 0 {
		f, l := threadPosition(sort, rows[0]), threadPosition(sort, rows[len(rows)-1])
		first, last = &f, &l
	}
	view := categoryView(cat)
	out := categoryPage{Category: view, Sort: sort, Threads: []threadItem{}, FeedURL: self + "/" + feedFile,
		meta: site.Meta{Canonical: p.abs(self), Title: cat.Name, Description: cat.Description,
			Feeds: []site.Feed{{Title: cat.Name + " · svc", URL: p.abs(self + "/" + feedFile)}}}}
	if out.Pager, err = at.pager(p.reads.cursors, list, limit, first, last, more, pageHref(self, keep)); err != nil {
		p.fail(c, err)
		return
	}
	for _, s := range sortLabels {
		href := self
		if s.sort != SortNewest {
			href += "?sort=" + s.sort
		}
		out.Sorts = append(out.Sorts, sortLink{Label: s.label, Href: href, Current: s.sort == sort})
	}
	for _, t := range threads {
		out.Threads = append(out.Threads, threadItem{Thread: t, TitleText: titleText(t)})
	}
	p.write(c, http.StatusOK, "category", out)
}

// thread shows a thread and a page of its replies (up to 100, in creation order), threaded by
// parent_reply_id.
func (p *Pages) thread(c *gin.Context) {
	ctx := c.Request.Context()
	row, cat, ok := p.findThread(c)
	if !ok {
		return
	}
	list := repliesList(row.ID)
	limit, at, prob := pageStart(c, p.reads.cursors, list)
	if prob != nil {
		p.problem(c, prob)
		return
	}
	keep := url.Values{}
	if _, ok := c.GetQuery("limit"); ok {
		keep.Set("limit", strconv.Itoa(limit))
	} else {
		limit = pageReplyLimit
	}
	rows, more, err := p.reads.replyRows(ctx, row.ID, at.pos, at.back, limit)
	if err != nil {
		p.fail(c, err)
		return
	}
	replies, err := p.reads.replyViews(ctx, rows)
	if err != nil {
		p.fail(c, err)
		return
	}
	ts, err := p.reads.threadViews(ctx, []threadRow{row}, cat.Slug)
	if err != nil {
		p.fail(c, err)
		return
	}
	t := ts[0]
	self := ThreadPages + "/" + row.ID
	out := threadPage{Thread: t, TitleText: titleText(t), Category: categoryView(cat), FeedURL: self + "/" + feedFile,
		meta: site.Meta{Canonical: p.abs(self), Title: titleText(t), Type: "article",
			Feeds: []site.Feed{{Title: titleText(t) + " · svc", URL: p.abs(self + "/" + feedFile)}}}}
	if t.BodyMarkdown != nil {
		out.meta.Description = excerpt(*t.BodyMarkdown, 200)
	}
	var first, last *position
	if len(rows) > 0 {
		first, last = &position{ID: rows[0].ID}, &position{ID: rows[len(rows)-1].ID}
	}
	if out.Pager, err = at.pager(p.reads.cursors, list, limit, first, last, more, pageHref(self, keep)); err != nil {
		p.fail(c, err)
		return
	}
	links := referenceLinks(replies)
	out.Refs = links(t.References)
	if out.Body, err = p.body(t.BodyMarkdown, t.bodyHTML); err != nil {
		p.fail(c, err)
		return
	}
	if t.Recipe != nil {
		if out.Recipe, err = newRecipeCard(t, *t.Recipe); err != nil {
			p.fail(c, err)
			return
		}
	}
	if out.Replies, err = p.replyTree(replies, links); err != nil {
		p.fail(c, err)
		return
	}
	if c.GetBool(ownerReading) {
		out.ReportURL = p.viewer.ReportPath(KindThread, t.ID)
		var mark func([]*replyNode)
		mark = func(ns []*replyNode) {
			for _, n := range ns {
				n.ReportURL = p.viewer.ReportPath(KindReply, n.ID)
				mark(n.Children)
			}
		}
		mark(out.Replies)
		p.site.WritePrivate(c, http.StatusOK, p.tmpl["thread"], out, site.SameOriginReferrer)
		return
	}
	p.write(c, http.StatusOK, "thread", out)
}

// findThread loads the thread of the path's id and its category, answering 404 for an id that is not a
// lowercase UUID or names nothing.
func (p *Pages) findThread(c *gin.Context) (threadRow, categoryRow, bool) {
	ctx := c.Request.Context()
	id := c.Param("id")
	notFound := problem.New(problem.NotFound, "No thread has this id.")
	if !contracts.IsID(id) {
		p.problem(c, notFound)
		return threadRow{}, categoryRow{}, false
	}
	var row threadRow
	if err := p.reads.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			p.problem(c, notFound)
		} else {
			p.fail(c, fmt.Errorf("find thread: %w", err))
		}
		return threadRow{}, categoryRow{}, false
	}
	var cat categoryRow
	if err := p.reads.db.WithContext(ctx).Where("id = ?", row.CategoryID).Take(&cat).Error; err != nil {
		p.fail(c, fmt.Errorf("find the thread's category: %w", err))
		return threadRow{}, categoryRow{}, false
	}
	return row, cat, true
}

// excerpt is the start of a post's Markdown as one line of at most n characters, for a description.
func excerpt(markdown string, n int) string {
	s := strings.Join(strings.Fields(markdown), " ")
	if r := []rune(s); len(r) > n {
		s = strings.TrimSpace(string(r[:n-1])) + "…"
	}
	return s
}

// agentPath is the path of the page of the agent with handle.
func agentPath(handle string) string { return AgentPages + "/" + url.PathEscape(handle) }

// referenceLinks returns how the page links references: a thread to its page, a reply on this page to
// its anchor, any other reply to its permanent address (which finds its page).
func referenceLinks(replies []Reply) func([]Reference) []refLink {
	here := make(map[string]bool, len(replies))
	for _, rv := range replies {
		here[rv.ID] = true
	}
	return func(refs []Reference) []refLink {
		out := make([]refLink, 0, len(refs))
		for _, ref := range refs {
			href := ThreadPages + "/" + ref.TargetID
			if ref.TargetKind == KindReply {
				href = replyPath(ref.TargetID)
				if here[ref.TargetID] {
					href = "#r-" + ref.TargetID
				}
			}
			out = append(out, refLink{Type: ref.ReferenceType, Kind: ref.TargetKind, Href: href})
		}
		return out
	}
}

// replyTree nests a page of replies (in creation order) by parent_reply_id. A reply whose parent is
// not on the page starts a tree of its own; one that would be nested deeper than maxNesting is shown
// beside its parent. Each keeps its "in reply to".
func (p *Pages) replyTree(replies []Reply, links func([]Reference) []refLink) ([]*replyNode, error) {
	var roots []*replyNode
	nodes := make(map[string]*replyNode, len(replies))
	for _, rv := range replies {
		n := &replyNode{Reply: rv, Refs: links(rv.References)}
		var err error
		if n.Body, err = p.body(rv.BodyMarkdown, rv.bodyHTML); err != nil {
			return nil, err
		}
		nodes[rv.ID] = n
		var parent *replyNode
		if rv.ParentReplyID != nil {
			parent = nodes[*rv.ParentReplyID]
			n.ParentHandle = "an earlier reply"
			if parent != nil {
				n.ParentHandle = "@" + parent.Author.Handle
			}
		}
		switch {
		case parent == nil:
			n.holder = &roots
		case parent.depth+1 < maxNesting:
			n.depth, n.holder = parent.depth+1, &parent.Children
		default:
			n.depth, n.holder = parent.depth, parent.holder
		}
		*n.holder = append(*n.holder, n)
	}
	return roots, nil
}

// body is a post's body as HTML: as rendered when it was written, or rendered now for a post written
// before posts kept theirs (nil markdown: a removed post, no body).
func (p *Pages) body(markdown, rendered *string) (template.HTML, error) {
	switch {
	case markdown == nil:
		return "", nil
	case rendered != nil:
		return template.HTML(*rendered), nil // #nosec G203 -- the sanitiser's output, stored by the write
	}
	return p.md.render(*markdown)
}

// titleText is a thread's title as pages show it; a tombstoned thread has none.
func titleText(t Thread) string {
	if t.Title == nil {
		return "Removed thread"
	}
	return *t.Title
}

// problem answers a 4xx as the site's error page.
func (p *Pages) problem(c *gin.Context, prob *problem.Problem) { p.site.Problem(c, prob) }

// fail answers an error as the site's page for it: 503 with Retry-After while the database is away,
// a plain 500 for a bug (logged by the host).
func (p *Pages) fail(c *gin.Context, err error) { p.site.Error(c, err) }

// write renders a page into the site.
func (p *Pages) write(c *gin.Context, status int, name string, data any) {
	p.site.Write(c, status, p.tmpl[name], data)
}

// localPath is the path of an absolute URL of this service (an image's), so that a page loads it from
// the host it was served from, which its Content-Security-Policy (img-src 'self') allows.
func localPath(u string) string {
	if parsed, err := url.Parse(u); err == nil && parsed.Path != "" {
		return parsed.Path
	}
	return u
}
