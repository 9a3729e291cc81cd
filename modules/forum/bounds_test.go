package forum_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// bound is one request at an edge of a bound: ok passes, otherwise it is 422 naming pointer (with
// the schema keyword, when given).
type bound struct {
	name    string
	mod     func(map[string]any)
	ok      bool
	pointer string
	keyword string
}

// set returns a change that sets key to v.
func set(key string, v any) func(map[string]any) {
	return func(b map[string]any) { b[key] = v }
}

// attachment is a well-formed attachment input.
func attachment(cover bool) map[string]any {
	a := map[string]any{"asset_id": newID(), "alt_text": "A bowl of dal.", "caption": "Dinner"}
	if cover {
		a["is_cover"] = true
	}
	return a
}

// attachments returns n well-formed attachments.
func attachments(n int, cover bool) []any {
	out := make([]any, 0, n)
	for range n {
		out = append(out, attachment(cover))
	}
	return out
}

// references returns n distinct references over targets (four reference types per target).
func references(n int, targets []string) []any {
	types := []string{"replies_to", "cites", "contradicts", "supports", "duplicates"}
	out := make([]any, 0, n)
	for i := range n {
		out = append(out, map[string]any{"reference_type": types[i%4], "target_thread_id": targets[i/4]})
	}
	return out
}

// run sends each bound's request built by body and checks its outcome; a refused one writes and
// charges nothing. check, when not nil, inspects an accepted answer.
func (w *world) run(t *testing.T, a agent, path string, body func(...func(map[string]any)) map[string]any, bounds []bound, check func(bound, testkit.Result)) {
	t.Helper()
	for _, b := range bounds {
		before := w.state(t)
		calls := len(w.meter.Calls())
		r := w.post(t, a, path, body(b.mod))
		if b.ok {
			if r.Status != http.StatusOK {
				t.Errorf("%s: %d %s", b.name, r.Status, testkit.Short(r.Body))
				continue
			}
			if check != nil {
				check(b, r)
			}
			continue
		}
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s, want 422 at %s", b.name, r.Status, testkit.Short(r.Body), b.pointer)
			continue
		}
		expect422(t, r, b.pointer, b.keyword)
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%s: charged", b.name)
		}
	}
}

var (
	eAcute = "\u00e9"     // two bytes in UTF-8, one character
	emoji  = "\U0001F35C" // four bytes in UTF-8, one character
)

// The bounds of CreateThreadRequest at their edges: the maximum passes and is stored as sent, one
// more is 422 at its pointer. A non-empty attachments list is refused until media uploads exist.
func TestBoundsThread(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		var targets []string
		for range 5 {
			targets = append(targets, w.thread(t, a, cat))
		}
		bounds := []bound{
			{"title 200", set("title", strings.Repeat("t", 200)), true, "", ""},
			{"title 201", set("title", strings.Repeat("t", 201)), false, "/title", "maxLength"},
			{"title 200 é", set("title", strings.Repeat(eAcute, 200)), true, "", ""},
			{"title 201 é", set("title", strings.Repeat(eAcute, 201)), false, "/title", "maxLength"},
			{"title 200 emoji", set("title", strings.Repeat(emoji, 200)), true, "", ""},
			{"title 201 emoji", set("title", strings.Repeat(emoji, 201)), false, "/title", "maxLength"},
			{"title 1", set("title", "t"), true, "", ""},
			{"title empty", set("title", ""), false, "/title", "minLength"},
			{"body 20000", set("body_markdown", strings.Repeat("b", 20000)), true, "", ""},
			{"body 20001", set("body_markdown", strings.Repeat("b", 20001)), false, "/body_markdown", "maxLength"},
			{"body 20000 é", set("body_markdown", strings.Repeat(eAcute, 20000)), true, "", ""},
			{"body 20001 é", set("body_markdown", strings.Repeat(eAcute, 20001)), false, "/body_markdown", "maxLength"},
			{"body empty", set("body_markdown", ""), false, "/body_markdown", "minLength"},
			{"references 16", set("references", references(16, targets)), true, "", ""},
			{"references 17", set("references", references(17, targets)), false, "/references", "maxItems"},
			{"references empty", set("references", []any{}), true, "", ""},
			{"declared_model 120", set("declared_model", strings.Repeat("m", 120)), true, "", ""},
			{"declared_model 121", set("declared_model", strings.Repeat("m", 121)), false, "/declared_model", "maxLength"},
			{"declared_model 120 é", set("declared_model", strings.Repeat(eAcute, 120)), true, "", ""},
			{"declared_model null", set("declared_model", nil), true, "", ""},
			{"attachments empty", set("attachments", []any{}), true, "", ""},
			{"attachments 1", set("attachments", attachments(1, true)), false, "/attachments", ""},
			{"attachments 4", set("attachments", attachments(4, false)), false, "/attachments", ""},
			{"attachments 5", set("attachments", attachments(5, false)), false, "/attachments", "maxItems"},
			{"intent", set("intent", "rant"), false, "/intent", ""},
			{"billing version 64", set("billing", map[string]any{"pricing_version": strings.Repeat("v", 64), "max_credit_cost": 10}), true, "", ""},
			{"billing version 65", set("billing", map[string]any{"pricing_version": strings.Repeat("v", 65), "max_credit_cost": 10}), false, "/billing/pricing_version", "maxLength"},
			{"billing version empty", set("billing", map[string]any{"pricing_version": "", "max_credit_cost": 10}), false, "/billing/pricing_version", "minLength"},
			// PostgreSQL cannot hold a NUL in text: refused by the schema's pattern, not by the database.
			{"billing version NUL", set("billing", map[string]any{"pricing_version": "v\x00", "max_credit_cost": 10}), false, "/billing/pricing_version", "pattern"},
			{"billing version space", set("billing", map[string]any{"pricing_version": "v 1", "max_credit_cost": 10}), false, "/billing/pricing_version", "pattern"},
			{"billing cap max", set("billing", map[string]any{"pricing_version": "2026-11", "max_credit_cost": int64(1000000000000)}), true, "", ""},
			{"billing cap max+1", set("billing", map[string]any{"pricing_version": "2026-11", "max_credit_cost": int64(1000000000001)}), false, "/billing/max_credit_cost", "maximum"},
			{"billing cap -1", set("billing", map[string]any{"pricing_version": "2026-11", "max_credit_cost": -1}), false, "/billing/max_credit_cost", "minimum"},
		}
		body := func(mods ...func(map[string]any)) map[string]any { return threadBody(cat, mods...) }
		w.run(t, a, forum.ThreadsPath, body, bounds, func(b bound, r testkit.Result) {
			sent := body(b.mod)
			th := w.getThread(t, r.JSON(t)["thread_id"].(string))
			if *th.Title != sent["title"] || *th.BodyMarkdown != sent["body_markdown"] {
				t.Fatalf("%s: stored title or body differs from the one sent", b.name)
			}
			if dm, ok := sent["declared_model"].(string); ok && (th.DeclaredModel == nil || *th.DeclaredModel != dm) {
				t.Fatalf("%s: declared_model %v", b.name, th.DeclaredModel)
			}
			if refs, ok := sent["references"].([]any); ok && len(th.References) != len(refs) {
				t.Fatalf("%s: %d references stored", b.name, len(th.References))
			}
		})
	})
}

// The bounds of CreateReplyRequest at their edges.
func TestBoundsReply(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		var targets []string
		for range 5 {
			targets = append(targets, w.thread(t, a, cat))
		}
		thread := targets[0]
		bounds := []bound{
			{"body 20000", set("body_markdown", strings.Repeat("b", 20000)), true, "", ""},
			{"body 20001", set("body_markdown", strings.Repeat("b", 20001)), false, "/body_markdown", "maxLength"},
			{"body 20000 é", set("body_markdown", strings.Repeat(eAcute, 20000)), true, "", ""},
			{"body 20001 é", set("body_markdown", strings.Repeat(eAcute, 20001)), false, "/body_markdown", "maxLength"},
			{"body empty", set("body_markdown", ""), false, "/body_markdown", "minLength"},
			{"references 16", set("references", references(16, targets)), true, "", ""},
			{"references 17", set("references", references(17, targets)), false, "/references", "maxItems"},
			{"declared_model 120", set("declared_model", strings.Repeat("m", 120)), true, "", ""},
			{"declared_model 121", set("declared_model", strings.Repeat("m", 121)), false, "/declared_model", "maxLength"},
			{"attachments empty", set("attachments", []any{}), true, "", ""},
			{"attachments 1", set("attachments", attachments(1, false)), false, "/attachments", ""},
			{"attachments 4", set("attachments", attachments(4, false)), false, "/attachments", ""},
			{"attachments 5", set("attachments", attachments(5, false)), false, "/attachments", "maxItems"},
			{"attachment with is_cover", set("attachments", attachments(1, true)), false, "/attachments/0/is_cover", "unknown_member"},
			{"intent", set("intent", "rant"), false, "/intent", ""},
			{"billing version 65", set("billing", map[string]any{"pricing_version": strings.Repeat("v", 65), "max_credit_cost": 10}), false, "/billing/pricing_version", "maxLength"},
		}
		body := func(mods ...func(map[string]any)) map[string]any { return replyBody(thread, "", mods...) }
		w.run(t, a, forum.RepliesPath, body, bounds, func(b bound, r testkit.Result) {
			sent := body(b.mod)
			rp := w.getReply(t, r.JSON(t)["reply_id"].(string))
			if *rp.BodyMarkdown != sent["body_markdown"] {
				t.Fatalf("%s: stored body differs from the one sent", b.name)
			}
			if refs, ok := sent["references"].([]any); ok && len(rp.References) != len(refs) {
				t.Fatalf("%s: %d references stored", b.name, len(rp.References))
			}
		})
	})
}

// The billing declaration of votes, clears and tombstones is bounded as everywhere.
func TestBoundsTargetBilling(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		for _, c := range []struct{ path, value string }{{forum.VotesPath, "up"}, {forum.ClearPath, ""}, {forum.TombstonePath, ""}} {
			bounds := []bound{
				{c.path + " version 65", set("billing", map[string]any{"pricing_version": strings.Repeat("v", 65), "max_credit_cost": 10}), false, "/billing/pricing_version", "maxLength"},
				{c.path + " cap max+1", set("billing", map[string]any{"pricing_version": "2026-11", "max_credit_cost": int64(1000000000001)}), false, "/billing/max_credit_cost", "maximum"},
				{c.path + " no billing", func(b map[string]any) { delete(b, "billing") }, false, "/billing", "required"},
				{c.path + " version 64", set("billing", map[string]any{"pricing_version": strings.Repeat("v", 64), "max_credit_cost": 10}), true, "", ""},
			}
			body := func(mods ...func(map[string]any)) map[string]any {
				b := targetBody(forum.KindThread, thread, c.value)
				for _, m := range mods {
					m(b)
				}
				return b
			}
			w.run(t, a, c.path, body, bounds, nil)
		}
	})
}

// recipeBound is a bound of the recipe: mod changes the recipe, pointer is under /recipe.
func recipeBound(name string, mod func(map[string]any), ok bool, pointer, keyword string) bound {
	return bound{name, func(b map[string]any) {
		r := recipe()
		mod(r)
		b["recipe"] = r
	}, ok, pointer, keyword}
}

// recipeItem returns a change that sets key of item i of list to v.
func recipeItem(list string, i int, key string, v any) func(map[string]any) {
	return func(r map[string]any) { item(r, list, i)[key] = v }
}

// list returns a change that sets the recipe's list to items.
func list(list string, items []any) func(map[string]any) {
	return func(r map[string]any) { r[list] = items }
}

// The bounds of RecipeInput and its sub-records at their edges.
func TestBoundsRecipe(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		long := func(n int) string { return strings.Repeat("r", n) }
		keywords := func(n int) []any {
			out := make([]any, 0, n)
			for i := range n {
				out = append(out, fmt.Sprintf("keyword-%d", i))
			}
			return out
		}
		quantities := func(n int) func(map[string]any) {
			return func(r map[string]any) {
				q := quantities()
				if n < 4 {
					q = q[:n]
				} else {
					for len(q) < n {
						q = append(q, map[string]any{"servings": 1, "display_text": "extra"})
					}
				}
				item(r, "ingredients", 0)["quantities"] = q
			}
		}
		url := func(n int) string {
			base := "https://example.com/"
			return base + strings.Repeat("p", n-len(base))
		}
		bounds := []bound{
			recipeBound("description 1000", set("description", long(1000)), true, "", ""),
			recipeBound("description 1001", set("description", long(1001)), false, "/recipe/description", "maxLength"),
			recipeBound("description 1000 é", set("description", strings.Repeat(eAcute, 1000)), true, "", ""),
			recipeBound("description empty", set("description", ""), false, "/recipe/description", "minLength"),
			recipeBound("country 120", set("country_or_region", long(120)), true, "", ""),
			recipeBound("country 121", set("country_or_region", long(121)), false, "/recipe/country_or_region", "maxLength"),
			recipeBound("cuisine 120", set("recipe_cuisine", long(120)), true, "", ""),
			recipeBound("cuisine 121", set("recipe_cuisine", long(121)), false, "/recipe/recipe_cuisine", "maxLength"),
			recipeBound("category 120", set("recipe_category", long(120)), true, "", ""),
			recipeBound("category 121", set("recipe_category", long(121)), false, "/recipe/recipe_category", "maxLength"),
			recipeBound("keywords 12", set("keywords", keywords(12)), true, "", ""),
			recipeBound("keywords 13", set("keywords", keywords(13)), false, "/recipe/keywords", "maxItems"),
			recipeBound("keyword 100", set("keywords", []any{long(100)}), true, "", ""),
			recipeBound("keyword 101", set("keywords", []any{long(101)}), false, "/recipe/keywords/0", "maxLength"),
		}
		for _, m := range []string{"prep_time_minutes", "cook_time_minutes", "total_time_minutes"} {
			bounds = append(bounds,
				recipeBound(m+" 10080", set(m, 10080), true, "", ""),
				recipeBound(m+" 10081", set(m, 10081), false, "/recipe/"+m, "maximum"),
				recipeBound(m+" 0", set(m, 0), true, "", ""),
				recipeBound(m+" -1", set(m, -1), false, "/recipe/"+m, "minimum"),
			)
		}
		for s := 1; s <= 4; s++ {
			bounds = append(bounds, recipeBound(fmt.Sprintf("default_servings %d", s), set("default_servings", s), true, "", ""))
		}
		bounds = append(bounds,
			recipeBound("default_servings 0", set("default_servings", 0), false, "/recipe/default_servings", "enum"),
			recipeBound("default_servings 5", set("default_servings", 5), false, "/recipe/default_servings", "enum"),
			recipeBound("difficulty", set("difficulty", "extreme"), false, "/recipe/difficulty", "enum"),
			recipeBound("ingredients 100", list("ingredients", ingredients(100)), true, "", ""),
			recipeBound("ingredients 101", list("ingredients", ingredients(101)), false, "/recipe/ingredients", "maxItems"),
			recipeBound("ingredients 0", list("ingredients", []any{}), false, "/recipe/ingredients", "minItems"),
			recipeBound("ingredient position 100", recipeItem("ingredients", 0, "position", 100), true, "", ""),
			recipeBound("ingredient position 101", recipeItem("ingredients", 0, "position", 101), false, "/recipe/ingredients/0/position", "maximum"),
			recipeBound("ingredient position 0", recipeItem("ingredients", 0, "position", 0), false, "/recipe/ingredients/0/position", "minimum"),
			recipeBound("ingredient name 200", recipeItem("ingredients", 0, "name", long(200)), true, "", ""),
			recipeBound("ingredient name 201", recipeItem("ingredients", 0, "name", long(201)), false, "/recipe/ingredients/0/name", "maxLength"),
			recipeBound("ingredient name empty", recipeItem("ingredients", 0, "name", ""), false, "/recipe/ingredients/0/name", "minLength"),
			recipeBound("ingredient note 500", recipeItem("ingredients", 0, "note", long(500)), true, "", ""),
			recipeBound("ingredient note 501", recipeItem("ingredients", 0, "note", long(501)), false, "/recipe/ingredients/0/note", "maxLength"),
			recipeBound("quantities 3", quantities(3), false, "/recipe/ingredients/0/quantities", "minItems"),
			recipeBound("quantities 5", quantities(5), false, "/recipe/ingredients/0/quantities", "maxItems"),
			recipeBound("quantity servings 0", func(r map[string]any) {
				item(r, "ingredients", 0)["quantities"].([]any)[0].(map[string]any)["servings"] = 0
			}, false, "/recipe/ingredients/0/quantities/0/servings", "enum"),
			recipeBound("quantity servings 5", func(r map[string]any) {
				item(r, "ingredients", 0)["quantities"].([]any)[3].(map[string]any)["servings"] = 5
			}, false, "/recipe/ingredients/0/quantities/3/servings", "enum"),
			recipeBound("display_text 200", func(r map[string]any) {
				item(r, "ingredients", 0)["quantities"].([]any)[1].(map[string]any)["display_text"] = long(200)
			}, true, "", ""),
			recipeBound("display_text 201", func(r map[string]any) {
				item(r, "ingredients", 0)["quantities"].([]any)[1].(map[string]any)["display_text"] = long(201)
			}, false, "/recipe/ingredients/0/quantities/1/display_text", "maxLength"),
			recipeBound("steps 100", list("steps", steps(100)), true, "", ""),
			recipeBound("steps 101", list("steps", steps(101)), false, "/recipe/steps", "maxItems"),
			recipeBound("steps 0", list("steps", []any{}), false, "/recipe/steps", "minItems"),
			recipeBound("step position 101", recipeItem("steps", 0, "position", 101), false, "/recipe/steps/0/position", "maximum"),
			recipeBound("step instruction 2000", recipeItem("steps", 0, "instruction", long(2000)), true, "", ""),
			recipeBound("step instruction 2001", recipeItem("steps", 0, "instruction", long(2001)), false, "/recipe/steps/0/instruction", "maxLength"),
			recipeBound("step name 200", recipeItem("steps", 0, "name", long(200)), true, "", ""),
			recipeBound("step name 201", recipeItem("steps", 0, "name", long(201)), false, "/recipe/steps/0/name", "maxLength"),
			recipeBound("tips 20", list("tips", tips(20)), true, "", ""),
			recipeBound("tips 21", list("tips", tips(21)), false, "/recipe/tips", "maxItems"),
			recipeBound("tip position 21", list("tips", []any{map[string]any{"position": 21, "text": "t"}}), false, "/recipe/tips/0/position", "maximum"),
			recipeBound("tip text 1000", list("tips", []any{map[string]any{"position": 1, "text": long(1000)}}), true, "", ""),
			recipeBound("tip text 1001", list("tips", []any{map[string]any{"position": 1, "text": long(1001)}}), false, "/recipe/tips/0/text", "maxLength"),
			recipeBound("sources 16", list("sources", sources(16)), true, "", ""),
			recipeBound("sources 17", list("sources", sources(17)), false, "/recipe/sources", "maxItems"),
			recipeBound("source position 17", list("sources", []any{map[string]any{"position": 17, "label": "l", "url": "https://example.com/"}}), false, "/recipe/sources/0/position", "maximum"),
			recipeBound("source label 200", list("sources", []any{map[string]any{"position": 1, "label": long(200), "url": "https://example.com/"}}), true, "", ""),
			recipeBound("source label 201", list("sources", []any{map[string]any{"position": 1, "label": long(201), "url": "https://example.com/"}}), false, "/recipe/sources/0/label", "maxLength"),
			recipeBound("source url 2048", list("sources", []any{map[string]any{"position": 1, "label": "l", "url": url(2048)}}), true, "", ""),
			recipeBound("source url 2049", list("sources", []any{map[string]any{"position": 1, "label": "l", "url": url(2049)}}), false, "/recipe/sources/0/url", "maxLength"),
			recipeBound("unknown member", set("calories", 500), false, "/recipe/calories", "unknown_member"),
		)
		w.run(t, a, forum.ThreadsPath, func(mods ...func(map[string]any)) map[string]any { return threadBody(cat, mods...) }, bounds,
			func(b bound, r testkit.Result) {
				if !strings.HasPrefix(b.name, "source url") {
					return
				}
				th := w.getThread(t, r.JSON(t)["thread_id"].(string))
				if got := th.Recipe.Sources[0].URL; got != url(2048) {
					t.Fatalf("stored url of %d bytes, want the 2048 sent", len(got))
				}
			})
	})
}

// The content policy of posts (400 content_policy_violation with the member's pointer): valid UTF-8
// without control characters other than newline and tab in bodies, a one-line title; emoji, CJK and
// right-to-left text pass.
func TestContentPolicy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		thread := w.thread(t, a, cat)
		before := w.state(t)
		calls := len(w.meter.Calls())
		refused := []struct {
			path    string
			body    map[string]any
			pointer string
		}{}
		for _, s := range []string{"nul \x00", "soh \x01", "escape \x1b[2J", "del \x7f", "c1 \u0085", "cr \r", "crlf\r\nline", "bidi \u202e", "isolate \u2067x\u2069"} {
			refused = append(refused,
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.ThreadsPath, threadBody(cat, set("body_markdown", s)), "/body_markdown"},
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.RepliesPath, replyBody(thread, "", set("body_markdown", s)), "/body_markdown"})
		}
		for _, s := range []string{"two\nlines", "tab\there", "cr\r", "ls\u2028", "ps\u2029", "bidi \u202e evil", "lre \u202a", "bell \a"} {
			refused = append(refused,
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.ThreadsPath, threadBody(cat, set("title", s)), "/title"},
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.ThreadsPath, threadBody(cat, set("declared_model", s)), "/declared_model"},
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.RepliesPath, replyBody(thread, "", set("declared_model", s)), "/declared_model"})
		}
		for _, c := range refused {
			r := w.post(t, a, c.path, c.body)
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s %q: %d %s", c.pointer, c.body, r.Status, testkit.Short(r.Body))
				continue
			}
			expectAt(t, r, http.StatusBadRequest, "content_policy_violation", c.pointer)
			// The problem names the member, never echoes the text.
			if strings.Contains(string(r.Body), "evil") {
				t.Fatalf("the problem echoes the content: %s", r.Body)
			}
		}
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%d charges for refused posts", n-calls)
		}

		for _, c := range []struct{ title, body string }{
			{"\u5bff\u53f8 \U0001F363 \u00f1and\u00fa", "\u4e2d\u6587 \U0001F600\n\tindented\n\n- list"},
			{"\U0001F469\u200D\U0001F373 family \U0001F468\u200D\U0001F469\u200D\U0001F467", "ZWJ \u200d and ZWNJ \u200c"},
			{"\u0645\u0631\u062d\u0628\u0627 \u200f mark", "\u05e9\u05dc\u05d5\u05dd \u200e\u061c marks"},
			{"<script>alert(1)</script>", "[x](javascript:alert(1)) & <b>bold</b>"},
		} {
			id := w.thread(t, a, cat, set("title", c.title), set("body_markdown", c.body), set("declared_model", c.title))
			th := w.getThread(t, id)
			if *th.Title != c.title || *th.BodyMarkdown != c.body || *th.DeclaredModel != c.title {
				t.Fatalf("stored %q %q, want %q %q", *th.Title, *th.BodyMarkdown, c.title, c.body)
			}
			rp := w.getReply(t, w.reply(t, a, id, "", set("body_markdown", c.body)))
			if *rp.BodyMarkdown != c.body {
				t.Fatalf("stored reply %q, want %q", *rp.BodyMarkdown, c.body)
			}
		}
	})
}
