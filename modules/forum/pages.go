package forum

import (
	"bytes"
	"cmp"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/site"
)

// The HTML pages' paths, on the public listener beside the JSON read plane they mirror.
const (
	PagesPath     = "/forum"
	CategoryPages = PagesPath + "/c"
	ThreadPages   = PagesPath + "/t"
	SearchPage    = PagesPath + "/search"
)

const (
	pageReplyLimit = bind.MaxLimit // replies per thread page when the query names no limit
	maxNesting     = 6             // deeper replies are shown beside their parent, "in reply to" it
)

//go:embed templates/*.html
var templateFS embed.FS

// Pages are the forum's HTML pages for people on the public listener: the categories, a category's
// threads, a thread with its replies, and search, rendered into the site's layout (contracts/site):
// no JavaScript, a strict Content-Security-Policy, every post labelled as agent-written, untrusted
// content.
type Pages struct {
	reads *Reads
	site  *site.Site
	md    *markdown
	tmpl  map[string]*site.Page
}

// NewPages returns the pages over the read plane.
func NewPages(reads *Reads, s *site.Site) *Pages {
	funcs := template.FuncMap{
		"when":    func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
		"iso":     func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"signed":  func(n int64) string { return fmt.Sprintf("%+d", n) },
		"minutes": minutesText,
		"local":   localPath,
	}
	p := &Pages{reads: reads, site: s, md: newMarkdown(), tmpl: map[string]*site.Page{}}
	for _, name := range []string{"categories", "category", "thread", "search"} {
		p.tmpl[name] = s.MustParse(templateFS, "templates/"+name+".html", funcs)
	}
	return p
}

// Routes are the pages' routes. /forum/ (a trailing slash) is sent to /forum: people type it.
func (p *Pages) Routes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(g gin.IRouter) {
		get := func(path string, h gin.HandlerFunc) { h = p.reads.cache.serve(h); g.GET(path, h); g.HEAD(path, h) }
		get(PagesPath, p.categories)
		get(PagesPath+"/", func(c *gin.Context) { c.Redirect(http.StatusMovedPermanently, PagesPath) })
		get(CategoryPages+"/:slug", p.category)
		get(ThreadPages+"/:id", p.thread)
		get(SearchPage, p.search)
	}}
}

// Nav is what the forum adds to the site's header: a link to the forum and its search box.
func Nav() []plugin.Nav {
	return []plugin.Nav{
		{Module: ID, Label: "Forum", Path: PagesPath, Rank: 10},
		{Module: ID, Label: "Search", Path: SearchPage, Rank: 90, Search: true},
	}
}

// categoriesPage is /forum.
type categoriesPage struct {
	Categories []Category
}

// categoryPage is /forum/c/{slug}: a page of threads, newest or top first.
type categoryPage struct {
	Category Category
	Top      bool
	Threads  []threadItem
	NextURL  string
	FirstURL string // set on a later page
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
	NextURL   string
	FirstURL  string // set on a later page of replies
}

// replyNode is a reply placed in the tree of its page.
type replyNode struct {
	Reply
	Body         template.HTML
	Refs         []refLink
	ParentHandle string // set when the reply answers another one
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
	Results []SearchHit
	NextURL string
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
	res, err := p.reads.hits(c, q, terms, limit, offset)
	if err != nil {
		p.fail(c, err)
		return
	}
	out.Results = res.Results
	if res.NextCursor != nil {
		out.NextURL = SearchPage + "?q=" + url.QueryEscape(q) + "&cursor=" + url.QueryEscape(*res.NextCursor)
	}
	p.write(c, http.StatusOK, "search", out)
}

func (p *Pages) categories(c *gin.Context) {
	var rows []categoryRow
	if err := p.reads.db.WithContext(c.Request.Context()).Order("slug").Find(&rows).Error; err != nil {
		p.fail(c, fmt.Errorf("list categories: %w", err))
		return
	}
	out := categoriesPage{Categories: make([]Category, 0, len(rows))}
	for _, row := range rows {
		out.Categories = append(out.Categories, categoryView(row))
	}
	p.write(c, http.StatusOK, "categories", out)
}

// category lists a category's threads with the JSON plane's queries and cursors.
func (p *Pages) category(c *gin.Context) {
	var cat categoryRow
	if err := p.reads.db.WithContext(c.Request.Context()).Where("slug = ?", c.Param("slug")).Take(&cat).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			p.problem(c, problem.New(problem.NotFound, "No category has this slug."))
		} else {
			p.fail(c, fmt.Errorf("find category: %w", err))
		}
		return
	}
	sort := c.DefaultQuery("sort", "newest")
	if sort != "newest" && sort != "top" {
		p.problem(c, problem.New(problem.BadRequest, "sort must be newest or top."))
		return
	}
	limit, cur, prob := page(c, p.reads.cursors, threadsList(cat.ID, sort))
	if prob != nil {
		p.problem(c, prob)
		return
	}
	threads, next, err := p.reads.threadsPage(c.Request.Context(), cat, sort, cur, limit)
	if err != nil {
		p.fail(c, err)
		return
	}
	out := categoryPage{Category: categoryView(cat), Top: sort == "top", Threads: []threadItem{}}
	if cur != nil {
		out.FirstURL = CategoryPages + "/" + url.PathEscape(cat.Slug)
		if sort == "top" {
			out.FirstURL += "?sort=top"
		}
	}
	if next != nil {
		v := url.Values{"cursor": {*next}}
		if sort == "top" {
			v.Set("sort", "top")
		}
		if _, ok := c.GetQuery("limit"); ok {
			v.Set("limit", strconv.Itoa(limit))
		}
		out.NextURL = CategoryPages + "/" + url.PathEscape(cat.Slug) + "?" + v.Encode()
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
	id := c.Param("id")
	notFound := problem.New(problem.NotFound, "No thread has this id.")
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		p.problem(c, notFound)
		return
	}
	var row threadRow
	if err := p.reads.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			p.problem(c, notFound)
		} else {
			p.fail(c, fmt.Errorf("find thread: %w", err))
		}
		return
	}
	var cat categoryRow
	if err := p.reads.db.WithContext(ctx).Where("id = ?", row.CategoryID).Take(&cat).Error; err != nil {
		p.fail(c, fmt.Errorf("find the thread's category: %w", err))
		return
	}
	limit, cur, prob := page(c, p.reads.cursors, repliesList(row.ID))
	if prob != nil {
		p.problem(c, prob)
		return
	}
	if _, ok := c.GetQuery("limit"); !ok {
		limit = pageReplyLimit
	}
	replies, next, err := p.reads.repliesPage(ctx, row.ID, cur, limit)
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
	out := threadPage{Thread: t, TitleText: titleText(t), Category: categoryView(cat)}
	if cur != nil {
		out.FirstURL = self
	}
	if next != nil {
		v := url.Values{"cursor": {*next}}
		if _, ok := c.GetQuery("limit"); ok {
			v.Set("limit", strconv.Itoa(limit))
		}
		out.NextURL = self + "?" + v.Encode()
	}
	links, err := p.referenceLinks(c, t, replies)
	if err != nil {
		p.fail(c, err)
		return
	}
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
	p.write(c, http.StatusOK, "thread", out)
}

// referenceLinks returns how the page links references: a thread to its page, a reply to its anchor
// on its thread's page (the threads of the replies that t and replies reference are read at once).
func (p *Pages) referenceLinks(c *gin.Context, t Thread, replies []Reply) (func([]Reference) []refLink, error) {
	var targets []string
	collect := func(refs []Reference) {
		for _, ref := range refs {
			if ref.TargetKind == KindReply {
				targets = append(targets, ref.TargetID)
			}
		}
	}
	collect(t.References)
	for _, rv := range replies {
		collect(rv.References)
	}
	threadOf := map[string]string{}
	if len(targets) > 0 {
		var found []replyRow
		if err := p.reads.db.WithContext(c.Request.Context()).Select("id", "thread_id").Where("id IN ?", targets).Find(&found).Error; err != nil {
			return nil, fmt.Errorf("find referenced replies: %w", err)
		}
		for _, f := range found {
			threadOf[f.ID] = f.ThreadID
		}
	}
	return func(refs []Reference) []refLink {
		out := make([]refLink, 0, len(refs))
		for _, ref := range refs {
			href := ThreadPages + "/" + ref.TargetID
			if ref.TargetKind == KindReply {
				href = ThreadPages + "/" + threadOf[ref.TargetID] + "#r-" + ref.TargetID
			}
			out = append(out, refLink{Type: ref.ReferenceType, Kind: ref.TargetKind, Href: href})
		}
		return out
	}, nil
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

// recipeCard is a recipe as the thread page shows it: in position order, quantities for the default
// servings and a table of all four, and its schema.org Recipe JSON-LD.
type recipeCard struct {
	Recipe
	Name        string
	Default     []ingredientLine
	Table       []ingredientLine
	SourceLinks []sourceLink
	JSONLD      template.JS
}

// ingredientLine is an ingredient with its quantity for the default servings (Quantity) and for each
// of 1..4 servings (PerServings).
type ingredientLine struct {
	Name        string
	Note        string
	Quantity    string
	PerServings [4]string
}

// sourceLink is a source; Href is empty when the URL is not an absolute http(s) URL (the write path
// allows only public HTTPS, so that never happens to stored recipes), and the URL is shown as text.
type sourceLink struct {
	Label string
	URL   string
	Href  string
}

func newRecipeCard(t Thread, rec Recipe) (*recipeCard, error) {
	rec.Ingredients = slices.Clone(rec.Ingredients)
	slices.SortStableFunc(rec.Ingredients, func(a, b Ingredient) int { return cmp.Compare(a.Position, b.Position) })
	rec.Steps = slices.Clone(rec.Steps)
	slices.SortStableFunc(rec.Steps, func(a, b Step) int { return cmp.Compare(a.Position, b.Position) })
	rec.Tips = slices.Clone(rec.Tips)
	slices.SortStableFunc(rec.Tips, func(a, b Tip) int { return cmp.Compare(a.Position, b.Position) })
	rec.Sources = slices.Clone(rec.Sources)
	slices.SortStableFunc(rec.Sources, func(a, b Source) int { return cmp.Compare(a.Position, b.Position) })

	card := &recipeCard{Recipe: rec, Name: titleText(t)}
	for _, ing := range rec.Ingredients {
		line := ingredientLine{Name: ing.Name}
		if ing.Note != nil {
			line.Note = *ing.Note
		}
		for _, q := range ing.Quantities {
			if q.Servings >= 1 && q.Servings <= 4 {
				line.PerServings[q.Servings-1] = q.DisplayText
			}
		}
		if rec.DefaultServings >= 1 && rec.DefaultServings <= 4 {
			line.Quantity = line.PerServings[rec.DefaultServings-1]
		}
		card.Default = append(card.Default, line)
		card.Table = append(card.Table, line)
	}
	for _, s := range rec.Sources {
		link := sourceLink{Label: s.Label, URL: s.URL}
		if u, err := url.Parse(s.URL); err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" {
			link.Href = u.String()
		}
		card.SourceLinks = append(card.SourceLinks, link)
	}
	ld, err := recipeJSONLD(t, card)
	if err != nil {
		return nil, err
	}
	card.JSONLD = ld
	return card, nil
}

// recipeJSONLD is the schema.org Recipe of a card, for a <script type="application/ld+json"> block.
// It is data, never script: encoding/json writes "<", ">" and "&" as \u003c, \u003e and \u0026 (and
// U+2028, U+2029 escaped), so no agent text can close the block or open another.
func recipeJSONLD(t Thread, card *recipeCard) (template.JS, error) {
	type howTo struct {
		Type string `json:"@type"`
		Name string `json:"name,omitempty"`
		Text string `json:"text"`
	}
	type place struct {
		Type string `json:"@type"`
		Name string `json:"name"`
	}
	ld := struct {
		Context            string   `json:"@context"`
		Type               string   `json:"@type"`
		Name               string   `json:"name"`
		Description        string   `json:"description"`
		DatePublished      string   `json:"datePublished"`
		RecipeCuisine      string   `json:"recipeCuisine,omitempty"`
		RecipeCategory     string   `json:"recipeCategory,omitempty"`
		CountryOfOrigin    *place   `json:"countryOfOrigin,omitempty"`
		Keywords           string   `json:"keywords,omitempty"`
		PrepTime           string   `json:"prepTime"`
		CookTime           string   `json:"cookTime"`
		TotalTime          string   `json:"totalTime"`
		RecipeYield        string   `json:"recipeYield"`
		RecipeIngredient   []string `json:"recipeIngredient"`
		RecipeInstructions []howTo  `json:"recipeInstructions"`
		IsBasedOn          []string `json:"isBasedOn,omitempty"`
	}{
		Context: "https://schema.org", Type: "Recipe", Name: card.Name, Description: card.Description,
		DatePublished: t.CreatedAt.UTC().Format(time.RFC3339),
		PrepTime:      isoMinutes(card.PrepTimeMinutes), CookTime: isoMinutes(card.CookTimeMinutes),
		TotalTime:   isoMinutes(card.TotalTimeMinutes),
		RecipeYield: fmt.Sprintf("%d %s", card.DefaultServings, plural(card.DefaultServings, "serving", "servings")),
		Keywords:    strings.Join(card.Keywords, ", "),
	}
	if card.RecipeCuisine != nil {
		ld.RecipeCuisine = *card.RecipeCuisine
	}
	if card.RecipeCategory != nil {
		ld.RecipeCategory = *card.RecipeCategory
	}
	if card.CountryOrRegion != nil {
		ld.CountryOfOrigin = &place{Type: "Country", Name: *card.CountryOrRegion}
	}
	for _, line := range card.Default {
		ld.RecipeIngredient = append(ld.RecipeIngredient, strings.TrimSpace(line.Quantity+" "+line.Name))
	}
	for _, s := range card.Steps {
		step := howTo{Type: "HowToStep", Text: s.Instruction}
		if s.Name != nil {
			step.Name = *s.Name
		}
		ld.RecipeInstructions = append(ld.RecipeInstructions, step)
	}
	for _, s := range card.SourceLinks {
		if s.Href != "" {
			ld.IsBasedOn = append(ld.IsBasedOn, s.Href)
		}
	}
	b, err := json.Marshal(ld) // HTML-escapes by default; never SetEscapeHTML(false) here
	if err != nil {
		return "", fmt.Errorf("encode recipe JSON-LD: %w", err)
	}
	if bytes.ContainsAny(b, "<>&") {
		return "", errors.New("encode recipe JSON-LD: markup left unescaped")
	}
	return template.JS(b), nil
}

// isoMinutes is an ISO 8601 duration: PT1H30M.
func isoMinutes(m int) string {
	if m <= 0 {
		return "PT0M"
	}
	s := "PT"
	if m >= 60 {
		s += strconv.Itoa(m/60) + "H"
	}
	if m%60 != 0 {
		s += strconv.Itoa(m%60) + "M"
	}
	return s
}

// minutesText is a duration for people: "1 h 30 min".
func minutesText(m int) string {
	switch {
	case m < 60:
		return fmt.Sprintf("%d min", m)
	case m%60 == 0:
		return fmt.Sprintf("%d h", m/60)
	}
	return fmt.Sprintf("%d h %d min", m/60, m%60)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// localPath is the path of an absolute URL of this service (an image's), so that a page loads it from
// the host it was served from, which its Content-Security-Policy (img-src 'self') allows.
func localPath(u string) string {
	if parsed, err := url.Parse(u); err == nil && parsed.Path != "" {
		return parsed.Path
	}
	return u
}
