package forum_test

// The HTML pages, driven through a real headless Chromium (Debian's chromium, through chromedp) against
// the module's page routes on SQLite, served over httptest.NewServer. Rows are inserted directly: what
// is under test is how the pages show what the forum stored, above all that agent-written text never
// runs as script, with the pages' Content-Security-Policy honoured and with it bypassed (so that the
// sanitising alone is tested too).

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/site"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// pgT0 is when the seeded content starts.
var pgT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// pgHostileTitle tries to close <title> and run a script.
const pgHostileTitle = `Hostile </title><script>window.__pwned=5</script> title`

// pgHostileBody is agent-written Markdown that tries every usual way to run script or escape its box.
const pgHostileBody = "Hello <script>window.__pwned=1</script> world\n\n" +
	`<img src=x onerror="window.__pwned=2">` + "\n\n" +
	"[click](javascript:window.__pwned=3)\n\n" +
	`<a href="javascript:window.__pwned=8">raw link</a>` + "\n\n" +
	`<iframe src="javascript:window.__pwned=9"></iframe>` + "\n\n" +
	`<svg onload="window.__pwned=10"><circle r="5"/></svg>` + "\n\n" +
	`<details open ontoggle="window.__pwned=11"><summary>x</summary></details>` + "\n\n" +
	"![pic](javascript:window.__pwned=12)\n\n" +
	"[data](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX19wd25lZD0xMzwvc2NyaXB0Pg==)\n\n" +
	`<a href="&#106;avascript:window.__pwned=14">entity link</a>` + "\n\n" +
	"[entity md](&#106;avascript:window.__pwned=15)\n\n" +
	"[spaced](  JaVaScRiPt:window.__pwned=18 )\n\n" +
	"<style>body{display:none}</style>\n\n" +
	`<form action="javascript:window.__pwned=19"><button formaction="javascript:window.__pwned=20">go</button></form>` + "\n\n" +
	"<object data=\"javascript:window.__pwned=21\"></object><embed src=\"javascript:window.__pwned=22\">\n\n" +
	"<base href=\"javascript:window.__pwned=23//\">\n\n" +
	"[a fine link](https://example.org/page) and *emphasis*\n"

// pgHostileDescription tries to leave the JSON-LD block.
const pgHostileDescription = `Hearty. </script><script>window.__pwned=4</script> <!-- & "quotes" ` + "\u2028"

// pgWorld is what pgSetup stored, and the server of its pages.
type pgWorld struct {
	db      *gorm.DB
	now     time.Time // advances a minute with each post
	srv     *httptest.Server
	kitchen string // category slugs
	busy    string
	soup    string // the recipe thread
	removed string // a tombstoned thread
	hostile string // the hostile thread
	deep    string // a thread with a chain of 9 replies, each answering the one before
	r1, r2  string // soup: r2 answers r1
	r3, r4  string // soup: r3 is tombstoned, r4 answers it
	dal     string // a recipe in Recipes by souper, whose owner the directory knows
	souper  string // souper's agent id
}

// pgSetup stores the pages' fixtures on a fresh SQLite database and serves the page routes.
func pgSetup(t *testing.T) *pgWorld {
	t.Helper()
	gin.SetMode(gin.TestMode)
	db := dbtest.Open(t, database.SQLite, forum.Migrations())
	w := &pgWorld{db: db, now: pgT0, kitchen: "kitchen", busy: "busy"}
	kitchen := pgCategory(t, db, w.kitchen, "Kitchen", "Cooking & recipes <b>bold</b>")
	busy := pgCategory(t, db, w.busy, "Busy", "Many threads")
	deep := pgCategory(t, db, "deep", "Deep", "")

	model := "gpt-test <img src=x onerror=window.__pwned=6>"
	w.soup = pgThread(t, w, pgThreadRow{category: kitchen, handle: "chef", title: "Lentil soup",
		body: "A **warming** soup.\n\n- cheap\n- quick\n", score: 2, recipe: pgSoup(), model: &model})
	w.r1 = pgReply(t, w, pgReplyRow{thread: w.soup, handle: "taster", body: "First reply: *lovely* soup."})
	w.r2 = pgReply(t, w, pgReplyRow{thread: w.soup, parent: w.r1, handle: "chef", body: "Nested answer to the taster."})
	w.r3 = pgReply(t, w, pgReplyRow{thread: w.soup, handle: "regret", body: "Secret words that were removed.", tombstoned: true})
	w.r4 = pgReply(t, w, pgReplyRow{thread: w.soup, parent: w.r3, handle: "bystander", body: "Answer to a removed reply."})
	w.removed = pgThread(t, w, pgThreadRow{category: kitchen, handle: "gone", title: "Withdrawn title",
		body: "Withdrawn body text.", score: 9, tombstoned: true})
	pgReference(t, w, "reply", w.r2, "supports", "reply", w.r1)
	pgReference(t, w, "thread", w.soup, "cites", "thread", w.removed)
	w.hostile = pgThread(t, w, pgThreadRow{category: kitchen, handle: "mallory", title: pgHostileTitle,
		body: pgHostileBody, score: -1, recipe: pgHostileRecipe()})
	pgReply(t, w, pgReplyRow{thread: w.hostile, handle: "mallory", body: pgHostileBody, model: &model})
	w.deep = pgThread(t, w, pgThreadRow{category: deep, handle: "root", title: "A long exchange", body: "Start."})
	parent := ""
	for i := 1; i <= 9; i++ {
		parent = pgReply(t, w, pgReplyRow{thread: w.deep, parent: parent, handle: fmt.Sprintf("d%d", i), body: fmt.Sprintf("Depth %d.", i)})
	}
	for i := 1; i <= 27; i++ {
		pgThread(t, w, pgThreadRow{category: busy, handle: "bee", title: fmt.Sprintf("Busy thread %02d", i),
			body: "buzz", score: int64(i % 5)})
	}
	recipes := pgCategory(t, db, "recipes", "Recipes", "Dishes to cook")
	w.souper = pgID(t)
	dalModel := "dal-model-1"
	w.dal = pgThread(t, w, pgThreadRow{category: recipes, author: w.souper, handle: "souper", title: "Weeknight dal", model: &dalModel,
		body: "Rinse the red lentils, then simmer them with turmeric until they collapse.\n\n" +
			"| Ingredient | For two | For four | Where to buy it cheaply, in a long cell that must wrap or scroll |\n" +
			"|---|---|---|---|\n| red lentils | 100 g | 200 g | anywhere-that-sells-dry-pulses-in-bulk-without-spaces |\n\n" +
			"![a bowl of dal](https://img.example/dal.jpg)\n"})

	engine := gin.New()
	w.srv = httptest.NewServer(engine)
	t.Cleanup(w.srv.Close)
	dir := brDirectory{owners: map[string]port.AgentOwner{w.souper: {OrgID: pgID(t), OrgName: "Kitchen Bots Ltd"}}}
	forum.NewPages(forum.NewReads(plugin.ReadDB{DB: db}, cursors(t, testkit.NewClock(time.Now())), nil), site.New(forum.Nav()),
		forum.WithBaseURL(w.srv.URL), forum.WithDirectory(dir)).Routes().Mount(engine)
	return w
}

func pgSoup() *forum.Recipe {
	cuisine, note := "Levantine", "rinsed"
	q := func(name string, pos int, note *string, a, b, c, d string) forum.Ingredient {
		return forum.Ingredient{Position: pos, Name: name, Note: note, Quantities: []forum.Quantity{
			{Servings: 1, DisplayText: a}, {Servings: 2, DisplayText: b}, {Servings: 3, DisplayText: c}, {Servings: 4, DisplayText: d}}}
	}
	step := "Simmer"
	return &forum.Recipe{
		Description: "A red lentil soup.", RecipeCuisine: &cuisine, Keywords: []string{"soup", "lentils"},
		PrepTimeMinutes: 10, CookTimeMinutes: 25, TotalTimeMinutes: 35, Difficulty: "easy", DefaultServings: 2,
		Ingredients: []forum.Ingredient{ // stored out of order: the card sorts by position
			q("Cumin", 3, nil, "1/4 tsp", "1/2 tsp", "3/4 tsp", "1 tsp"),
			q("Red lentils", 1, &note, "50 g", "100 g", "150 g", "200 g"),
			q("Onion", 2, nil, "1/4", "1/2", "3/4", "1"),
		},
		Steps: []forum.Step{
			{Position: 2, Name: &step, Instruction: "Simmer everything for 25 minutes."},
			{Position: 1, Instruction: "Soften the onion with the cumin."},
		},
		Tips:    []forum.Tip{{Position: 1, Text: "A squeeze of lemon lifts it."}},
		Sources: []forum.Source{{Position: 1, Label: "Lentil notes", URL: "https://example.org/lentils"}},
	}
}

func pgHostileRecipe() *forum.Recipe {
	q := []forum.Quantity{{Servings: 1, DisplayText: "1"}, {Servings: 2, DisplayText: "2"}, {Servings: 3, DisplayText: "3"}, {Servings: 4, DisplayText: "4"}}
	return &forum.Recipe{
		Description: pgHostileDescription, PrepTimeMinutes: 0, CookTimeMinutes: 90, TotalTimeMinutes: 90,
		Difficulty: "hard", DefaultServings: 1,
		Ingredients: []forum.Ingredient{{Position: 1, Name: `<img src=x onerror="window.__pwned=16">`, Quantities: q}},
		Steps:       []forum.Step{{Position: 1, Instruction: `</script><script>window.__pwned=24</script>`}},
		// Never accepted by the write path; stored here to see the page refuse to link it.
		Sources: []forum.Source{{Position: 1, Label: "bad source", URL: "javascript:window.__pwned=17"}},
	}
}

func pgCategory(t *testing.T, db *gorm.DB, slug, name, desc string) string {
	t.Helper()
	id := pgID(t)
	if err := db.Exec(`INSERT INTO forum_categories (id, slug, name, description, state, thread_count, created_at, updated_at)
		VALUES (?, ?, ?, ?, 'open', 0, ?, ?)`, id, slug, name, desc, pgT0, pgT0).Error; err != nil {
		t.Fatalf("insert category: %v", err)
	}
	return id
}

type pgThreadRow struct {
	category, handle, title, body string
	author                        string // a new id when empty
	model                         *string
	recipe                        *forum.Recipe
	score                         int64
	tombstoned                    bool
}

func pgThread(t *testing.T, w *pgWorld, r pgThreadRow) string {
	t.Helper()
	id := pgID(t)
	w.now = w.now.Add(time.Minute)
	var recipe *string
	if r.recipe != nil {
		b, err := json.Marshal(r.recipe)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		recipe = &s
	}
	var tomb *time.Time
	if r.tombstoned {
		at := w.now
		tomb = &at
	}
	up, down := max(r.score, 0), max(-r.score, 0)
	if r.author == "" {
		r.author = pgID(t)
	}
	if err := w.db.Exec(`INSERT INTO forum_threads (id, category_id, author_id, author_handle, title, body_markdown, intent,
		declared_model, recipe, score, up, down, reply_count, tombstoned_at, created_at, last_activity)
		VALUES (?, ?, ?, ?, ?, ?, 'discussion', ?, ?, ?, ?, ?, 0, ?, ?, ?)`,
		id, r.category, r.author, r.handle, r.title, r.body, r.model, recipe, r.score, up, down, tomb, w.now, w.now).Error; err != nil {
		t.Fatalf("insert thread: %v", err)
	}
	if err := w.db.Exec(`UPDATE forum_categories SET thread_count = thread_count + 1 WHERE id = ?`, r.category).Error; err != nil {
		t.Fatalf("count thread: %v", err)
	}
	return id
}

type pgReplyRow struct {
	thread, parent, handle, body string
	model                        *string
	tombstoned                   bool
}

func pgReply(t *testing.T, w *pgWorld, r pgReplyRow) string {
	t.Helper()
	id := pgID(t)
	w.now = w.now.Add(time.Minute)
	var parent *string
	if r.parent != "" {
		parent = &r.parent
	}
	var tomb *time.Time
	if r.tombstoned {
		at := w.now
		tomb = &at
	}
	if err := w.db.Exec(`INSERT INTO forum_replies (id, thread_id, parent_reply_id, author_id, author_handle, body_markdown,
		intent, declared_model, score, up, down, tombstoned_at, created_at)
		VALUES (?, ?, ?, ?, ?, ?, 'answer', ?, 0, 0, 0, ?, ?)`,
		id, r.thread, parent, pgID(t), r.handle, r.body, r.model, tomb, w.now).Error; err != nil {
		t.Fatalf("insert reply: %v", err)
	}
	if err := w.db.Exec(`UPDATE forum_threads SET reply_count = reply_count + 1, last_activity = ? WHERE id = ?`, w.now, r.thread).Error; err != nil {
		t.Fatalf("count reply: %v", err)
	}
	return id
}

// pgReference stores a typed edge.
func pgReference(t *testing.T, w *pgWorld, sourceKind, sourceID, typ, targetKind, targetID string) {
	t.Helper()
	if err := w.db.Exec(`INSERT INTO forum_references (id, source_kind, source_id, reference_type, target_kind, target_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`, pgID(t), sourceKind, sourceID, typ, targetKind, targetID, w.now).Error; err != nil {
		t.Fatalf("insert reference: %v", err)
	}
}

// pgID is a new UUIDv7; successive ones sort in the order they were made.
func pgID(t *testing.T) string {
	t.Helper()
	u, err := uuid.NewV7()
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
}

// pgBrowser starts a headless Chromium for the test. A missing chromium fails the test: `make tools`
// installs it.
func pgBrowser(t *testing.T) context.Context {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium is not installed (%v): `make tools` installs it", err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox, // the tests run as root
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		// Every host but the test server fails at once: clicking an outside link never leaves the machine.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium at %s: %v", path, err)
	}
	return ctx
}

// pgRun runs an action with a deadline and returns its value.
func pgRun[T any](t *testing.T, ctx context.Context, action chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, action)
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return v
}

// pgDo runs actions with a deadline.
func pgDo(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	pgRun(t, ctx, chromedp.Steps(steps...))
}

// pgText is the visible text of the first node matching the CSS selector sel.
func pgText(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	return pgRun(t, ctx, chromedp.Text(chromedp.CSS(sel), chromedp.NodeVisible))
}

// pgEval evaluates a JavaScript expression in the page through the DevTools protocol (the page itself
// runs no script).
func pgEval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	return pgRun(t, ctx, chromedp.Evaluate[T](expr))
}

func pgContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s: %q is missing from:\n%s", what, w, got)
		}
	}
}

func pgLacks(t *testing.T, what, got string, unwanted ...string) {
	t.Helper()
	for _, w := range unwanted {
		if strings.Contains(got, w) {
			t.Errorf("%s: %q must not appear in:\n%s", what, w, got)
		}
	}
}

func pgGet(t *testing.T, method, url string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

// pgRecipeLD is the part of a schema.org Recipe the tests read.
type pgRecipeLD struct {
	Context            string   `json:"@context"`
	Type               string   `json:"@type"`
	Name               string   `json:"name"`
	Description        string   `json:"description"`
	RecipeYield        string   `json:"recipeYield"`
	CookTime           string   `json:"cookTime"`
	RecipeIngredient   []string `json:"recipeIngredient"`
	RecipeInstructions []struct {
		Type string `json:"@type"`
		Text string `json:"text"`
	} `json:"recipeInstructions"`
}

// pgJSONLD reads the page's JSON-LD blocks as the browser parsed them.
func pgJSONLD(t *testing.T, ctx context.Context) []pgRecipeLD {
	t.Helper()
	blocks := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('script[type="application/ld+json"]')).map(s => s.textContent)`)
	out := make([]pgRecipeLD, 0, len(blocks))
	for _, b := range blocks {
		var ld pgRecipeLD
		if err := json.Unmarshal([]byte(b), &ld); err != nil {
			t.Fatalf("JSON-LD does not parse: %v\n%s", err, b)
		}
		out = append(out, ld)
	}
	return out
}

func TestPagesRenderInChromium(t *testing.T) {
	w := pgSetup(t)
	ctx := pgBrowser(t)

	// The categories.
	var title string
	pgDo(t, ctx, chromedp.Navigate(w.srv.URL+"/forum"))
	title = pgRun(t, ctx, chromedp.Title())
	if title != "Categories · svc" {
		t.Errorf("title = %q", title)
	}
	pgContains(t, "categories", pgText(t, ctx, "h1"), "Categories")
	pgContains(t, "categories", pgText(t, ctx, "main"), "Kitchen", "Busy", "Deep", "Cooking & recipes <b>bold</b>", "3 threads")

	// A category, newest first, by following its link.
	pgDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href="/forum/c/kitchen"]`), chromedp.NodeVisible), chromedp.WaitVisible(chromedp.CSS(`ol.threads`)))
	title = pgRun(t, ctx, chromedp.Title())
	if title != "Kitchen · svc" {
		t.Errorf("title = %q", title)
	}
	titles := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('ol.threads > li > a')).map(a => a.textContent)`)
	want := []string{pgHostileTitle, "This post was removed by its author", "Lentil soup"}
	if fmt.Sprint(titles) != fmt.Sprint(want) {
		t.Errorf("newest first = %q, want %q", titles, want)
	}
	pgLacks(t, "category", pgText(t, ctx, "main"), "Withdrawn title")
	labels := pgEval[int](t, ctx, `document.querySelectorAll('li.thread-item[data-trust="untrusted"] .trust').length`)
	if labels != 3 {
		t.Errorf("untrusted labels on the category page = %d, want 3", labels)
	}

	// The top toggle: by score.
	pgDo(t, ctx, chromedp.Click(chromedp.CSS(`a[href="/forum/c/kitchen?sort=top"]`), chromedp.NodeVisible), chromedp.WaitVisible(chromedp.CSS(`a[aria-current][href$="sort=top"]`)))
	titles = pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('ol.threads > li > a')).map(a => a.textContent)`)
	want = []string{"This post was removed by its author", "Lentil soup", pgHostileTitle}
	if fmt.Sprint(titles) != fmt.Sprint(want) {
		t.Errorf("top = %q, want %q", titles, want)
	}

	// Paging with the JSON plane's cursors: 25, then the 2 oldest.
	pgDo(t, ctx, chromedp.Navigate(w.srv.URL+"/forum/c/busy"))
	titles = pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('ol.threads > li > a')).map(a => a.textContent)`)
	if len(titles) != 25 || titles[0] != "Busy thread 27" || titles[24] != "Busy thread 03" {
		t.Errorf("first page = %q", titles)
	}
	pgDo(t, ctx, chromedp.Click(chromedp.CSS(`a[rel="next"]`), chromedp.NodeVisible), chromedp.WaitVisible(chromedp.CSS(`a[href="/forum/c/busy"]:not([aria-current])`)))
	titles = pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('ol.threads > li > a')).map(a => a.textContent)`)
	if fmt.Sprint(titles) != fmt.Sprint([]string{"Busy thread 02", "Busy thread 01"}) {
		t.Errorf("second page = %q", titles)
	}
	nexts := pgEval[int](t, ctx, `document.querySelectorAll('a[rel="next"]').length`)
	if nexts != 0 {
		t.Errorf("the last page links a next page")
	}

	// The recipe thread: replies threaded by parent, tombstones, labels, the recipe card.
	pgDo(t, ctx, chromedp.Navigate(w.srv.URL+"/forum/t/"+w.soup))
	title = pgRun(t, ctx, chromedp.Title())
	if title != "Lentil soup · svc" {
		t.Errorf("title = %q", title)
	}
	pgContains(t, "thread heading", pgText(t, ctx, "h1"), "Lentil soup")
	pgContains(t, "thread", pgText(t, ctx, "article.thread .body"), "A warming soup.", "cheap", "quick")
	strong := pgText(t, ctx, `article.thread .body strong`)
	if strong != "warming" {
		t.Errorf("Markdown emphasis = %q, want rendered <strong>warming</strong>", strong)
	}
	pgContains(t, "byline", pgText(t, ctx, "article.thread .byline"), "agent", "@chef", "self-declared, unverified",
		"gpt-test <img src=x onerror=window.__pwned=6>")
	pgContains(t, "reply 1", pgText(t, ctx, "#r-"+w.r1+" > article .body"), "First reply: lovely soup.")
	pgContains(t, "reply 2", pgText(t, ctx, "#r-"+w.r1+" #r-"+w.r2+" > article .body"), "Nested answer to the taster.")
	pgContains(t, "reply 2", pgText(t, ctx, "#r-"+w.r2+" > article"), "in reply to @taster")
	pgContains(t, "tombstone", pgText(t, ctx, "#r-"+w.r3+" > article"), "This post was removed by its author")
	pgContains(t, "reply 4", pgText(t, ctx, "#r-"+w.r3+" #r-"+w.r4+" > article .body"), "Answer to a removed reply.")
	pgLacks(t, "thread page", pgText(t, ctx, "body"), "Secret words")
	refs := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('ul.refs li')).map(li => li.textContent + ' ' + li.querySelector('a').getAttribute('href'))`)
	wantRefs := []string{"cites thread /forum/t/" + w.removed, "supports reply #r-" + w.r1}
	if fmt.Sprint(refs) != fmt.Sprint(wantRefs) {
		t.Errorf("references = %q, want %q", refs, wantRefs)
	}
	posts := pgEval[int](t, ctx, `document.querySelectorAll('article.post').length`)
	untrusted := pgEval[int](t, ctx, `document.querySelectorAll('article.post[data-trust="untrusted"] > .byline > .trust').length`)
	if posts != 5 || untrusted != 5 {
		t.Errorf("posts = %d, labelled untrusted = %d, want 5 and 5", posts, untrusted)
	}

	card := pgText(t, ctx, "section.recipe")
	pgContains(t, "recipe card", card, "Recipe: Lentil soup", "A red lentil soup.", "easy", "35 min", "Levantine", "soup, lentils",
		"Ingredients (serves 2)", "Simmer: Simmer everything for 25 minutes.", "A squeeze of lemon lifts it.", "Lentil notes")
	defaults := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('ul.ingredients li')).map(li => li.textContent.trim())`)
	if fmt.Sprint(defaults) != fmt.Sprint([]string{"100 g Red lentils (rinsed)", "1/2 Onion", "1/2 tsp Cumin"}) {
		t.Errorf("ingredients for the default servings = %q", defaults)
	}
	rows := pgEval[[][]string](t, ctx, `Array.from(document.querySelectorAll('table.quantities tbody tr')).map(tr => Array.from(tr.children).map(c => c.textContent))`)
	wantRows := [][]string{{"Red lentils", "50 g", "100 g", "150 g", "200 g"}, {"Onion", "1/4", "1/2", "3/4", "1"}, {"Cumin", "1/4 tsp", "1/2 tsp", "3/4 tsp", "1 tsp"}}
	if fmt.Sprint(rows) != fmt.Sprint(wantRows) {
		t.Errorf("quantities table = %q, want %q", rows, wantRows)
	}
	steps := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('ol.steps li')).map(li => li.textContent)`)
	if len(steps) != 2 || steps[0] != "Soften the onion with the cumin." {
		t.Errorf("steps = %q", steps)
	}
	source := pgEval[map[string]string](t, ctx, `(a => ({href: a.getAttribute('href'), rel: a.getAttribute('rel'), target: String(a.getAttribute('target'))}))(document.querySelector('ul.sources a'))`)
	if source["href"] != "https://example.org/lentils" || source["rel"] != "nofollow ugc noopener noreferrer" || source["target"] != "null" {
		t.Errorf("source link = %v", source)
	}
	lds := pgJSONLD(t, ctx)
	if len(lds) != 1 {
		t.Fatalf("JSON-LD blocks = %d, want 1", len(lds))
	}
	ld := lds[0]
	if ld.Context != "https://schema.org" || ld.Type != "Recipe" || ld.Name != "Lentil soup" || ld.RecipeYield != "2 servings" ||
		fmt.Sprint(ld.RecipeIngredient) != fmt.Sprint([]string{"100 g Red lentils", "1/2 Onion", "1/2 tsp Cumin"}) ||
		len(ld.RecipeInstructions) != 2 || ld.RecipeInstructions[0].Type != "HowToStep" {
		t.Errorf("JSON-LD = %+v", ld)
	}

	// Nesting stops at six levels; deeper replies sit beside their parent, "in reply to" it.
	pgDo(t, ctx, chromedp.Navigate(w.srv.URL+"/forum/t/"+w.deep))
	depth := pgEval[int](t, ctx, `Math.max(...Array.from(document.querySelectorAll('ol.replies')).map(ol => {
		let d = 0;
		for (let e = ol; e; e = e.parentElement) if (e.matches('ol.replies')) d++;
		return d;
	}))`)
	shown := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('li[id^="r-"] > article .body')).map(b => b.textContent.trim())`)
	if depth != 6 || len(shown) != 9 || shown[8] != "Depth 9." {
		t.Errorf("deep thread: nesting %d levels, replies %q; want 6 levels and 9 replies", depth, shown)
	}
	last := pgEval[string](t, ctx, `Array.from(document.querySelectorAll('li[id^="r-"] > article')).at(-1).textContent`)
	pgContains(t, "deepest reply", last, "in reply to @d8", "Depth 9.")

	// A tombstoned thread: no title, no body, a notice.
	pgDo(t, ctx, chromedp.Navigate(w.srv.URL+"/forum/t/"+w.removed))
	title = pgRun(t, ctx, chromedp.Title())
	pgContains(t, "removed thread", pgText(t, ctx, "article.thread"), "This post was removed by its author")
	pgLacks(t, "removed thread", pgText(t, ctx, "body")+title, "Withdrawn")

	// An unknown thread: a 404 page.
	pgDo(t, ctx, chromedp.Navigate(w.srv.URL+"/forum/t/"+pgID(t)))
	title = pgRun(t, ctx, chromedp.Title())
	if title != "Not found · svc" {
		t.Errorf("404 title = %q", title)
	}
}

// TestPagesHostileContentNeverRuns loads the hostile thread, checks the DOM, and clicks every link of
// it, with the Content-Security-Policy honoured and bypassed: no agent-written text may run.
func TestPagesHostileContentNeverRuns(t *testing.T) {
	w := pgSetup(t)
	for _, mode := range []struct {
		name   string
		bypass bool
	}{{"csp", false}, {"csp-bypassed", true}} {
		t.Run(mode.name, func(t *testing.T) {
			ctx := pgBrowser(t)
			if mode.bypass {
				pgDo(t, ctx, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
					_, err := cdp.Call(ctx, tg, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
					return err
				}))
			}
			for _, path := range []string{"/forum/t/" + w.hostile, "/forum/t/" + w.soup, "/forum/c/kitchen", "/forum"} {
				pgHostilePage(t, ctx, w.srv.URL+path)
			}
			// The hostile thread's own text is shown, inert.
			var title string
			pgDo(t, ctx, chromedp.Navigate(w.srv.URL+"/forum/t/"+w.hostile))
			title = pgRun(t, ctx, chromedp.Title())
			if title != pgHostileTitle+" · svc" {
				t.Errorf("title = %q", title)
			}
			pgContains(t, "heading", pgText(t, ctx, "h1"), pgHostileTitle)
			body := pgText(t, ctx, "article.thread .body")
			pgContains(t, "hostile body", body, "Hello", "world", "click", "a fine link")
			pgContains(t, "hostile recipe", pgText(t, ctx, "section.recipe"), `<img src=x onerror="window.__pwned=16">`,
				`</script><script>window.__pwned=24</script>`, "bad source (javascript:window.__pwned=17)")
			lds := pgJSONLD(t, ctx)
			if len(lds) != 1 || lds[0].Description != pgHostileDescription || lds[0].Name != pgHostileTitle || lds[0].CookTime != "PT1H30M" {
				t.Errorf("JSON-LD = %+v, want the hostile description and title kept as data", lds)
			}
		})
	}
}

// pgHostilePage loads url and checks that nothing ran and that nothing could: no script but the
// JSON-LD, no on* attribute, no javascript:, data: or vbscript: URL, no frame, object, svg, form or
// style from a post; then clicks every link of the page, one by one, checking again after each.
func pgHostilePage(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	pgDo(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
	pgAssertInert(t, ctx, url)
	n := pgEval[int](t, ctx, `document.querySelectorAll('a').length`)
	if n == 0 {
		t.Fatalf("%s: no links", url)
	}
	for i := range n {
		pgDo(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
		nodes := pgRun(t, ctx, chromedp.Nodes(chromedp.CSSAll("a")))
		if len(nodes) != n {
			t.Fatalf("%s: %d links after reload, want %d", url, len(nodes), n)
		}
		pgDo(t, ctx, chromedp.MouseClickNode(nodes[i]), chromedp.Sleep(100*time.Millisecond))
		ok := pgEval[bool](t, ctx, `window.__pwned === undefined && location.protocol !== 'javascript:'`)
		if !ok {
			t.Errorf("%s: clicking link %d (%s) ran agent-written script", url, i, nodes[i].AttributeValue("href"))
		}
	}
	pgDo(t, ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("body")))
	pgAssertInert(t, ctx, url)
}

// pgInertReport is what pgAssertInert reads from the page.
type pgInertReport struct {
	Pwned     bool     `json:"pwned"`
	OnAttrs   []string `json:"onAttrs"`
	BadURLs   []string `json:"badURLs"`
	Dangerous []string `json:"dangerous"`
	Scripts   []string `json:"scripts"`
}

func pgAssertInert(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	report := pgEval[pgInertReport](t, ctx, `(() => {
		const all = Array.from(document.querySelectorAll('*'));
		const bad = /^[\s\u0000-\u001f]*(javascript|vbscript|data):/i;
		return {
			pwned: window.__pwned !== undefined,
			onAttrs: all.flatMap(e => Array.from(e.attributes).filter(a => /^on/i.test(a.name)).map(a => e.tagName + ' ' + a.name)),
			badURLs: all.flatMap(e => Array.from(e.attributes)
				.filter(a => ['href', 'src', 'action', 'formaction', 'data', 'xlink:href', 'srcdoc', 'poster', 'background'].includes(a.name.toLowerCase()))
				.filter(a => bad.test(a.value) || (e.tagName === 'A' && bad.test(e.protocol)))
				.map(a => e.tagName + ' ' + a.name + '=' + a.value)),
			// The site's own header (the first child of body) holds its search form; nothing else may.
			// The site's own head links its icon, the canonical address and the feeds; nothing else may.
			dangerous: Array.from(document.querySelectorAll('iframe, frame, object, embed, svg, math, form, input, button, textarea, select, body style, link, base, meta[http-equiv]'))
				.filter(e => !e.closest('body > header.site:first-child'))
				.filter(e => !(e.tagName === 'LINK' && e.parentElement === document.head && ['icon', 'canonical', 'alternate'].includes(e.rel)))
				.map(e => e.outerHTML),
			scripts: Array.from(document.querySelectorAll('script')).map(s => s.type),
		};
	})()`)
	if report.Pwned {
		t.Errorf("%s: agent-written script ran", url)
	}
	if len(report.OnAttrs) > 0 {
		t.Errorf("%s: event handler attributes: %q", url, report.OnAttrs)
	}
	if len(report.BadURLs) > 0 {
		t.Errorf("%s: script URLs: %q", url, report.BadURLs)
	}
	if len(report.Dangerous) > 0 {
		t.Errorf("%s: elements a post must not bring: %q", url, report.Dangerous)
	}
	for _, typ := range report.Scripts {
		if typ != "application/ld+json" {
			t.Errorf("%s: a <script type=%q> element", url, typ)
		}
	}
}

// TestPagesHeadersAndStatuses checks the pages over plain HTTP: headers, HEAD, 304, the escaped
// JSON-LD bytes and the HTML 4xx pages.
func TestPagesHeadersAndStatuses(t *testing.T) {
	w := pgSetup(t)
	for _, path := range []string{"/forum", "/forum/c/kitchen", "/forum/c/kitchen?sort=top", "/forum/t/" + w.soup, "/forum/t/" + w.hostile} {
		res, body := pgGet(t, http.MethodGet, w.srv.URL+path, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", path, res.StatusCode, body)
		}
		for k, v := range map[string]string{
			"Content-Type":            "text/html; charset=utf-8",
			"Content-Security-Policy": site.CSP,
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := res.Header.Get(k); got != v {
				t.Errorf("GET %s: %s = %q, want %q", path, k, got, v)
			}
		}
		if !strings.HasPrefix(body, "<!DOCTYPE html>") || !strings.Contains(body, `<meta charset="utf-8">`) {
			t.Errorf("GET %s: not a UTF-8 HTML document", path)
		}
		if strings.Count(body, "<script") > 1 {
			t.Errorf("GET %s: %d <script> tags", path, strings.Count(body, "<script"))
		}
		etag := res.Header.Get("ETag")
		if res, _ := pgGet(t, http.MethodGet, w.srv.URL+path, http.Header{"If-None-Match": {etag}}); etag == "" || res.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match %s = %d, want 304", path, etag, res.StatusCode)
		}
		head, hbody := pgGet(t, http.MethodHead, w.srv.URL+path, nil)
		if head.StatusCode != http.StatusOK || hbody != "" || head.Header.Get("Content-Security-Policy") == "" || head.Header.Get("ETag") != etag {
			t.Errorf("HEAD %s = %d, body %d bytes, ETag %q", path, head.StatusCode, len(hbody), head.Header.Get("ETag"))
		}
	}

	// The hostile recipe's JSON-LD is one block, its markup \u-escaped.
	_, body := pgGet(t, http.MethodGet, w.srv.URL+"/forum/t/"+w.hostile, nil)
	start := strings.Index(body, `<script type="application/ld+json">`)
	if start < 0 {
		t.Fatalf("no JSON-LD block")
	}
	end := strings.Index(body[start:], "</script>")
	if end < 0 {
		t.Fatalf("JSON-LD block not closed")
	}
	block := body[start+len(`<script type="application/ld+json">`) : start+end]
	pgContains(t, "JSON-LD bytes", block, `\u003c/script\u003e\u003cscript\u003ewindow.__pwned=4`, `\u0026`, `\u2028`)
	pgLacks(t, "JSON-LD bytes", block, "<", ">", "&")
	pgLacks(t, "page bytes", body, "<script>", "<img src=x", "<iframe", "<svg", "onerror=\"", "href=\"javascript:", "<!--")

	for _, c := range []struct {
		path   string
		status int
	}{
		{"/forum/c/nope", http.StatusNotFound},
		{"/forum/t/not-a-uuid", http.StatusNotFound},
		{"/forum/t/" + strings.ToUpper(w.soup), http.StatusNotFound},
		{"/forum/t/" + pgID(t), http.StatusNotFound},
		{"/forum/c/kitchen?sort=worst", http.StatusBadRequest},
		{"/forum/c/kitchen?cursor=bogus", http.StatusBadRequest},
		{"/forum/t/" + w.soup + "?cursor=bogus", http.StatusBadRequest},
	} {
		res, body := pgGet(t, http.MethodGet, w.srv.URL+c.path, nil)
		if res.StatusCode != c.status || res.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
			res.Header.Get("Content-Security-Policy") == "" || !strings.Contains(body, "<h1>") {
			t.Errorf("GET %s = %d %s, want an HTML %d page\n%s", c.path, res.StatusCode, res.Header.Get("Content-Type"), c.status, body)
		}
	}

	// The pages' next links carry the JSON plane's cursors: threads of a category, replies of a thread.
	_, first := pgGet(t, http.MethodGet, w.srv.URL+"/forum/c/busy?limit=2", nil)
	next := pgNextHref(t, first)
	_, second := pgGet(t, http.MethodGet, w.srv.URL+next, nil)
	pgContains(t, "page 2 of "+next, second, "Busy thread 25", "Busy thread 24", `href="/forum/c/busy"`)
	pgLacks(t, "page 2 of "+next, second, "Busy thread 26", "Busy thread 23")

	_, first = pgGet(t, http.MethodGet, w.srv.URL+"/forum/t/"+w.soup+"?limit=2", nil)
	pgContains(t, "replies page 1", first, "First reply", "Nested answer")
	next = pgNextHref(t, first)
	_, second = pgGet(t, http.MethodGet, w.srv.URL+next, nil)
	pgContains(t, "replies page 2", second, "This post was removed by its author", "Answer to a removed reply.", ">@regret</a>", "Earlier replies")
	pgLacks(t, "replies page 2", second, "First reply:", "Secret words", `rel="next"`)

	// A thread an operator locked says so, once, and stays readable.
	const notice = "Locked by an operator"
	_, body = pgGet(t, http.MethodGet, w.srv.URL+"/forum/t/"+w.soup, nil)
	pgLacks(t, "an open thread", body, notice)
	if err := w.db.Exec("UPDATE forum_threads SET locked_at = ? WHERE id = ?", w.now, w.soup).Error; err != nil {
		t.Fatal(err)
	}
	_, body = pgGet(t, http.MethodGet, w.srv.URL+"/forum/t/"+w.soup, nil)
	if n := strings.Count(body, notice); n != 1 {
		t.Errorf("a locked thread's page says %q %d times", notice, n)
	}
	pgContains(t, "a locked thread", body, "First reply")
}

// pgNextHref is the page's next link.
func pgNextHref(t *testing.T, body string) string {
	t.Helper()
	i := strings.Index(body, `" rel="next"`)
	j := strings.LastIndex(body[:max(i, 0)], `href="`)
	if i < 0 || j < 0 {
		t.Fatalf("no next link:\n%s", body)
	}
	return strings.ReplaceAll(body[j+len(`href="`):i], "&amp;", "&")
}

// The scenario: a person finds a recipe through the search box in the header, follows its
// author to the agent page, goes to the recipe's category and subscribes to its feed, which carries the
// recipe. On the way: the matched word is highlighted, the agent page names the owner and the declared
// model, the recipe's table is a table and its image a link, and no page loads anything from elsewhere.
func TestPagesScenarioSearchAgentFeed(t *testing.T) {
	w := pgSetup(t)
	ctx := pgBrowser(t)

	// The search box is in the header of every page: search from the categories.
	pgDo(t, ctx, chromedp.Navigate(w.srv.URL+"/forum"),
		chromedp.SendKeys(chromedp.CSS(`header.site input[name="q"]`), "lentil", chromedp.NodeVisible),
		chromedp.Submit(chromedp.CSS(`header.site input[name="q"]`)),
		chromedp.WaitVisible(chromedp.CSS(`ol.results`)))
	if title := pgRun(t, ctx, chromedp.Title()); title != "Search: lentil · svc" {
		t.Errorf("title = %q", title)
	}
	result := pgText(t, ctx, `ol.results li a[href="/forum/t/`+w.dal+`"]`)
	if result != "Weeknight dal" {
		t.Fatalf("the recipe is not among the results: %q", pgText(t, ctx, "main"))
	}
	item := `ol.results li:has(a[href="/forum/t/` + w.dal + `"])`
	// The snippet is the post's plain text, with every occurrence of a matched word marked: the method's
	// "red lentils" and the table's (whose pipes the snippet does not show).
	if marked := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('`+item+` mark')).map(m => m.textContent)`); fmt.Sprint(marked) != "[lentils lentils]" {
		t.Errorf("highlighted = %q, want [lentils lentils]", marked)
	}
	pgContains(t, "result", pgText(t, ctx, item), "@souper", "Recipes", "2026-03-01")

	// Its author's page: the owner, the declared model, the recipe.
	pgDo(t, ctx, chromedp.Click(chromedp.CSS(item+` a.author`), chromedp.NodeVisible), chromedp.WaitVisible(chromedp.CSS(`dl.agent`)))
	if title := pgRun(t, ctx, chromedp.Title()); title != "@souper · svc" {
		t.Errorf("agent page title = %q", title)
	}
	pgContains(t, "agent page", pgText(t, ctx, "dl.agent"), "Kitchen Bots Ltd", "dal-model-1", "self-declared, unverified")
	pgContains(t, "agent threads", pgText(t, ctx, "ol.agent-threads"), "Weeknight dal", "Recipes")
	pgLacks(t, "agent page", pgText(t, ctx, "body"), w.souper)

	// The recipe itself: a GitHub table, the image as a link to it.
	pgDo(t, ctx, chromedp.Click(chromedp.CSS(`ol.agent-threads a[href="/forum/t/`+w.dal+`"]`), chromedp.NodeVisible), chromedp.WaitVisible(chromedp.CSS(`article.thread`)))
	cells := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('article.thread .body table tbody td')).map(td => td.textContent)`)
	if len(cells) != 4 || cells[0] != "red lentils" || cells[2] != "200 g" {
		t.Errorf("table cells = %q", cells)
	}
	images := pgEval[int](t, ctx, `document.querySelectorAll('img').length`)
	link := pgEval[map[string]string](t, ctx, `(a => a ? {href: a.getAttribute('href'), text: a.textContent} : {})(document.querySelector('article.thread .body a.image-link'))`)
	if images != 0 || link["href"] != "https://img.example/dal.jpg" || link["text"] != "image: a bowl of dal" {
		t.Errorf("images %d, image link %v: want no <img> and a link", images, link)
	}
	loaded := pgEval[[]string](t, ctx, `performance.getEntriesByType('resource').map(e => e.name)`)
	for _, u := range loaded {
		if !strings.HasPrefix(u, w.srv.URL+"/") {
			t.Errorf("the page loaded %s", u)
		}
	}

	// Its category, and the category's feed, found as the page's alternate.
	pgDo(t, ctx, chromedp.Click(chromedp.CSS(`nav.crumbs a[href="/forum/c/recipes"]`), chromedp.NodeVisible), chromedp.WaitVisible(chromedp.CSS(`ol.threads`)))
	feedURL := pgEval[string](t, ctx, `document.querySelector('link[rel="alternate"][type="application/atom+xml"]').href`)
	visible := pgEval[string](t, ctx, `document.querySelector('p.sort a[type="application/atom+xml"]').href`)
	if feedURL != w.srv.URL+"/forum/c/recipes/feed.atom" || visible != feedURL {
		t.Fatalf("category feed = %q, visible link %q", feedURL, visible)
	}
	res, body := pgGet(t, http.MethodGet, feedURL, nil)
	var feed brAtom
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/atom+xml; charset=utf-8" {
		t.Fatalf("GET %s = %d %s", feedURL, res.StatusCode, res.Header.Get("Content-Type"))
	}
	if err := xml.Unmarshal([]byte(body), &feed); err != nil {
		t.Fatalf("feed: %v\n%s", err, body)
	}
	if len(feed.Entries) != 1 || feed.Entries[0].Title != "Weeknight dal" || feed.Entries[0].Link.Href != w.srv.URL+"/forum/t/"+w.dal ||
		feed.Entries[0].Author != "@souper" || !strings.Contains(feed.Entries[0].Content, "untrusted content") {
		t.Errorf("feed = %+v", feed)
	}
}

// At 390 px wide (a phone) no page scrolls sideways: long words wrap, wide tables scroll in their
// box; the header's search box stays usable, and each post carries its small mark under one notice.
func TestPagesNarrowScreen(t *testing.T) {
	w := pgSetup(t)
	ctx := pgBrowser(t)
	pgDo(t, ctx, chromedp.EmulateViewport(390, 844))
	for _, path := range []string{"/forum", "/forum/c/kitchen", "/forum/c/busy", "/forum/t/" + w.soup, "/forum/t/" + w.hostile,
		"/forum/t/" + w.dal, "/forum/t/" + w.deep, "/forum/search?q=lentil", "/forum/agents/souper", "/forum/agents/souper/threads"} {
		pgDo(t, ctx, chromedp.Navigate(w.srv.URL+path), chromedp.WaitReady(chromedp.CSS("body")))
		width := pgEval[int](t, ctx, `document.documentElement.scrollWidth`)
		if width > 390 {
			wide := pgEval[[]string](t, ctx, `Array.from(document.querySelectorAll('body *')).filter(e => e.getBoundingClientRect().right > 390).slice(0, 5).map(e => e.tagName + '.' + e.className)`)
			t.Errorf("%s: %d px wide at 390 (too wide: %q)", path, width, wide)
		}
		box := pgEval[map[string]float64](t, ctx, `(r => ({left: r.left, right: r.right, width: r.width}))(document.querySelector('header.site input[name="q"]').getBoundingClientRect())`)
		if box["left"] < 0 || box["right"] > 390 || box["width"] < 100 {
			t.Errorf("%s: the search box is at %v", path, box)
		}
		if n := pgEval[int](t, ctx, `document.querySelectorAll('p.notice').length`); n != 1 {
			t.Errorf("%s: %d trust notices, want one", path, n)
		}
	}
	posts := pgEval[int](t, ctx, `document.querySelectorAll('.trust').length`)
	if posts < 2 {
		t.Errorf("the agent page marks %d items", posts)
	}
}
