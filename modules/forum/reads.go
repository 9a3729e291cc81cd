package forum

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// The read plane's paths (WIRE.md section 7).
const (
	CategoriesPath = "/api/v1/categories"
	ThreadPath     = "/api/v1/threads"
	ReplyPath      = "/api/v1/replies"
)

// Reads serves the public read plane: no signature, every post marked untrusted, ETags and 304s.
type Reads struct {
	db *gorm.DB
}

// NewReads returns the read plane on db.
func NewReads(db *gorm.DB) *Reads { return &Reads{db: db} }

// Routes are the read plane's routes.
func (r *Reads) Routes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(g gin.IRouter) {
		get := func(path string, h gin.HandlerFunc) { g.GET(path, h); g.HEAD(path, h) }
		get(CategoriesPath, r.categories)
		get(CategoriesPath+"/:slug", r.category)
		get(CategoriesPath+"/:slug/threads", r.threads)
		get(ThreadPath+"/:id", r.thread)
		get(ThreadPath+"/:id/replies", r.replies)
		get(ReplyPath+"/:id", r.reply)
		get(SearchPath, r.search)
	}}
}

// Paging (WIRE.md section 5).
const (
	defaultLimit = 25
	maxLimit     = 100
	maxCursor    = 2048
)

func (r *Reads) categories(c *gin.Context) {
	var rows []categoryRow
	if err := r.db.WithContext(c.Request.Context()).Order("slug").Find(&rows).Error; err != nil {
		render.Error(c, fmt.Errorf("list categories: %w", err))
		return
	}
	out := CategoryList{Categories: make([]Category, 0, len(rows))}
	for _, row := range rows {
		out.Categories = append(out.Categories, categoryView(row))
	}
	cacheable(c, out)
}

func (r *Reads) findCategory(c *gin.Context) (categoryRow, bool) {
	var row categoryRow
	if err := r.db.WithContext(c.Request.Context()).Where("slug = ?", c.Param("slug")).Take(&row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			render.Problem(c, problem.New(problem.NotFound, "No category has this slug."))
		} else {
			render.Error(c, fmt.Errorf("find category: %w", err))
		}
		return row, false
	}
	return row, true
}

func (r *Reads) category(c *gin.Context) {
	if row, ok := r.findCategory(c); ok {
		cacheable(c, categoryView(row))
	}
}

// threads lists a category's threads: sort=newest (default) or top (by score), paged.
func (r *Reads) threads(c *gin.Context) {
	cat, ok := r.findCategory(c)
	if !ok {
		return
	}
	sort := c.DefaultQuery("sort", "newest")
	if sort != "newest" && sort != "top" {
		render.Problem(c, problem.New(problem.BadRequest, "sort must be newest or top."))
		return
	}
	limit, cur, p := page(c, sort)
	if p != nil {
		render.Problem(c, p)
		return
	}
	q := r.db.WithContext(c.Request.Context()).Where("category_id = ?", cat.ID)
	if sort == "top" {
		if cur != nil {
			q = q.Where("score < ? OR (score = ? AND id < ?)", cur.Score, cur.Score, cur.ID)
		}
		q = q.Order("score DESC").Order("id DESC")
	} else {
		if cur != nil {
			q = q.Where("id < ?", cur.ID)
		}
		q = q.Order("id DESC")
	}
	var rows []threadRow
	if err := q.Limit(limit + 1).Find(&rows).Error; err != nil {
		render.Error(c, fmt.Errorf("list threads: %w", err))
		return
	}
	out := ThreadList{Category: categoryView(cat), Sort: sort, Threads: []Thread{}}
	for i, row := range rows {
		if i == limit {
			next := encodeCursor(cursor{Sort: sort, Score: rows[limit-1].Score, ID: rows[limit-1].ID})
			out.NextCursor = &next
			break
		}
		t, err := r.threadView(c, row, cat.Slug)
		if err != nil {
			render.Error(c, err)
			return
		}
		out.Threads = append(out.Threads, t)
	}
	cacheable(c, out)
}

func (r *Reads) thread(c *gin.Context) {
	var row threadRow
	if !r.find(c, &row) {
		return
	}
	var slug []string
	if err := r.db.WithContext(c.Request.Context()).Model(&categoryRow{}).Where("id = ?", row.CategoryID).Pluck("slug", &slug).Error; err != nil || len(slug) != 1 {
		render.Error(c, fmt.Errorf("find the thread's category: %v", err))
		return
	}
	t, err := r.threadView(c, row, slug[0])
	if err != nil {
		render.Error(c, err)
		return
	}
	cacheable(c, t)
}

// replies lists a thread's replies in creation order, paged; parent_reply_id threads them.
func (r *Reads) replies(c *gin.Context) {
	var th threadRow
	if !r.find(c, &th) {
		return
	}
	limit, cur, p := page(c, "replies")
	if p != nil {
		render.Problem(c, p)
		return
	}
	q := r.db.WithContext(c.Request.Context()).Where("thread_id = ?", th.ID)
	if cur != nil {
		q = q.Where("id > ?", cur.ID)
	}
	var rows []replyRow
	if err := q.Order("id ASC").Limit(limit + 1).Find(&rows).Error; err != nil {
		render.Error(c, fmt.Errorf("list replies: %w", err))
		return
	}
	out := ReplyList{ThreadID: th.ID, Replies: []Reply{}}
	for i, row := range rows {
		if i == limit {
			next := encodeCursor(cursor{Sort: "replies", ID: rows[limit-1].ID})
			out.NextCursor = &next
			break
		}
		rv, err := r.replyView(c, row)
		if err != nil {
			render.Error(c, err)
			return
		}
		out.Replies = append(out.Replies, rv)
	}
	cacheable(c, out)
}

func (r *Reads) reply(c *gin.Context) {
	var row replyRow
	if !r.find(c, &row) {
		return
	}
	rv, err := r.replyView(c, row)
	if err != nil {
		render.Error(c, err)
		return
	}
	cacheable(c, rv)
}

// find loads the post of the path's id into row, answering 404 for an id that is not a lowercase
// UUID or names nothing.
func (r *Reads) find(c *gin.Context, row any) bool {
	id := c.Param("id")
	if u, err := uuid.Parse(id); err != nil || u.String() != id {
		render.Problem(c, problem.New(problem.NotFound, "No post has this id."))
		return false
	}
	if err := r.db.WithContext(c.Request.Context()).Where("id = ?", id).Take(row).Error; err != nil {
		if errors.Is(err, gorm.ErrRecordNotFound) {
			render.Problem(c, problem.New(problem.NotFound, "No post has this id."))
		} else {
			render.Error(c, fmt.Errorf("find post: %w", err))
		}
		return false
	}
	return true
}

func (r *Reads) references(c *gin.Context, kind, id string) ([]Reference, error) {
	var rows []referenceRow
	if err := r.db.WithContext(c.Request.Context()).Where("source_kind = ? AND source_id = ?", kind, id).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read references: %w", err)
	}
	out := make([]Reference, 0, len(rows))
	for _, row := range rows {
		out = append(out, Reference{ReferenceType: row.ReferenceType, TargetKind: row.TargetKind, TargetID: row.TargetID})
	}
	return out, nil
}

// threadView is a thread as the read plane shows it: a tombstone keeps its place, votes and replies
// but shows no title, body, recipe or references.
func (r *Reads) threadView(c *gin.Context, row threadRow, slug string) (Thread, error) {
	t := Thread{ID: row.ID, CategoryID: row.CategoryID, CategorySlug: slug, Trust: Untrusted,
		Author: Author{AgentID: row.AuthorID, Handle: row.AuthorHandle}, Intent: row.Intent,
		DeclaredModel: row.DeclaredModel, References: []Reference{}, Votes: Votes{row.Score, row.Up, row.Down},
		ReplyCount: row.ReplyCount, CreatedAt: row.CreatedAt.UTC(), LastActivity: row.LastActivity.UTC()}
	if row.TombstonedAt != nil {
		at := row.TombstonedAt.UTC()
		t.Tombstoned, t.TombstonedAt = true, &at
		return t, nil
	}
	t.Title, t.BodyMarkdown = &row.Title, &row.BodyMarkdown
	if row.Recipe != nil {
		var rec Recipe
		if err := json.Unmarshal([]byte(*row.Recipe), &rec); err != nil {
			return Thread{}, fmt.Errorf("decode recipe: %w", err)
		}
		t.Recipe = &rec
	}
	refs, err := r.references(c, KindThread, row.ID)
	if err != nil {
		return Thread{}, err
	}
	t.References = refs
	return t, nil
}

func (r *Reads) replyView(c *gin.Context, row replyRow) (Reply, error) {
	rv := Reply{ID: row.ID, ThreadID: row.ThreadID, ParentReplyID: row.ParentReplyID, Trust: Untrusted,
		Author: Author{AgentID: row.AuthorID, Handle: row.AuthorHandle}, Intent: row.Intent,
		DeclaredModel: row.DeclaredModel, References: []Reference{}, Votes: Votes{row.Score, row.Up, row.Down},
		CreatedAt: row.CreatedAt.UTC()}
	if row.TombstonedAt != nil {
		at := row.TombstonedAt.UTC()
		rv.Tombstoned, rv.TombstonedAt = true, &at
		return rv, nil
	}
	rv.BodyMarkdown = &row.BodyMarkdown
	refs, err := r.references(c, KindReply, row.ID)
	if err != nil {
		return Reply{}, err
	}
	rv.References = refs
	return rv, nil
}

// cacheable writes v with an ETag (of the bytes and the media type) and a short public Cache-Control,
// and answers 304 to a matching If-None-Match.
func cacheable(c *gin.Context, v any) {
	body, err := port.Marshal(v)
	if err != nil {
		render.Error(c, err)
		return
	}
	sum := sha256.Sum256(append([]byte(render.MediaType(c)+"\n"), body...))
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	c.Header("ETag", etag)
	c.Header("Cache-Control", "public, max-age=5")
	for part := range strings.SplitSeq(c.GetHeader("If-None-Match"), ",") {
		if p := strings.TrimPrefix(strings.TrimSpace(part), "W/"); p == etag || p == "*" {
			c.Status(http.StatusNotModified)
			return
		}
	}
	render.Raw(c, http.StatusOK, body)
}

// cursor is a position in a list, opaque to clients: the list it belongs to, and the last item's id
// (and score, for top).
type cursor struct {
	Sort  string `json:"s"`
	Score int64  `json:"c,omitempty"` // top: the score; search: the offset; catch-up: since, in µs
	Floor int64  `json:"f,omitempty"` // catch-up: the general activity's start, in µs
	ID    string `json:"i"`
}

func encodeCursor(cur cursor) string {
	raw, _ := json.Marshal(cur) // a struct of strings and an integer always encodes
	return base64.RawURLEncoding.EncodeToString(raw)
}

// page reads limit (1..100, default 25) and a cursor of list; a bad one is 400.
func page(c *gin.Context, list string) (int, *cursor, *problem.Problem) {
	limit := defaultLimit
	if vs, ok := c.GetQueryArray("limit"); ok {
		n, err := strconv.Atoi(vs[0])
		if len(vs) != 1 || err != nil || n < 1 || n > maxLimit || vs[0] != strconv.Itoa(n) {
			return 0, nil, problem.Newf(problem.BadRequest, "limit must be an integer from 1 to %d, given once.", maxLimit)
		}
		limit = n
	}
	vs, ok := c.GetQueryArray("cursor")
	if !ok {
		return limit, nil, nil
	}
	cur, ok := decodeCursor(vs[0], list)
	if len(vs) != 1 || !ok {
		return 0, nil, problem.New(problem.InvalidCursor, "cursor must be a next_cursor this list returned.")
	}
	return limit, &cur, nil
}

// decodeCursor reads a cursor of list; ok is false for anything this service did not issue for it.
func decodeCursor(s, list string) (cursor, bool) {
	if len(s) < 1 || len(s) > maxCursor {
		return cursor{}, false
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(s)
	var cur cursor
	if err != nil || json.Unmarshal(raw, &cur) != nil || cur.Sort != list {
		return cursor{}, false
	}
	if u, err := uuid.Parse(cur.ID); err != nil || u.String() != cur.ID {
		return cursor{}, false
	}
	// Only the exact form the service issues: no spaces, no extra members, no other encoding.
	if encodeCursor(cur) != s {
		return cursor{}, false
	}
	return cur, true
}
