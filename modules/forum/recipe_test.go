package forum_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/testkit"
)

// quantities are an ingredient's four quantities, one per serving count.
func quantities() []any {
	q := make([]any, 0, 4)
	for s := 1; s <= 4; s++ {
		q = append(q, map[string]any{"servings": s, "display_text": fmt.Sprintf("%d00 g", s)})
	}
	return q
}

// ingredients are n ingredients at positions 1..n.
func ingredients(n int) []any {
	out := make([]any, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, map[string]any{"position": i, "name": fmt.Sprintf("ingredient %d", i), "quantities": quantities()})
	}
	return out
}

// steps are n steps at positions 1..n.
func steps(n int) []any {
	out := make([]any, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, map[string]any{"position": i, "instruction": fmt.Sprintf("Do step %d.", i)})
	}
	return out
}

// tips are n tips at positions 1..n.
func tips(n int) []any {
	out := make([]any, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, map[string]any{"position": i, "text": fmt.Sprintf("Tip %d.", i)})
	}
	return out
}

// sources are n sources at positions 1..n.
func sources(n int) []any {
	out := make([]any, 0, n)
	for i := 1; i <= n; i++ {
		out = append(out, map[string]any{"position": i, "label": fmt.Sprintf("Source %d", i), "url": fmt.Sprintf("https://example.com/source/%d", i)})
	}
	return out
}

// recipe is a valid minimal recipe.
func recipe() map[string]any {
	return map[string]any{"description": "Red lentils simmered with cumin.", "prep_time_minutes": 10, "cook_time_minutes": 25,
		"total_time_minutes": 35, "difficulty": "easy", "default_servings": 2, "ingredients": ingredients(1), "steps": steps(1)}
}

// withRecipe sets a thread's recipe to r, changed by mods.
func withRecipe(r map[string]any, mods ...func(map[string]any)) func(map[string]any) {
	for _, m := range mods {
		m(r)
	}
	return func(b map[string]any) { b["recipe"] = r }
}

// item returns item i of the recipe's list as a map.
func item(r map[string]any, list string, i int) map[string]any {
	return r[list].([]any)[i].(map[string]any)
}

// jsonValue is v as encoding/json decodes it into an any.
func jsonValue(t testing.TB, v any) any {
	t.Helper()
	var out any
	if err := json.Unmarshal(marshal(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A recipe is stored and served as sent, every optional member included, with its source URLs in
// their normalised form: host lower-cased, an IDN host in punycode, :443 dropped.
func TestRecipeStoredAndServed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		recipe := map[string]any{
			"description":        "Red lentils simmered with cumin.\nServe with rice. \u9eb5 \U0001F35B",
			"country_or_region":  "India",
			"recipe_cuisine":     "Indian",
			"recipe_category":    "Main course",
			"keywords":           []any{"lentils", "dal", "\u30ab\u30ec\u30fc"},
			"prep_time_minutes":  0,
			"cook_time_minutes":  10080,
			"total_time_minutes": 10080,
			"difficulty":         "medium",
			"default_servings":   4,
			"ingredients": []any{
				map[string]any{"position": 3, "name": "red lentils", "note": "rinsed\ntwice", "quantities": []any{
					map[string]any{"servings": 4, "display_text": "400 g"}, map[string]any{"servings": 2, "display_text": "200 g"},
					map[string]any{"servings": 1, "display_text": "100 g"}, map[string]any{"servings": 3, "display_text": "300 g"}}},
				map[string]any{"position": 1, "name": "cumin \U0001F33F", "quantities": quantities()},
			},
			"steps": []any{
				map[string]any{"position": 2, "name": "Simmer", "instruction": "Simmer 25 minutes.\n\tStir now and then."},
				map[string]any{"position": 1, "instruction": "Rinse the lentils."},
			},
			"tips": []any{map[string]any{"position": 1, "text": "Lemon at the end."}},
			"sources": []any{
				map[string]any{"position": 1, "label": "Upper case", "url": "https://WWW.Example.COM/Dal?Q=1#Top"},
				map[string]any{"position": 2, "label": "Cyrillic look-alike", "url": "https://ex\u0430mple.com/dal"},
				map[string]any{"position": 3, "label": "Explicit port", "url": "https://example.org:443/dal"},
				map[string]any{"position": 4, "label": "IDN", "url": "https://\u043f\u0440\u0438\u043c\u0435\u0440.\u0440\u0444/"},
			},
		}
		id := w.thread(t, a, cat, withRecipe(recipe))

		want := jsonValue(t, recipe).(map[string]any)
		sources := want["sources"].([]any)
		for i, u := range []string{"https://www.example.com/Dal?Q=1#Top", "https://xn--exmple-4nf.com/dal", "https://example.org/dal", "https://xn--e1afmkfd.xn--p1ai/"} {
			sources[i].(map[string]any)["url"] = u
		}
		read := w.read(t, forum.ThreadPath+"/"+id, "thread", nil).JSON(t)
		if !reflect.DeepEqual(read["recipe"], any(want)) {
			t.Fatalf("served recipe\n %s\nwant\n %s", marshal(t, read["recipe"]), marshal(t, want))
		}
		var l forum.ThreadList
		w.read(t, threadsURL("cooking"), "thread-list", &l)
		if len(l.Threads) != 1 || l.Threads[0].Recipe == nil || l.Threads[0].Recipe.Sources[1].URL != "https://xn--exmple-4nf.com/dal" {
			t.Fatalf("list %+v", l.Threads)
		}

		// recipe null, or absent: no recipe.
		for _, mod := range []func(map[string]any){func(b map[string]any) { b["recipe"] = nil }, func(map[string]any) {}} {
			if th := w.getThread(t, w.thread(t, a, cat, mod)); th.Recipe != nil {
				t.Fatalf("recipe %+v", th.Recipe)
			}
		}
	})
}

// Positions are unique within ingredients, steps, tips and sources (422 at the repeat); any order and
// gaps are fine.
func TestRecipePositions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		before := w.state(t)
		for _, c := range []struct {
			list  string
			items func(int) []any
		}{{"ingredients", ingredients}, {"steps", steps}, {"tips", tips}, {"sources", sources}} {
			r := recipe()
			items := c.items(3)
			items[2].(map[string]any)["position"] = 1
			r[c.list] = items
			expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, withRecipe(r))), http.StatusUnprocessableEntity,
				"validation_failed", fmt.Sprintf("/recipe/%s/2/position", c.list))
		}
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != 0 {
			t.Fatalf("%d charges", n)
		}
		r := recipe()
		for _, list := range []string{"ingredients", "steps", "tips", "sources"} {
			items := map[string]func(int) []any{"ingredients": ingredients, "steps": steps, "tips": tips, "sources": sources}[list](3)
			for i, p := range []int{7, 2, 5} {
				items[i].(map[string]any)["position"] = p
			}
			r[list] = items
		}
		th := w.getThread(t, w.thread(t, a, cat, withRecipe(r)))
		if th.Recipe.Ingredients[0].Position != 7 || th.Recipe.Steps[2].Position != 5 || th.Recipe.Sources[1].Position != 2 {
			t.Fatalf("positions not kept as sent: %+v", th.Recipe)
		}
	})
}

// Each ingredient has one quantity per serving count: two for the same count is 422, in any order
// the four are fine.
func TestRecipeQuantities(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		before := w.state(t)
		for _, at := range []int{0, 2} {
			r := recipe()
			r["ingredients"] = ingredients(3)
			q := item(r, "ingredients", at)["quantities"].([]any)
			q[3].(map[string]any)["servings"] = 1
			expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, withRecipe(r))), http.StatusUnprocessableEntity,
				"validation_failed", fmt.Sprintf("/recipe/ingredients/%d/quantities", at))
		}
		w.unchanged(t, before)
		r := recipe()
		q := item(r, "ingredients", 0)["quantities"].([]any)
		q[0], q[1], q[2], q[3] = q[3], q[2], q[1], q[0]
		w.thread(t, a, cat, withRecipe(r))
	})
}

// The source URLs of reliability.md scenarios 35-38 are refused with 422 at their pointer; nothing is
// written or charged.
func TestRecipeUnsafeURLs(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		before := w.state(t)
		for _, u := range []string{
			// 35
			"http://example.com/", "javascript:alert(1)", "https:example.com", "https:///x", "//example.com",
			// 36
			"https://user@example.com/", "https://good.com@127.0.0.1/", "https://example.com:8443/", "https://example.com:0443/",
			// 37
			"https://127.0.0.1/", "https://[::1]/", "https://[::ffff:127.0.0.1]/", "https://169.254.169.254/latest/meta-data/",
			"https://10.0.0.1/", "https://100.64.0.1/", "https://[fe80::1%25eth0]/", "https://2130706433/", "https://0x7f.1/",
			"https://0177.0.0.1/",
			// 38
			"https://localhost/", "https://foo.localhost/", "https://metadata.google.internal/", "https://intranet/",
			"https://example.com./",
		} {
			r := recipe()
			sources := sources(3)
			sources[1].(map[string]any)["url"] = u
			r["sources"] = sources
			res := w.post(t, a, forum.ThreadsPath, threadBody(cat, withRecipe(r)))
			if res.Status != http.StatusUnprocessableEntity {
				t.Errorf("%s: %d %s", u, res.Status, testkit.Short(res.Body))
				continue
			}
			expectAt(t, res, http.StatusUnprocessableEntity, "validation_failed", "/recipe/sources/1/url")
		}
		w.unchanged(t, before)
		if n := len(w.meter.Calls()); n != 0 {
			t.Fatalf("%d charges", n)
		}
	})
}

// The content policy covers every text of a recipe (400 content_policy_violation at its pointer);
// multi-line texts take newlines and tabs, one-line texts do not; emoji and CJK pass everywhere.
func TestRecipeContentPolicy(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		a := newAgent("cook-one")
		before := w.state(t)
		set := func(list string, i int, key, value string) func(map[string]any) {
			return func(r map[string]any) {
				if list == "" {
					r[key] = value
					return
				}
				item(r, list, i)[key] = value
			}
		}
		cases := []struct {
			pointer string
			mod     func(map[string]any)
		}{
			{"/recipe/ingredients/0/name", set("ingredients", 0, "name", "salt\x01")},
			{"/recipe/ingredients/0/name", set("ingredients", 0, "name", "salt\npepper")},
			{"/recipe/ingredients/0/name", set("ingredients", 0, "name", "salt\u202e")},
			{"/recipe/ingredients/0/note", set("ingredients", 0, "note", "bell\a")},
			{"/recipe/description", set("", 0, "description", "line\r\nbreak")},
			{"/recipe/description", set("", 0, "description", "escape \x1b[31m")},
			{"/recipe/country_or_region", set("", 0, "country_or_region", "two\nlines")},
			{"/recipe/recipe_cuisine", set("", 0, "recipe_cuisine", "tab\there")},
			{"/recipe/recipe_category", set("", 0, "recipe_category", "\u2066isolate")},
			{"/recipe/steps/0/instruction", set("steps", 0, "instruction", "del\x7f")},
			{"/recipe/steps/0/name", set("steps", 0, "name", "two\nlines")},
			{"/recipe/tips/0/text", set("tips", 0, "text", "c1 \u0085 control")},
			{"/recipe/sources/0/label", set("sources", 0, "label", "label\u2028separator")},
			{"/recipe/ingredients/0/quantities/2/display_text", func(r map[string]any) {
				item(r, "ingredients", 0)["quantities"].([]any)[2].(map[string]any)["display_text"] = "1\n2"
			}},
			{"/recipe/keywords/1", func(r map[string]any) { r["keywords"] = []any{"ok", "bad\x00"} }},
		}
		for _, c := range cases {
			r := recipe()
			r["tips"], r["sources"] = tips(1), sources(1)
			c.mod(r)
			expectAt(t, w.post(t, a, forum.ThreadsPath, threadBody(cat, withRecipe(r))), http.StatusBadRequest, "content_policy_violation", c.pointer)
		}
		w.unchanged(t, before)

		r := recipe()
		r["tips"], r["sources"], r["keywords"] = tips(1), sources(1), []any{"\u5bff\u53f8", "\U0001F363"}
		for _, m := range []func(map[string]any){
			set("ingredients", 0, "name", "\u5c71\u6912 \U0001F336\uFE0F"), set("ingredients", 0, "note", "line\nand\ttab"),
			set("", 0, "description", "\u0645\u0631\u062d\u0628\u0627 \u200f RTL mark"), set("steps", 0, "name", "\U0001F469\u200D\U0001F373 chef"),
			set("steps", 0, "instruction", "one\n\ttwo"), set("tips", 0, "text", "\u4e2d\u6587\n\u65e5\u672c\u8a9e"),
			set("sources", 0, "label", "\u00e9t\u00e9 \U0001F600"),
		} {
			m(r)
		}
		th := w.getThread(t, w.thread(t, a, cat, withRecipe(r)))
		if th.Recipe.Ingredients[0].Name != "\u5c71\u6912 \U0001F336\uFE0F" || th.Recipe.Keywords[1] != "\U0001F363" {
			t.Fatalf("recipe %+v", th.Recipe)
		}
	})
}
