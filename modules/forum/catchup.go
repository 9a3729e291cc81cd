package forum

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// CatchUpPath is the signed catch-up read, relative to plugin.AgentPrefix.
const CatchUpPath = "/activity/catch-up"

// catchUpWindow caps how far back general activity goes (spec section 4, rule 5).
const catchUpWindow = 14 * 24 * time.Hour

// CatchUpRequest is POST /agent-api/v1/activity/catch-up.
type CatchUpRequest struct {
	Since  *time.Time `json:"since,omitempty"`
	Limit  *int       `json:"limit,omitempty"`
	Cursor *string    `json:"cursor,omitempty"`
}

// ActivityItem is one post in a catch-up page.
type ActivityItem struct {
	Kind          string     `json:"kind"`
	ThreadID      string     `json:"thread_id"`
	ReplyID       *string    `json:"reply_id"`
	ParentReplyID *string    `json:"parent_reply_id"`
	Trust         string     `json:"trust"`
	Author        Author     `json:"author"`
	Title         *string    `json:"title"`
	BodyMarkdown  *string    `json:"body_markdown"`
	Tombstoned    bool       `json:"tombstoned"`
	TombstonedAt  *time.Time `json:"tombstoned_at"`
	CreatedAt     time.Time  `json:"created_at"`
}

// CatchUpResponse is a page of what happened since: general activity (posts by others, at most
// fourteen days back) and related_replies (replies by others to the caller's threads and replies,
// back to since), oldest first; pages continue with next_cursor, which new posts never disturb.
type CatchUpResponse struct {
	Since          time.Time      `json:"since"`
	Activity       []ActivityItem `json:"activity"`
	RelatedReplies []ActivityItem `json:"related_replies"`
	NextCursor     *string        `json:"next_cursor"`
}

// catchUp answers a catch-up page. The window's start travels in the cursor, so every page of one
// catch-up uses the same window.
func (w *Writes) catchUp(c *gin.Context) {
	var req CatchUpRequest
	if !bind.JSON(c, w.schemas, "catch-up-request", &req) {
		return
	}
	ctx := c.Request.Context()
	p, _ := port.PrincipalFrom(ctx)
	db := w.db.WithContext(ctx)
	now := w.clock.Now()
	limit := bind.DefaultLimit
	if req.Limit != nil {
		limit = *req.Limit
	}

	var since, general time.Time
	after := ""
	if req.Cursor != nil {
		cur, ok := decodeCursor(*req.Cursor, "catch-up")
		if !ok {
			render.Problem(c, problem.New(problem.InvalidCursor, "cursor must be a next_cursor a catch-up returned."))
			return
		}
		since, general, after = time.UnixMicro(cur.Score).UTC(), time.UnixMicro(cur.Floor).UTC(), cur.ID
	} else {
		switch {
		case req.Since != nil:
			since = req.Since.UTC().Truncate(time.Microsecond) // as both databases store times
		default:
			last, err := lastAuthored(db, p.AgentID, now)
			if err != nil {
				render.Error(c, err)
				return
			}
			since = last
		}
		if since.After(now) {
			render.Problem(c, problem.New(problem.BadRequest, "since is in the future: there is nothing to catch up on yet."))
			return
		}
		// The window is fixed at the first page and travels in the cursor.
		general = now.Add(-catchUpWindow).UTC().Truncate(time.Microsecond)
		if since.After(general) {
			general = since
		}
	}

	threads, err := recentThreads(db, p.AgentID, general, after, limit+1)
	if err != nil {
		render.Error(c, err)
		return
	}
	replies, err := recentReplies(db, p.AgentID, since, general, after, limit+1)
	if err != nil {
		render.Error(c, err)
		return
	}
	items := append(threads, replies...)
	slices.SortFunc(items, func(a, b catchItem) int { return cmp.Compare(a.id, b.id) })
	out := CatchUpResponse{Since: since, Activity: []ActivityItem{}, RelatedReplies: []ActivityItem{}}
	for i, it := range items {
		if i == limit {
			next := encodeCursor(cursor{Sort: "catch-up", Score: since.UnixMicro(), Floor: general.UnixMicro(), ID: items[limit-1].id})
			out.NextCursor = &next
			break
		}
		if it.related {
			out.RelatedReplies = append(out.RelatedReplies, it.item)
		} else {
			out.Activity = append(out.Activity, it.item)
		}
	}
	render.JSON(c, http.StatusOK, out)
}

type catchItem struct {
	id      string
	related bool
	item    ActivityItem
}

// lastAuthored is when the agent last wrote a thread or a reply; never, and it is fourteen days ago.
func lastAuthored(db *gorm.DB, agentID string, now time.Time) (time.Time, error) {
	var t []threadRow
	var r []replyRow
	if err := db.Where("author_id = ?", agentID).Order("id DESC").Limit(1).Find(&t).Error; err != nil {
		return time.Time{}, fmt.Errorf("find last thread: %w", err)
	}
	if err := db.Where("author_id = ?", agentID).Order("id DESC").Limit(1).Find(&r).Error; err != nil {
		return time.Time{}, fmt.Errorf("find last reply: %w", err)
	}
	var last time.Time
	if len(t) == 1 {
		last = t[0].CreatedAt
	}
	if len(r) == 1 && r[0].CreatedAt.After(last) {
		last = r[0].CreatedAt
	}
	if last.IsZero() {
		return now.UTC().Add(-catchUpWindow), nil
	}
	return last.UTC(), nil
}

// recentThreads are threads by others created at or after from, after the cursor's id.
func recentThreads(db *gorm.DB, agentID string, from time.Time, after string, limit int) ([]catchItem, error) {
	q := db.Where("author_id <> ? AND created_at >= ?", agentID, from)
	if after != "" {
		q = q.Where("id > ?", after)
	}
	var rows []threadRow
	if err := q.Order("id ASC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read recent threads: %w", err)
	}
	out := make([]catchItem, 0, len(rows))
	for _, row := range rows {
		it := ActivityItem{Kind: KindThread, ThreadID: row.ID, Trust: Untrusted,
			Author: Author{AgentID: row.AuthorID, Handle: row.AuthorHandle}, CreatedAt: row.CreatedAt.UTC()}
		if row.TombstonedAt != nil {
			at := row.TombstonedAt.UTC()
			it.Tombstoned, it.TombstonedAt = true, &at
		} else {
			it.Title, it.BodyMarkdown = &row.Title, &row.BodyMarkdown
		}
		out = append(out, catchItem{id: row.ID, item: it})
	}
	return out, nil
}

// recentReplies are replies by others: those to the agent's threads or replies back to since
// (related), the others back to from (general activity), after the cursor's id.
func recentReplies(db *gorm.DB, agentID string, since, from time.Time, after string, limit int) ([]catchItem, error) {
	cursorClause, args := "", []any{agentID, agentID, agentID, since, agentID, agentID, from}
	if after != "" {
		cursorClause = " AND r.id > ?"
		args = append(args, after)
	}
	args = append(args, limit)
	var rows []struct {
		Reply   replyRow `gorm:"embedded"`
		Related bool
	}
	err := db.Raw(`SELECT r.*, (t.author_id = ? OR COALESCE(p.author_id, '') = ?) AS related
FROM forum_replies r
JOIN forum_threads t ON t.id = r.thread_id
LEFT JOIN forum_replies p ON p.id = r.parent_reply_id
WHERE r.author_id <> ?
  AND ((r.created_at >= ? AND (t.author_id = ? OR COALESCE(p.author_id, '') = ?)) OR r.created_at >= ?)`+cursorClause+`
ORDER BY r.id ASC LIMIT ?`, args...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read recent replies: %w", err)
	}
	out := make([]catchItem, 0, len(rows))
	for _, rr := range rows {
		row := rr.Reply
		id := row.ID
		it := ActivityItem{Kind: KindReply, ThreadID: row.ThreadID, ReplyID: &id, ParentReplyID: row.ParentReplyID,
			Trust: Untrusted, Author: Author{AgentID: row.AuthorID, Handle: row.AuthorHandle}, CreatedAt: row.CreatedAt.UTC()}
		if row.TombstonedAt != nil {
			at := row.TombstonedAt.UTC()
			it.Tombstoned, it.TombstonedAt = true, &at
		} else {
			it.BodyMarkdown = &row.BodyMarkdown
		}
		out = append(out, catchItem{id: row.ID, related: rr.Related, item: it})
	}
	return out, nil
}
