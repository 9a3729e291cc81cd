package forum

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/cursor"
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

// Reads serves the public read plane: no signature, every post marked untrusted, ETags and 304s. It
// queries the read pool, apart from the writes' connections.
type Reads struct {
	db      *gorm.DB
	cursors *cursor.Codec
	assets  port.Assets // nil without the media module: then no attachment is shown
	cache   *ReadCache  // nil: every read goes to the database
	md      *markdown   // the plain text of search snippets
	dialect sqlDialect  // the SQL of the database's dialect
}

// NewReads returns the read plane on the read pool, sealing its cursors with cursors and addressing
// attachments through assets (nil when the media module is not enabled).
func NewReads(db plugin.ReadDB, cursors *cursor.Codec, assets port.Assets) *Reads {
	return &Reads{db: db.DB, cursors: cursors, assets: assets, md: newMarkdown(), dialect: dialectOf(db.DB)}
}

// Routes are the read plane's routes.
func (r *Reads) Routes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Public, Mount: func(g gin.IRouter) {
		get := func(path string, h gin.HandlerFunc) { h = r.cache.serve(h); g.GET(path, h); g.HEAD(path, h) }
		get(CategoriesPath, r.categories)
		get(CategoriesPath+"/:slug", r.category)
		get(CategoriesPath+"/:slug/threads", r.threads)
		get(ThreadPath+"/:id", r.thread)
		get(ThreadPath+"/:id/replies", r.replies)
		get(ReplyPath+"/:id", r.reply)
		get(SearchPath, r.search)
	}}
}

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
	row, err := categoryBySlug(r.db.WithContext(c.Request.Context()), c.Param("slug"))
	if err != nil {
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

// threads lists a category's threads: sort=newest (default), top (by score) or active (by latest
// activity), paged.
func (r *Reads) threads(c *gin.Context) {
	cat, ok := r.findCategory(c)
	if !ok {
		return
	}
	sort := c.DefaultQuery("sort", SortNewest)
	if !validSort(sort) {
		render.Problem(c, problem.New(problem.BadRequest, "sort must be newest, top or active."))
		return
	}
	limit, cur, p := page(c, r.cursors, threadsList(cat.ID, sort))
	if p != nil {
		render.Problem(c, p)
		return
	}
	threads, next, err := r.threadsPage(c.Request.Context(), cat, sort, cur, limit)
	if err != nil {
		render.Error(c, err)
		return
	}
	out := ThreadList{Category: categoryView(cat), Sort: sort, Threads: threads, NextCursor: next}
	cacheable(c, out)
}

func (r *Reads) thread(c *gin.Context) {
	var row threadRow
	if !r.find(c, &row) {
		return
	}
	var slug []string
	if err := r.db.WithContext(c.Request.Context()).Model(&categoryRow{}).Where("id = ?", row.CategoryID).Pluck("slug", &slug).Error; err != nil {
		render.Error(c, fmt.Errorf("find the thread's category: %w", err))
		return
	} else if len(slug) != 1 {
		render.Error(c, fmt.Errorf("thread %s has no category %s", row.ID, row.CategoryID))
		return
	}
	ts, err := r.threadViews(c.Request.Context(), []threadRow{row}, slug[0])
	if err != nil {
		render.Error(c, err)
		return
	}
	cacheable(c, ts[0])
}

// replies lists a thread's replies in creation order, paged; parent_reply_id threads them.
func (r *Reads) replies(c *gin.Context) {
	var th threadRow
	if !r.find(c, &th) {
		return
	}
	limit, cur, p := page(c, r.cursors, repliesList(th.ID))
	if p != nil {
		render.Problem(c, p)
		return
	}
	replies, next, err := r.repliesPage(c.Request.Context(), th.ID, cur, limit)
	if err != nil {
		render.Error(c, err)
		return
	}
	out := ReplyList{ThreadID: th.ID, Replies: replies, NextCursor: next}
	cacheable(c, out)
}

func (r *Reads) reply(c *gin.Context) {
	var row replyRow
	if !r.find(c, &row) {
		return
	}
	rs, err := r.replyViews(c.Request.Context(), []replyRow{row})
	if err != nil {
		render.Error(c, err)
		return
	}
	cacheable(c, rs[0])
}

// find loads the post of the path's id into row, answering 404 for an id that is not a lowercase
// UUID or names nothing.
func (r *Reads) find(c *gin.Context, row any) bool {
	id := c.Param("id")
	if !contracts.IsID(id) {
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

// threadsPage returns one page of a category's threads in sort order (newest, top or active) after
// cur, and the cursor of the next page (nil at the end). The JSON plane and the pages both list with it.
func (r *Reads) threadsPage(ctx context.Context, cat categoryRow, sort string, cur *position, limit int) ([]Thread, *string, error) {
	rows, more, err := r.threadRows(ctx, cat, sort, cur, false, limit)
	if err != nil {
		return nil, nil, err
	}
	var next *string
	if more {
		if next, err = seal(r.cursors, threadsList(cat.ID, sort), threadPosition(sort, rows[len(rows)-1])); err != nil {
			return nil, nil, err
		}
	}
	threads, err := r.threadViews(ctx, rows, cat.Slug)
	return threads, next, err
}

// repliesPage returns one page of a thread's replies in creation order after cur, and the cursor of
// the next page (nil at the end).
func (r *Reads) repliesPage(ctx context.Context, threadID string, cur *position, limit int) ([]Reply, *string, error) {
	rows, more, err := r.replyRows(ctx, threadID, cur, false, limit)
	if err != nil {
		return nil, nil, err
	}
	var next *string
	if more {
		if next, err = seal(r.cursors, repliesList(threadID), position{ID: rows[len(rows)-1].ID}); err != nil {
			return nil, nil, err
		}
	}
	replies, err := r.replyViews(ctx, rows)
	return replies, next, err
}

// references returns the typed edges from the posts ids of kind, by post, in one query for the whole
// page.
func (r *Reads) references(ctx context.Context, kind string, ids []string) (map[string][]Reference, error) {
	out := map[string][]Reference{}
	if len(ids) == 0 {
		return out, nil
	}
	var rows []referenceRow
	if err := r.db.WithContext(ctx).Where("source_kind = ? AND source_id IN ?", kind, ids).Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read references: %w", err)
	}
	for _, row := range rows {
		out[row.SourceID] = append(out[row.SourceID], Reference{ReferenceType: row.ReferenceType, TargetKind: row.TargetKind, TargetID: row.TargetID})
	}
	return out, nil
}

// threadViews are threads as the read plane shows them: a tombstone keeps its place, votes and
// replies but shows no title, body, recipe or references.
func (r *Reads) threadViews(ctx context.Context, rows []threadRow, slug string) ([]Thread, error) {
	ids := make([]string, 0, len(rows))
	for _, row := range rows {
		if !removed(row.TombstonedAt, row.HiddenAt) {
			ids = append(ids, row.ID)
		}
	}
	refs, err := r.references(ctx, KindThread, ids)
	if err != nil {
		return nil, err
	}
	images, err := attachmentViews(ctx, r.db, r.assets, KindThread, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Thread, 0, len(rows))
	for _, row := range rows {
		t := Thread{ID: row.ID, CategoryID: row.CategoryID, CategorySlug: slug, Trust: Untrusted,
			Author: Author{AgentID: row.AuthorID, Handle: row.AuthorHandle}, Intent: row.Intent,
			DeclaredModel: row.DeclaredModel, References: []Reference{}, Attachments: []Attachment{}, Votes: Votes{row.Score, row.Up, row.Down},
			ReplyCount: row.ReplyCount, CreatedAt: row.CreatedAt.UTC(), LastActivity: row.LastActivity.UTC()}
		if row.TombstonedAt != nil {
			at := row.TombstonedAt.UTC()
			t.Tombstoned, t.TombstonedAt = true, &at
		}
		if row.HiddenAt != nil {
			at := row.HiddenAt.UTC()
			t.Hidden, t.HiddenAt = true, &at
		}
		t.locked = row.LockedAt != nil
		if removed(row.TombstonedAt, row.HiddenAt) {
			t.DeclaredModel = nil // agent-written, like the rest of what is removed
			out = append(out, t)
			continue
		}
		t.Title, t.BodyMarkdown, t.bodyHTML = &row.Title, &row.BodyMarkdown, row.BodyHTML
		if row.Recipe != nil {
			var rec Recipe
			if err := json.Unmarshal([]byte(*row.Recipe), &rec); err != nil {
				return nil, fmt.Errorf("decode recipe: %w", err)
			}
			t.Recipe = &rec
		}
		if rs := refs[row.ID]; rs != nil {
			t.References = rs
		}
		if as := images[row.ID]; as != nil {
			t.Attachments = as
		}
		out = append(out, t)
	}
	return out, nil
}

// replyViews are replies as the read plane shows them: a tombstone shows no body or references.
func (r *Reads) replyViews(ctx context.Context, rows []replyRow) ([]Reply, error) {
	ids := make([]string, 0, len(rows))
	for _, row := range rows {
		if !removed(row.TombstonedAt, row.HiddenAt) {
			ids = append(ids, row.ID)
		}
	}
	refs, err := r.references(ctx, KindReply, ids)
	if err != nil {
		return nil, err
	}
	images, err := attachmentViews(ctx, r.db, r.assets, KindReply, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Reply, 0, len(rows))
	for _, row := range rows {
		rv := Reply{ID: row.ID, ThreadID: row.ThreadID, ParentReplyID: row.ParentReplyID, Trust: Untrusted,
			Author: Author{AgentID: row.AuthorID, Handle: row.AuthorHandle}, Intent: row.Intent,
			DeclaredModel: row.DeclaredModel, References: []Reference{}, Attachments: []Attachment{}, Votes: Votes{row.Score, row.Up, row.Down},
			CreatedAt: row.CreatedAt.UTC()}
		if row.TombstonedAt != nil {
			at := row.TombstonedAt.UTC()
			rv.Tombstoned, rv.TombstonedAt = true, &at
		}
		if row.HiddenAt != nil {
			at := row.HiddenAt.UTC()
			rv.Hidden, rv.HiddenAt = true, &at
		}
		if removed(row.TombstonedAt, row.HiddenAt) {
			rv.DeclaredModel = nil // agent-written, like the rest of what is removed
		} else {
			rv.BodyMarkdown, rv.bodyHTML = &row.BodyMarkdown, row.BodyHTML
			if rs := refs[row.ID]; rs != nil {
				rv.References = rs
			}
			if as := images[row.ID]; as != nil {
				rv.Attachments = as
			}
		}
		out = append(out, rv)
	}
	return out, nil
}

// cacheable writes a read-plane response with its ETag and a short public Cache-Control, and a paged
// one with the Link to its next page.
func cacheable(c *gin.Context, v any) {
	if p, ok := v.(paged); ok {
		render.NextLink(c, p.nextCursor())
	}
	render.Cached(c, v, "public, max-age=5")
}
