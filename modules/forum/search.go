package forum

import (
	"database/sql"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

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
	Kind      string
	PostID    string
	ThreadID  string
	Title     string // the thread's, for a reply too
	Snippet   string
	CreatedAt time.Time
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
	rows, err := r.match(c, terms, limit+1, offset)
	if err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Query: q, Results: []SearchHit{}}
	for i, h := range rows {
		if i == limit {
			if offset+limit < maxResults {
				if out.NextCursor, err = seal(r.cursors, searchList(q), position{Score: int64(offset + limit)}); err != nil {
					return SearchResult{}, err
				}
			}
			break
		}
		hit := SearchHit{Kind: h.Kind, ThreadID: h.ThreadID, Snippet: h.Snippet, Trust: Untrusted, CreatedAt: h.CreatedAt.UTC()}
		if h.Kind == KindReply {
			id := h.PostID
			hit.ReplyID = &id
		}
		if h.Title != "" { // the thread's title; none once the thread is tombstoned
			title := h.Title
			hit.Title = &title
		}
		out.Results = append(out.Results, hit)
	}
	return out, nil
}

// match runs the search on the dialect's full-text index. Every term must appear (AND); terms are
// passed as data, never as query syntax.
//
// On PostgreSQL the results are the newest maxResults matches (all of them, when there are fewer),
// best first: each table yields its newest matches in primary-key order (ids are UUIDv7, so they sort
// by time), and only those are ranked, so that a search never ranks every match of a common word (650
// ms for a word in a sixth of a million posts). PostgreSQL finds a common word's newest matches walking
// back through the primary key, a rarer word's through the full-text index; titles and snippets are
// read for the page's rows only. (SQLite, whose deployments are small, ranks every match.)
func (r *Reads) match(c *gin.Context, terms []string, limit, offset int) ([]hitRow, error) {
	db := r.db.WithContext(c.Request.Context())
	var rows []hitRow
	var err error
	if db.Dialector.Name() == "postgres" {
		query := strings.Join(terms, " ")
		err = db.Transaction(func(tx *gorm.DB) error {
			// Planned for its words every time: how to find the newest matches depends on how common
			// they are, and a plan made once for any words (a prepared statement's generic plan, after
			// five runs) walks the primary key for a rare word, or reads every match of a common one.
			if err := tx.Exec("SET LOCAL plan_cache_mode = force_custom_plan").Error; err != nil {
				return err
			}
			return tx.Raw(`WITH newest AS (
  SELECT kind, post_id, thread_id, search FROM (
    SELECT 'thread' AS kind, id AS post_id, id AS thread_id, search FROM (
      SELECT id, search FROM forum_threads
      WHERE tombstoned_at IS NULL AND hidden_at IS NULL AND search @@ plainto_tsquery('simple', ?)
      ORDER BY id DESC LIMIT ?) t
    UNION ALL
    SELECT 'reply', id, thread_id, search FROM (
      SELECT id, thread_id, search FROM forum_replies
      WHERE tombstoned_at IS NULL AND hidden_at IS NULL AND search @@ plainto_tsquery('simple', ?)
      ORDER BY id DESC LIMIT ?) r
  ) m ORDER BY post_id DESC LIMIT ?
), page AS (
  SELECT kind, post_id, thread_id, ts_rank(search, plainto_tsquery('simple', ?)) AS rank FROM newest
  ORDER BY rank DESC, post_id DESC LIMIT ? OFFSET ?
)
SELECT page.kind, page.post_id, page.thread_id,
  CASE WHEN t.tombstoned_at IS NULL AND t.hidden_at IS NULL THEN t.title ELSE '' END AS title,
  left(CASE WHEN page.kind = 'reply' THEN r.body_markdown ELSE t.body_markdown END, 200) AS snippet,
  CASE WHEN page.kind = 'reply' THEN r.created_at ELSE t.created_at END AS created_at
FROM page
JOIN forum_threads t ON t.id = page.thread_id
LEFT JOIN forum_replies r ON page.kind = 'reply' AND r.id = page.post_id
ORDER BY page.rank DESC, page.post_id DESC`, query, maxResults, query, maxResults, maxResults, query, limit, offset).Scan(&rows).Error
		}, &sql.TxOptions{ReadOnly: true})
	} else {
		quoted := make([]string, len(terms))
		for i, t := range terms {
			quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
		}
		err = db.Raw(`SELECT s.kind, s.post_id, s.thread_id, CASE WHEN th.tombstoned_at IS NULL AND th.hidden_at IS NULL THEN th.title ELSE '' END AS title,
  snippet(forum_search, 4, '', '', '…', 24) AS snippet,
  t.created_at AS thread_created_at, rp.created_at AS reply_created_at
FROM forum_search s
LEFT JOIN forum_threads t ON s.kind = 'thread' AND t.id = s.post_id
LEFT JOIN forum_replies rp ON s.kind = 'reply' AND rp.id = s.post_id
JOIN forum_threads th ON th.id = s.thread_id
WHERE forum_search MATCH ? ORDER BY rank, s.post_id DESC LIMIT ? OFFSET ?`, strings.Join(quoted, " "), limit, offset).Scan(&rows).Error
	}
	if err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	for i := range rows {
		switch {
		case rows[i].ThreadCreatedAt != nil:
			rows[i].CreatedAt = *rows[i].ThreadCreatedAt
		case rows[i].ReplyCreatedAt != nil:
			rows[i].CreatedAt = *rows[i].ReplyCreatedAt
		}
	}
	return rows, nil
}
