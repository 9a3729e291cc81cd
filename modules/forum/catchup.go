package forum

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
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
// catch-up uses the same window; posts come in commit order (commitorder.go), so none is ever passed.
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
	list := catchUpList(p.AgentID)

	var since, general time.Time
	var after *position
	if req.Cursor != nil {
		var pos position
		if w.cursors.Open(*req.Cursor, list, &pos) != nil {
			render.Problem(c, problem.New(problem.InvalidCursor, "cursor must be a next_cursor a catch-up of this agent returned, within a day."))
			return
		}
		since, general, after = time.UnixMicro(pos.Since).UTC(), time.UnixMicro(pos.Floor).UTC(), &pos
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

	// The horizon first: every post below it is settled, whichever query finds it.
	dialect := dialectOf(db)
	settled, err := dialect.horizon(db)
	if err != nil {
		render.Error(c, err)
		return
	}
	threads, err := recentThreads(db, dialect, p.AgentID, general, after, limit+1)
	if err != nil {
		render.Error(c, err)
		return
	}
	replies, err := recentReplies(db, dialect, p.AgentID, since, general, after, limit+1)
	if err != nil {
		render.Error(c, err)
		return
	}
	items := append(threads, replies...)
	slices.SortFunc(items, func(a, b catchItem) int { return compareOrder(a.order, a.id, b.order, b.id) })
	out := CatchUpResponse{Since: since, Activity: []ActivityItem{}, RelatedReplies: []ActivityItem{}}
	var last *catchItem
	more := false
	for i := range items {
		if i == limit || items[i].order >= settled {
			// More to come: the page is full, or the next post's transaction may not be the last to
			// commit below it.
			more = true
			break
		}
		it := &items[i]
		if it.related {
			out.RelatedReplies = append(out.RelatedReplies, it.item)
		} else {
			out.Activity = append(out.Activity, it.item)
		}
		last = it
	}
	if more {
		next := position{Since: since.UnixMicro(), Floor: general.UnixMicro()}
		switch {
		case last != nil:
			next.Order, next.ID = last.order.String(), last.id
		case after != nil:
			next.Order, next.ID = after.Order, after.ID
		}
		if out.NextCursor, err = seal(w.cursors, list, next); err != nil {
			render.Error(c, err)
			return
		}
	}
	render.JSON(c, http.StatusOK, out)
}

type catchItem struct {
	id      string
	order   commitOrder
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

// recentThreads are threads by others created at or after from, after the cursor's position, in
// commit order. Posts hidden by moderation are left out. The scan in commit order starts at the window's
// floor (windowFloor), not at the first thread ever written.
func recentThreads(db *gorm.DB, dialect sqlDialect, agentID string, from time.Time, after *position, limit int) ([]catchItem, error) {
	floor, floorArgs, err := dialect.windowFloor(db, "forum_threads", "forum_threads", from)
	if err != nil {
		return nil, err
	}
	q := db.Table("forum_threads").Select("forum_threads.*, "+dialect.orderColumn("forum_threads")+" AS commit_order").
		Where("author_id <> ? AND created_at >= ? AND hidden_at IS NULL", agentID, from).Where(floor, floorArgs...)
	if after != nil {
		o, err := parseOrder(after.Order)
		if err != nil {
			return nil, err
		}
		cond, args := dialect.afterPosition("forum_threads", o, after.ID)
		q = q.Where(cond, args...)
	}
	var rows []struct {
		Thread      threadRow `gorm:"embedded"`
		CommitOrder string
	}
	if err := q.Order(dialect.orderBy("forum_threads")).Limit(limit).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("read recent threads: %w", err)
	}
	out := make([]catchItem, 0, len(rows))
	for _, rr := range rows {
		row := rr.Thread
		o, err := parseOrder(rr.CommitOrder)
		if err != nil {
			return nil, err
		}
		it := ActivityItem{Kind: KindThread, ThreadID: row.ID, Trust: Untrusted,
			Author: Author{AgentID: row.AuthorID, Handle: row.AuthorHandle}, CreatedAt: row.CreatedAt.UTC()}
		if row.TombstonedAt != nil {
			at := row.TombstonedAt.UTC()
			it.Tombstoned, it.TombstonedAt = true, &at
		} else {
			it.Title, it.BodyMarkdown = &row.Title, &row.BodyMarkdown
		}
		out = append(out, catchItem{id: row.ID, order: o, item: it})
	}
	return out, nil
}

// recentReplies are replies by others: those to the agent's threads or replies back to since
// (related), the others back to from (general activity), after the cursor's position, in commit
// order.
//
// Each way a reply belongs to the page is a scan of its own: general activity, in commit order from
// the window's floor (windowFloor), reads about a page of replies; and, when since is before from, the
// replies to the agent's threads and to its replies since then, found through the agent's posts, are
// read as many as there are, and sorted. The page is the first of their union in commit order.
func recentReplies(db *gorm.DB, dialect sqlDialect, agentID string, since, from time.Time, after *position, limit int) ([]catchItem, error) {
	cond, cargs := "", []any(nil) // after the cursor's position
	if after != nil {
		o, err := parseOrder(after.Order)
		if err != nil {
			return nil, err
		}
		cond, cargs = dialect.afterPosition("r", o, after.ID)
		cond = " AND " + cond
	}
	// The arguments in the order of their placeholders: the select list's first.
	args := []any{agentID, agentID}
	floor, fargs, err := dialect.windowFloor(db, "forum_replies", "r", from)
	if err != nil {
		return nil, err
	}
	branches := []string{`SELECT r.id FROM forum_replies r
  WHERE r.author_id <> ? AND r.hidden_at IS NULL AND r.created_at >= ? AND ` + floor + cond + `
  ORDER BY ` + dialect.orderBy("r") + ` LIMIT ?`}
	args = append(append(append(append(args, agentID, from), fargs...), cargs...), limit)
	if since.Before(from) {
		// Replies to the agent's threads, and to its replies, from since on: found through the
		// agent's posts (indexes on author_id, then on thread_id or parent_reply_id with created_at),
		// then sorted (sqlDialect.repliesTo).
		for _, on := range []struct{ mine, column string }{{"forum_threads", "thread_id"}, {"forum_replies", "parent_reply_id"}} {
			mine := dialect.repliesTo(on.mine, on.column, cond)
			branches = append(branches, `SELECT c.id FROM (`+mine+`) c ORDER BY `+dialect.orderBy("c")+` LIMIT ?`)
			args = append(append(append(args, since, agentID), cargs...), agentID, limit)
		}
	}
	for i, b := range branches {
		branches[i] = fmt.Sprintf("SELECT id FROM (%s) b%d", b, i)
	}
	var rows []struct {
		Reply       replyRow `gorm:"embedded"`
		Related     bool
		CommitOrder string
	}
	args = append(args, limit)
	err = db.Raw(`SELECT r.*, (t.author_id = ? OR COALESCE(p.author_id, '') = ?) AS related, `+dialect.orderColumn("r")+` AS commit_order
FROM (`+strings.Join(branches, "\nUNION ")+`) page
JOIN forum_replies r ON r.id = page.id
JOIN forum_threads t ON t.id = r.thread_id
LEFT JOIN forum_replies p ON p.id = r.parent_reply_id
ORDER BY `+dialect.orderBy("r")+` LIMIT ?`, args...).Scan(&rows).Error
	if err != nil {
		return nil, fmt.Errorf("read recent replies: %w", err)
	}
	out := make([]catchItem, 0, len(rows))
	for _, rr := range rows {
		row := rr.Reply
		o, err := parseOrder(rr.CommitOrder)
		if err != nil {
			return nil, err
		}
		id := row.ID
		it := ActivityItem{Kind: KindReply, ThreadID: row.ThreadID, ReplyID: &id, ParentReplyID: row.ParentReplyID,
			Trust: Untrusted, Author: Author{AgentID: row.AuthorID, Handle: row.AuthorHandle}, CreatedAt: row.CreatedAt.UTC()}
		if row.TombstonedAt != nil {
			at := row.TombstonedAt.UTC()
			it.Tombstoned, it.TombstonedAt = true, &at
		} else {
			it.BodyMarkdown = &row.BodyMarkdown
		}
		out = append(out, catchItem{id: row.ID, order: o, related: rr.Related, item: it})
	}
	return out, nil
}
