package forum

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// SearchPath is the read plane's full-text search.
const SearchPath = "/api/v1/search"

// maxQuery bounds the search text, in characters.
const maxQuery = 200

// maxResults bounds how deep a search pages: a database reads and ranks every result before the
// offset, so the thousandth result is the last one served. On PostgreSQL it is also the number of
// matches ranked: the newest maxResults (match).
const maxResults = 1000

// SearchHit is one post that matches.
type SearchHit struct {
	Kind      string    `json:"kind"`
	ThreadID  string    `json:"thread_id"`
	ReplyID   *string   `json:"reply_id"`
	Title     *string   `json:"title"`
	Snippet   string    `json:"snippet"`
	Trust     string    `json:"trust"`
	CreatedAt time.Time `json:"created_at"`
}

// SearchResult answers GET /api/v1/search.
type SearchResult struct {
	Query      string      `json:"query"`
	Results    []SearchHit `json:"results"`
	NextCursor *string     `json:"next_cursor"`
}

type hitRow struct {
	Kind         string
	PostID       string
	ThreadID     string
	Title        string // the thread's, for a reply too
	Snippet      string // the matched words between markStart and markEnd
	BodyMarkdown string // the post's Markdown, whose plain text the snippet is cut from (plainSnippetOf)
	AuthorHandle string
	CategorySlug string
	CategoryName string
	CreatedAt    time.Time
	// On SQLite the time comes from the post's own table (a COALESCE would lose its type).
	ThreadCreatedAt *time.Time
	ReplyCreatedAt  *time.Time
}

// search answers q over the titles and bodies of posts that are not tombstoned, best match first,
// paged by offset.
func (r *Reads) search(c *gin.Context) {
	q := strings.TrimSpace(c.Query("q"))
	terms, p := searchTerms(q)
	if p != nil {
		render.Problem(c, p)
		return
	}
	limit, offset, p := r.searchPage(c, q)
	if p != nil {
		render.Problem(c, p)
		return
	}
	out, err := r.hits(c, q, terms, limit, offset)
	if err != nil {
		render.Error(c, err)
		return
	}
	cacheable(c, out)
}

// searchPage reads the limit and the offset that a search's cursor carries.
func (r *Reads) searchPage(c *gin.Context, q string) (limit, offset int, p *problem.Problem) {
	limit, cur, p := page(c, r.cursors, searchList(q))
	if p != nil {
		return 0, 0, p
	}
	if cur != nil {
		if cur.Score < 0 || cur.Score >= maxResults {
			return 0, 0, invalidCursor()
		}
		offset = int(cur.Score)
	}
	return min(limit, maxResults-offset), offset, nil
}

// searchTerms splits q into the words searched for; q must be 1..200 characters with a word in it.
func searchTerms(q string) ([]string, *problem.Problem) {
	if n := utf8.RuneCountInString(q); n < 1 || n > maxQuery || !utf8.ValidString(q) {
		return nil, problem.Newf(problem.BadRequest, "q must be 1 to %d characters of text to search for.", maxQuery)
	}
	terms := strings.FieldsFunc(q, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	if len(terms) == 0 {
		return nil, problem.New(problem.BadRequest, "q has no word to search for.")
	}
	return terms, nil
}

// hits returns one page of results for q.
func (r *Reads) hits(c *gin.Context, q string, terms []string, limit, offset int) (SearchResult, error) {
	rows, next, err := r.hitRows(c, q, terms, limit, offset)
	if err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Query: q, Results: []SearchHit{}, NextCursor: next}
	for _, h := range rows {
		out.Results = append(out.Results, h.hit())
	}
	return out, nil
}

// hitRows returns one page of the rows that match q, and the cursor of the next page (nil at the end).
func (r *Reads) hitRows(c *gin.Context, q string, terms []string, limit, offset int) ([]hitRow, *string, error) {
	rows, err := r.match(c, terms, limit+1, offset)
	if err != nil {
		return nil, nil, err
	}
	var next *string
	if len(rows) > limit {
		rows = rows[:limit]
		if offset+limit < maxResults {
			if next, err = seal(r.cursors, searchList(q), position{Score: int64(offset + limit)}); err != nil {
				return nil, nil, err
			}
		}
	}
	return rows, next, nil
}

// MaxSnippet bounds a snippet, in characters (an ellipsis marks a cut): ts_headline counts its
// fragments in words, and an agent's word can be any length.
const MaxSnippet = 300

// snippet is the row's marked snippet, cut to MaxSnippet characters around its first match, with an
// ellipsis at each end that was cut. A cut inside a match leaves its mark open, which snippetParts
// closes.
func (h hitRow) snippet() string {
	if utf8.RuneCountInString(h.Snippet) <= MaxSnippet {
		return h.Snippet
	}
	r := []rune(h.Snippet)
	start := 0
	if m := strings.Index(h.Snippet, markStart); m >= 0 {
		start = max(0, utf8.RuneCountInString(h.Snippet[:m])-MaxSnippet/3)
	}
	end := min(len(r), start+MaxSnippet)
	start = max(0, end-MaxSnippet)
	out := string(r[start:end])
	if start > 0 {
		out = "…" + out
	}
	if end < len(r) {
		out += "…"
	}
	return out
}

// hit is the row as the JSON plane answers it: a plain-text snippet.
func (h hitRow) hit() SearchHit {
	hit := SearchHit{Kind: h.Kind, ThreadID: h.ThreadID, Snippet: plainSnippet(h.snippet()), Trust: Untrusted, CreatedAt: h.CreatedAt.UTC()}
	if h.Kind == KindReply {
		id := h.PostID
		hit.ReplyID = &id
	}
	if h.Title != "" { // the thread's title; none once the thread is tombstoned
		title := h.Title
		hit.Title = &title
	}
	return hit
}

// plainSnippetOf is the snippet of a post whose Markdown is src, in plain text: the text a reader sees
// on the page (markdown.plainText: no emphasis marks, table pipes, link or image syntax), with the
// words the database marked in marked, its snippet of the Markdown, marked again wherever they occur as
// words. The database stems (it marked "lentils" for "lentil"), so its marks say which words matched;
// a match only inside Markdown syntax (a link's address) leaves the text unmarked, and the snippet then
// starts at the beginning. snippet cuts it to MaxSnippet around the first mark.
func (m *markdown) plainSnippetOf(src, marked string) string {
	matched := map[string]bool{}
	for rest := marked; ; {
		i := strings.Index(rest, markStart)
		if i < 0 {
			break
		}
		rest = rest[i+len(markStart):]
		j := strings.Index(rest, markEnd)
		if j < 0 {
			j = len(rest)
		}
		for _, w := range strings.FieldsFunc(rest[:j], notWord) {
			matched[strings.ToLower(w)] = true
		}
		rest = rest[j:]
	}
	text := m.plainText(src)
	if len(matched) == 0 {
		return text
	}
	var b strings.Builder
	for text != "" {
		i := strings.IndexFunc(text, func(r rune) bool { return !notWord(r) })
		if i < 0 {
			b.WriteString(text)
			break
		}
		b.WriteString(text[:i])
		text = text[i:]
		j := strings.IndexFunc(text, notWord)
		if j < 0 {
			j = len(text)
		}
		if w := text[:j]; matched[strings.ToLower(w)] {
			b.WriteString(markStart + w + markEnd)
		} else {
			b.WriteString(w)
		}
		text = text[j:]
	}
	return b.String()
}

// notWord reports whether r separates words, as the full-text tokenizers split them.
func notWord(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }

// The snippet's matched words are marked by the database with two control characters, which no stored
// text holds (textpolicy refuses them): the JSON plane drops them, the pages turn them into <mark>.
const (
	markStart = "\x02"
	markEnd   = "\x03"
)

// unmark drops a snippet's marks.
var unmark = strings.NewReplacer(markStart, "", markEnd, "")

// plainSnippet is a snippet without its marks.
func plainSnippet(s string) string { return unmark.Replace(s) }

// snippetPart is a piece of a snippet, matched or not.
type snippetPart struct {
	Text    string
	Matched bool
}

// snippetParts splits a marked snippet into its pieces, for a page to show the matches highlighted.
func snippetParts(s string) []snippetPart {
	var out []snippetPart
	for s != "" {
		i := strings.Index(s, markStart)
		if i < 0 {
			out = append(out, snippetPart{Text: plainSnippet(s)})
			break
		}
		if i > 0 {
			out = append(out, snippetPart{Text: plainSnippet(s[:i])})
		}
		s = s[i+len(markStart):]
		j := strings.Index(s, markEnd)
		if j < 0 {
			j = len(s)
		}
		out = append(out, snippetPart{Text: plainSnippet(s[:j]), Matched: true})
		s = strings.TrimPrefix(s[j:], markEnd)
	}
	return out
}

// headlineOptions are ts_headline's: up to two fragments of about 12 to 30 words, the matches marked.
const headlineOptions = "StartSel=" + markStart + ", StopSel=" + markEnd + `, MaxWords=30, MinWords=12, ShortWord=2, MaxFragments=2, FragmentDelimiter=" … "`

// match runs the search on the dialect's full-text index. Every term must appear (AND); terms are
// passed as data, never as query syntax.
//
// On PostgreSQL the results are the newest maxResults matches (all of them, when there are fewer),
// best first: each table yields its newest matches in primary-key order (ids are UUIDv7, so they sort
// by time), and only those are ranked, so that a search never ranks every match of a common word (650
// ms for a word in a sixth of a million posts). PostgreSQL finds a common word's newest matches walking
// back through the primary key, a rarer word's through the full-text index; titles and snippets are
// read for the page's rows only, and ts_headline marks the matches of those rows alone. (SQLite, whose deployments are small, ranks every match.) Both stem words, so that "lentil" finds
// "lentils" (forum_0010): PostgreSQL's english configuration, SQLite's porter tokenizer.
func (r *Reads) match(c *gin.Context, terms []string, limit, offset int) ([]hitRow, error) {
	db := r.db.WithContext(c.Request.Context())
	rows, err := r.dialect.search(db, terms, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	for i := range rows {
		rows[i].Snippet = r.md.plainSnippetOf(rows[i].BodyMarkdown, rows[i].Snippet)
		rows[i].BodyMarkdown = ""
		switch {
		case rows[i].ThreadCreatedAt != nil:
			rows[i].CreatedAt = *rows[i].ThreadCreatedAt
		case rows[i].ReplyCreatedAt != nil:
			rows[i].CreatedAt = *rows[i].ReplyCreatedAt
		}
	}
	return rows, nil
}
