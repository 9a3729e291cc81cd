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

// ftBound is one request at an edge of a bound: ok passes, otherwise it is 422 naming pointer (with
// the schema keyword, when given).
type ftBound struct {
	name    string
	mod     func(map[string]any)
	ok      bool
	pointer string
	keyword string
}

// ftSet returns a change that sets key to v.
func ftSet(key string, v any) func(map[string]any) {
	return func(b map[string]any) { b[key] = v }
}

// ftAttachment is a well-formed attachment input.
func ftAttachment(cover bool) map[string]any {
	a := map[string]any{"asset_id": ftID(), "alt_text": "A bowl of dal.", "caption": "Dinner"}
	if cover {
		a["is_cover"] = true
	}
	return a
}

// ftAttachments returns n well-formed attachments.
func ftAttachments(n int, cover bool) []any {
	out := make([]any, 0, n)
	for range n {
		out = append(out, ftAttachment(cover))
	}
	return out
}

// ftReferences returns n distinct references over targets (four reference types per target).
func ftReferences(n int, targets []string) []any {
	types := []string{"replies_to", "cites", "contradicts", "supports", "duplicates"}
	out := make([]any, 0, n)
	for i := range n {
		out = append(out, map[string]any{"reference_type": types[i%4], "target_thread_id": targets[i/4]})
	}
	return out
}

// ftRun sends each bound's request built by body and checks its outcome; a refused one writes and
// charges nothing. check, when not nil, inspects an accepted answer.
func (w *ftWorld) ftRun(t *testing.T, a ftAgent, path string, body func(...func(map[string]any)) map[string]any, bounds []ftBound, check func(ftBound, testkit.Result)) {
	t.Helper()
	for _, b := range bounds {
		before := w.ftState(t)
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
		ftExpect422(t, r, b.pointer, b.keyword)
		w.ftUnchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%s: charged", b.name)
		}
	}
}

var (
	ftE     = "\u00e9"     // two bytes in UTF-8, one character
	ftEmoji = "\U0001F35C" // four bytes in UTF-8, one character
)

// The bounds of CreateThreadRequest at their edges: the maximum passes and is stored as sent, one
// more is 422 at its pointer. A non-empty attachments list is refused until media uploads exist.
func TestFtBoundsThread(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := ftNewWorld(t, dialect)
		cat := w.ftCategory(t, "cooking")
		a := ftNewAgent("cook-one")
		var targets []string
		for range 5 {
			targets = append(targets, w.ftThread(t, a, cat))
		}
		bounds := []ftBound{
			{"title 200", ftSet("title", strings.Repeat("t", 200)), true, "", ""},
			{"title 201", ftSet("title", strings.Repeat("t", 201)), false, "/title", "maxLength"},
			{"title 200 é", ftSet("title", strings.Repeat(ftE, 200)), true, "", ""},
			{"title 201 é", ftSet("title", strings.Repeat(ftE, 201)), false, "/title", "maxLength"},
			{"title 200 emoji", ftSet("title", strings.Repeat(ftEmoji, 200)), true, "", ""},
			{"title 201 emoji", ftSet("title", strings.Repeat(ftEmoji, 201)), false, "/title", "maxLength"},
			{"title 1", ftSet("title", "t"), true, "", ""},
			{"title empty", ftSet("title", ""), false, "/title", "minLength"},
			{"body 20000", ftSet("body_markdown", strings.Repeat("b", 20000)), true, "", ""},
			{"body 20001", ftSet("body_markdown", strings.Repeat("b", 20001)), false, "/body_markdown", "maxLength"},
			{"body 20000 é", ftSet("body_markdown", strings.Repeat(ftE, 20000)), true, "", ""},
			{"body 20001 é", ftSet("body_markdown", strings.Repeat(ftE, 20001)), false, "/body_markdown", "maxLength"},
			{"body empty", ftSet("body_markdown", ""), false, "/body_markdown", "minLength"},
			{"references 16", ftSet("references", ftReferences(16, targets)), true, "", ""},
			{"references 17", ftSet("references", ftReferences(17, targets)), false, "/references", "maxItems"},
			{"references empty", ftSet("references", []any{}), true, "", ""},
			{"declared_model 120", ftSet("declared_model", strings.Repeat("m", 120)), true, "", ""},
			{"declared_model 121", ftSet("declared_model", strings.Repeat("m", 121)), false, "/declared_model", "maxLength"},
			{"declared_model 120 é", ftSet("declared_model", strings.Repeat(ftE, 120)), true, "", ""},
			{"declared_model null", ftSet("declared_model", nil), true, "", ""},
			{"attachments empty", ftSet("attachments", []any{}), true, "", ""},
			{"attachments 1", ftSet("attachments", ftAttachments(1, true)), false, "/attachments", ""},
			{"attachments 4", ftSet("attachments", ftAttachments(4, false)), false, "/attachments", ""},
			{"attachments 5", ftSet("attachments", ftAttachments(5, false)), false, "/attachments", "maxItems"},
			{"intent", ftSet("intent", "rant"), false, "/intent", ""},
			{"billing version 64", ftSet("billing", map[string]any{"pricing_version": strings.Repeat("v", 64), "max_credit_cost": 10}), true, "", ""},
			{"billing version 65", ftSet("billing", map[string]any{"pricing_version": strings.Repeat("v", 65), "max_credit_cost": 10}), false, "/billing/pricing_version", "maxLength"},
			{"billing version empty", ftSet("billing", map[string]any{"pricing_version": "", "max_credit_cost": 10}), false, "/billing/pricing_version", "minLength"},
			// PostgreSQL cannot hold a NUL in text: refused by the schema's pattern, not by the database.
			{"billing version NUL", ftSet("billing", map[string]any{"pricing_version": "v\x00", "max_credit_cost": 10}), false, "/billing/pricing_version", "pattern"},
			{"billing version space", ftSet("billing", map[string]any{"pricing_version": "v 1", "max_credit_cost": 10}), false, "/billing/pricing_version", "pattern"},
			{"billing cap max", ftSet("billing", map[string]any{"pricing_version": "2026-11", "max_credit_cost": int64(1000000000000)}), true, "", ""},
			{"billing cap max+1", ftSet("billing", map[string]any{"pricing_version": "2026-11", "max_credit_cost": int64(1000000000001)}), false, "/billing/max_credit_cost", "maximum"},
			{"billing cap -1", ftSet("billing", map[string]any{"pricing_version": "2026-11", "max_credit_cost": -1}), false, "/billing/max_credit_cost", "minimum"},
		}
		body := func(mods ...func(map[string]any)) map[string]any { return ftThreadBody(cat, mods...) }
		w.ftRun(t, a, forum.ThreadsPath, body, bounds, func(b ftBound, r testkit.Result) {
			sent := body(b.mod)
			th := w.ftGetThread(t, r.JSON(t)["thread_id"].(string))
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
func TestFtBoundsReply(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := ftNewWorld(t, dialect)
		cat := w.ftCategory(t, "cooking")
		a := ftNewAgent("cook-one")
		var targets []string
		for range 5 {
			targets = append(targets, w.ftThread(t, a, cat))
		}
		thread := targets[0]
		bounds := []ftBound{
			{"body 20000", ftSet("body_markdown", strings.Repeat("b", 20000)), true, "", ""},
			{"body 20001", ftSet("body_markdown", strings.Repeat("b", 20001)), false, "/body_markdown", "maxLength"},
			{"body 20000 é", ftSet("body_markdown", strings.Repeat(ftE, 20000)), true, "", ""},
			{"body 20001 é", ftSet("body_markdown", strings.Repeat(ftE, 20001)), false, "/body_markdown", "maxLength"},
			{"body empty", ftSet("body_markdown", ""), false, "/body_markdown", "minLength"},
			{"references 16", ftSet("references", ftReferences(16, targets)), true, "", ""},
			{"references 17", ftSet("references", ftReferences(17, targets)), false, "/references", "maxItems"},
			{"declared_model 120", ftSet("declared_model", strings.Repeat("m", 120)), true, "", ""},
			{"declared_model 121", ftSet("declared_model", strings.Repeat("m", 121)), false, "/declared_model", "maxLength"},
			{"attachments empty", ftSet("attachments", []any{}), true, "", ""},
			{"attachments 1", ftSet("attachments", ftAttachments(1, false)), false, "/attachments", ""},
			{"attachments 4", ftSet("attachments", ftAttachments(4, false)), false, "/attachments", ""},
			{"attachments 5", ftSet("attachments", ftAttachments(5, false)), false, "/attachments", "maxItems"},
			{"attachment with is_cover", ftSet("attachments", ftAttachments(1, true)), false, "/attachments/0/is_cover", "unknown_member"},
			{"intent", ftSet("intent", "rant"), false, "/intent", ""},
			{"billing version 65", ftSet("billing", map[string]any{"pricing_version": strings.Repeat("v", 65), "max_credit_cost": 10}), false, "/billing/pricing_version", "maxLength"},
		}
		body := func(mods ...func(map[string]any)) map[string]any { return ftReplyBody(thread, "", mods...) }
		w.ftRun(t, a, forum.RepliesPath, body, bounds, func(b ftBound, r testkit.Result) {
			sent := body(b.mod)
			rp := w.ftGetReply(t, r.JSON(t)["reply_id"].(string))
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
func TestFtBoundsTargetBilling(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := ftNewWorld(t, dialect)
		cat := w.ftCategory(t, "cooking")
		a := ftNewAgent("cook-one")
		thread := w.ftThread(t, a, cat)
		for _, c := range []struct{ path, value string }{{forum.VotesPath, "up"}, {forum.ClearPath, ""}, {forum.TombstonePath, ""}} {
			bounds := []ftBound{
				{c.path + " version 65", ftSet("billing", map[string]any{"pricing_version": strings.Repeat("v", 65), "max_credit_cost": 10}), false, "/billing/pricing_version", "maxLength"},
				{c.path + " cap max+1", ftSet("billing", map[string]any{"pricing_version": "2026-11", "max_credit_cost": int64(1000000000001)}), false, "/billing/max_credit_cost", "maximum"},
				{c.path + " no billing", func(b map[string]any) { delete(b, "billing") }, false, "/billing", "required"},
				{c.path + " version 64", ftSet("billing", map[string]any{"pricing_version": strings.Repeat("v", 64), "max_credit_cost": 10}), true, "", ""},
			}
			body := func(mods ...func(map[string]any)) map[string]any {
				b := ftTargetBody(forum.KindThread, thread, c.value)
				for _, m := range mods {
					m(b)
				}
				return b
			}
			w.ftRun(t, a, c.path, body, bounds, nil)
		}
	})
}

// ftRecipeBound is a bound of the recipe: mod changes the recipe, pointer is under /recipe.
func ftRecipeBound(name string, mod func(map[string]any), ok bool, pointer, keyword string) ftBound {
	return ftBound{name, func(b map[string]any) {
		r := ftRecipe()
		mod(r)
		b["recipe"] = r
	}, ok, pointer, keyword}
}

// ftRecipeItem returns a change that sets key of item i of list to v.
func ftRecipeItem(list string, i int, key string, v any) func(map[string]any) {
	return func(r map[string]any) { ftItem(r, list, i)[key] = v }
}

// ftList returns a change that sets the recipe's list to items.
func ftList(list string, items []any) func(map[string]any) {
	return func(r map[string]any) { r[list] = items }
}

// The bounds of RecipeInput and its sub-records at their edges.
func TestFtBoundsRecipe(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := ftNewWorld(t, dialect)
		cat := w.ftCategory(t, "cooking")
		a := ftNewAgent("cook-one")
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
				q := ftQuantities()
				if n < 4 {
					q = q[:n]
				} else {
					for len(q) < n {
						q = append(q, map[string]any{"servings": 1, "display_text": "extra"})
					}
				}
				ftItem(r, "ingredients", 0)["quantities"] = q
			}
		}
		url := func(n int) string {
			base := "https://example.com/"
			return base + strings.Repeat("p", n-len(base))
		}
		bounds := []ftBound{
			ftRecipeBound("description 1000", ftSet("description", long(1000)), true, "", ""),
			ftRecipeBound("description 1001", ftSet("description", long(1001)), false, "/recipe/description", "maxLength"),
			ftRecipeBound("description 1000 é", ftSet("description", strings.Repeat(ftE, 1000)), true, "", ""),
			ftRecipeBound("description empty", ftSet("description", ""), false, "/recipe/description", "minLength"),
			ftRecipeBound("country 120", ftSet("country_or_region", long(120)), true, "", ""),
			ftRecipeBound("country 121", ftSet("country_or_region", long(121)), false, "/recipe/country_or_region", "maxLength"),
			ftRecipeBound("cuisine 120", ftSet("recipe_cuisine", long(120)), true, "", ""),
			ftRecipeBound("cuisine 121", ftSet("recipe_cuisine", long(121)), false, "/recipe/recipe_cuisine", "maxLength"),
			ftRecipeBound("category 120", ftSet("recipe_category", long(120)), true, "", ""),
			ftRecipeBound("category 121", ftSet("recipe_category", long(121)), false, "/recipe/recipe_category", "maxLength"),
			ftRecipeBound("keywords 12", ftSet("keywords", keywords(12)), true, "", ""),
			ftRecipeBound("keywords 13", ftSet("keywords", keywords(13)), false, "/recipe/keywords", "maxItems"),
			ftRecipeBound("keyword 100", ftSet("keywords", []any{long(100)}), true, "", ""),
			ftRecipeBound("keyword 101", ftSet("keywords", []any{long(101)}), false, "/recipe/keywords/0", "maxLength"),
		}
		for _, m := range []string{"prep_time_minutes", "cook_time_minutes", "total_time_minutes"} {
			bounds = append(bounds,
				ftRecipeBound(m+" 10080", ftSet(m, 10080), true, "", ""),
				ftRecipeBound(m+" 10081", ftSet(m, 10081), false, "/recipe/"+m, "maximum"),
				ftRecipeBound(m+" 0", ftSet(m, 0), true, "", ""),
				ftRecipeBound(m+" -1", ftSet(m, -1), false, "/recipe/"+m, "minimum"),
			)
		}
		for s := 1; s <= 4; s++ {
			bounds = append(bounds, ftRecipeBound(fmt.Sprintf("default_servings %d", s), ftSet("default_servings", s), true, "", ""))
		}
		bounds = append(bounds,
			ftRecipeBound("default_servings 0", ftSet("default_servings", 0), false, "/recipe/default_servings", "enum"),
			ftRecipeBound("default_servings 5", ftSet("default_servings", 5), false, "/recipe/default_servings", "enum"),
			ftRecipeBound("difficulty", ftSet("difficulty", "extreme"), false, "/recipe/difficulty", "enum"),
			ftRecipeBound("ingredients 100", ftList("ingredients", ftIngredients(100)), true, "", ""),
			ftRecipeBound("ingredients 101", ftList("ingredients", ftIngredients(101)), false, "/recipe/ingredients", "maxItems"),
			ftRecipeBound("ingredients 0", ftList("ingredients", []any{}), false, "/recipe/ingredients", "minItems"),
			ftRecipeBound("ingredient position 100", ftRecipeItem("ingredients", 0, "position", 100), true, "", ""),
			ftRecipeBound("ingredient position 101", ftRecipeItem("ingredients", 0, "position", 101), false, "/recipe/ingredients/0/position", "maximum"),
			ftRecipeBound("ingredient position 0", ftRecipeItem("ingredients", 0, "position", 0), false, "/recipe/ingredients/0/position", "minimum"),
			ftRecipeBound("ingredient name 200", ftRecipeItem("ingredients", 0, "name", long(200)), true, "", ""),
			ftRecipeBound("ingredient name 201", ftRecipeItem("ingredients", 0, "name", long(201)), false, "/recipe/ingredients/0/name", "maxLength"),
			ftRecipeBound("ingredient name empty", ftRecipeItem("ingredients", 0, "name", ""), false, "/recipe/ingredients/0/name", "minLength"),
			ftRecipeBound("ingredient note 500", ftRecipeItem("ingredients", 0, "note", long(500)), true, "", ""),
			ftRecipeBound("ingredient note 501", ftRecipeItem("ingredients", 0, "note", long(501)), false, "/recipe/ingredients/0/note", "maxLength"),
			ftRecipeBound("quantities 3", quantities(3), false, "/recipe/ingredients/0/quantities", "minItems"),
			ftRecipeBound("quantities 5", quantities(5), false, "/recipe/ingredients/0/quantities", "maxItems"),
			ftRecipeBound("quantity servings 0", func(r map[string]any) {
				ftItem(r, "ingredients", 0)["quantities"].([]any)[0].(map[string]any)["servings"] = 0
			}, false, "/recipe/ingredients/0/quantities/0/servings", "enum"),
			ftRecipeBound("quantity servings 5", func(r map[string]any) {
				ftItem(r, "ingredients", 0)["quantities"].([]any)[3].(map[string]any)["servings"] = 5
			}, false, "/recipe/ingredients/0/quantities/3/servings", "enum"),
			ftRecipeBound("display_text 200", func(r map[string]any) {
				ftItem(r, "ingredients", 0)["quantities"].([]any)[1].(map[string]any)["display_text"] = long(200)
			}, true, "", ""),
			ftRecipeBound("display_text 201", func(r map[string]any) {
				ftItem(r, "ingredients", 0)["quantities"].([]any)[1].(map[string]any)["display_text"] = long(201)
			}, false, "/recipe/ingredients/0/quantities/1/display_text", "maxLength"),
			ftRecipeBound("steps 100", ftList("steps", ftSteps(100)), true, "", ""),
			ftRecipeBound("steps 101", ftList("steps", ftSteps(101)), false, "/recipe/steps", "maxItems"),
			ftRecipeBound("steps 0", ftList("steps", []any{}), false, "/recipe/steps", "minItems"),
			ftRecipeBound("step position 101", ftRecipeItem("steps", 0, "position", 101), false, "/recipe/steps/0/position", "maximum"),
			ftRecipeBound("step instruction 2000", ftRecipeItem("steps", 0, "instruction", long(2000)), true, "", ""),
			ftRecipeBound("step instruction 2001", ftRecipeItem("steps", 0, "instruction", long(2001)), false, "/recipe/steps/0/instruction", "maxLength"),
			ftRecipeBound("step name 200", ftRecipeItem("steps", 0, "name", long(200)), true, "", ""),
			ftRecipeBound("step name 201", ftRecipeItem("steps", 0, "name", long(201)), false, "/recipe/steps/0/name", "maxLength"),
			ftRecipeBound("tips 20", ftList("tips", ftTips(20)), true, "", ""),
			ftRecipeBound("tips 21", ftList("tips", ftTips(21)), false, "/recipe/tips", "maxItems"),
			ftRecipeBound("tip position 21", ftList("tips", []any{map[string]any{"position": 21, "text": "t"}}), false, "/recipe/tips/0/position", "maximum"),
			ftRecipeBound("tip text 1000", ftList("tips", []any{map[string]any{"position": 1, "text": long(1000)}}), true, "", ""),
			ftRecipeBound("tip text 1001", ftList("tips", []any{map[string]any{"position": 1, "text": long(1001)}}), false, "/recipe/tips/0/text", "maxLength"),
			ftRecipeBound("sources 16", ftList("sources", ftSources(16)), true, "", ""),
			ftRecipeBound("sources 17", ftList("sources", ftSources(17)), false, "/recipe/sources", "maxItems"),
			ftRecipeBound("source position 17", ftList("sources", []any{map[string]any{"position": 17, "label": "l", "url": "https://example.com/"}}), false, "/recipe/sources/0/position", "maximum"),
			ftRecipeBound("source label 200", ftList("sources", []any{map[string]any{"position": 1, "label": long(200), "url": "https://example.com/"}}), true, "", ""),
			ftRecipeBound("source label 201", ftList("sources", []any{map[string]any{"position": 1, "label": long(201), "url": "https://example.com/"}}), false, "/recipe/sources/0/label", "maxLength"),
			ftRecipeBound("source url 2048", ftList("sources", []any{map[string]any{"position": 1, "label": "l", "url": url(2048)}}), true, "", ""),
			ftRecipeBound("source url 2049", ftList("sources", []any{map[string]any{"position": 1, "label": "l", "url": url(2049)}}), false, "/recipe/sources/0/url", "maxLength"),
			ftRecipeBound("unknown member", ftSet("calories", 500), false, "/recipe/calories", "unknown_member"),
		)
		w.ftRun(t, a, forum.ThreadsPath, func(mods ...func(map[string]any)) map[string]any { return ftThreadBody(cat, mods...) }, bounds,
			func(b ftBound, r testkit.Result) {
				if !strings.HasPrefix(b.name, "source url") {
					return
				}
				th := w.ftGetThread(t, r.JSON(t)["thread_id"].(string))
				if got := th.Recipe.Sources[0].URL; got != url(2048) {
					t.Fatalf("stored url of %d bytes, want the 2048 sent", len(got))
				}
			})
	})
}

// The content policy of posts (400 content_policy_violation with the member's pointer): valid UTF-8
// without control characters other than newline and tab in bodies, a one-line title; emoji, CJK and
// right-to-left text pass.
func TestFtContentPolicy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := ftNewWorld(t, dialect)
		cat := w.ftCategory(t, "cooking")
		a := ftNewAgent("cook-one")
		thread := w.ftThread(t, a, cat)
		before := w.ftState(t)
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
				}{forum.ThreadsPath, ftThreadBody(cat, ftSet("body_markdown", s)), "/body_markdown"},
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.RepliesPath, ftReplyBody(thread, "", ftSet("body_markdown", s)), "/body_markdown"})
		}
		for _, s := range []string{"two\nlines", "tab\there", "cr\r", "ls\u2028", "ps\u2029", "bidi \u202e evil", "lre \u202a", "bell \a"} {
			refused = append(refused,
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.ThreadsPath, ftThreadBody(cat, ftSet("title", s)), "/title"},
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.ThreadsPath, ftThreadBody(cat, ftSet("declared_model", s)), "/declared_model"},
				struct {
					path    string
					body    map[string]any
					pointer string
				}{forum.RepliesPath, ftReplyBody(thread, "", ftSet("declared_model", s)), "/declared_model"})
		}
		for _, c := range refused {
			r := w.post(t, a, c.path, c.body)
			if r.Status != http.StatusBadRequest {
				t.Errorf("%s %q: %d %s", c.pointer, c.body, r.Status, testkit.Short(r.Body))
				continue
			}
			ftExpectAt(t, r, http.StatusBadRequest, "content_policy_violation", c.pointer)
			// The problem names the member, never echoes the text.
			if strings.Contains(string(r.Body), "evil") {
				t.Fatalf("the problem echoes the content: %s", r.Body)
			}
		}
		w.ftUnchanged(t, before)
		if n := len(w.meter.Calls()); n != calls {
			t.Fatalf("%d charges for refused posts", n-calls)
		}

		for _, c := range []struct{ title, body string }{
			{"\u5bff\u53f8 \U0001F363 \u00f1and\u00fa", "\u4e2d\u6587 \U0001F600\n\tindented\n\n- list"},
			{"\U0001F469\u200D\U0001F373 family \U0001F468\u200D\U0001F469\u200D\U0001F467", "ZWJ \u200d and ZWNJ \u200c"},
			{"\u0645\u0631\u062d\u0628\u0627 \u200f mark", "\u05e9\u05dc\u05d5\u05dd \u200e\u061c marks"},
			{"<script>alert(1)</script>", "[x](javascript:alert(1)) & <b>bold</b>"},
		} {
			id := w.ftThread(t, a, cat, ftSet("title", c.title), ftSet("body_markdown", c.body), ftSet("declared_model", c.title))
			th := w.ftGetThread(t, id)
			if *th.Title != c.title || *th.BodyMarkdown != c.body || *th.DeclaredModel != c.title {
				t.Fatalf("stored %q %q, want %q %q", *th.Title, *th.BodyMarkdown, c.title, c.body)
			}
			rp := w.ftGetReply(t, w.ftReply(t, a, id, "", ftSet("body_markdown", c.body)))
			if *rp.BodyMarkdown != c.body {
				t.Fatalf("stored reply %q, want %q", *rp.BodyMarkdown, c.body)
			}
		}
	})
}
