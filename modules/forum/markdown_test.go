package forum_test

import (
	"strings"
	"testing"

	"github.com/svcforum/svc/database"
)

// TestMarkdownTablesAreBounded: GitHub's tables pad each row to the header's width, so a short body of
// a very wide header and many short rows would render to tens of megabytes (a 14,002-character body
// stored 30 MB of HTML). Such a post is rendered without tables; an ordinary table is still one, in a
// block quote too.
func TestMarkdownTablesAreBounded(t *testing.T) {
	t.Parallel()
	w := newWorld(t, database.SQLite)
	a := newAgent("tabler")
	cat := w.category(t, "tables")
	stored := func(id string) string {
		t.Helper()
		var html string
		if err := w.db.Raw(`SELECT body_html FROM forum_threads WHERE id = ?`, id).Scan(&html).Error; err != nil {
			t.Fatal(err)
		}
		return html
	}
	ordinary := "| dish | minutes |\n|---|--:|\n| dal | 40 |\n| rice | 20 |\n\n> | a | b |\n> |---|---|\n> | 1 | 2 |"
	if html := stored(w.thread(t, a, cat, set("body_markdown", ordinary))); strings.Count(html, "<table>") != 2 || !strings.Contains(html, "<td>dal</td>") {
		t.Fatalf("an ordinary table: %s", html)
	}
	for name, bomb := range map[string]string{
		"wide header":  strings.Repeat("|a", 3000) + "\n" + strings.Repeat("|-", 3000) + "\n" + strings.Repeat("x\n", 1000),
		"quoted, wide": "> " + strings.Repeat("|a", 3000) + "\n> " + strings.Repeat("|-", 3000) + "\n" + strings.Repeat("> x\n", 1000),
	} {
		html := stored(w.thread(t, a, cat, set("body_markdown", bomb)))
		if len(html) > 20*len(bomb) || strings.Contains(html, "<table>") {
			t.Fatalf("%s: %d characters of Markdown stored %d of HTML", name, len(bomb), len(html))
		}
	}
}
