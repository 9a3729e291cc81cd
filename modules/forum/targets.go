package forum

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// target is the one post a vote, a vote clear or a tombstone names.
type target struct {
	kind, id string
	table    string
}

// targetOf returns the request's one target: exactly one of thread_id and reply_id (400 otherwise,
// the spec's "malformed request").
func targetOf(r TargetRequest) (target, *problem.Problem) {
	switch {
	case r.ThreadID != nil && r.ReplyID == nil:
		return target{KindThread, *r.ThreadID, "forum_threads"}, nil
	case r.ReplyID != nil && r.ThreadID == nil:
		return target{KindReply, *r.ReplyID, "forum_replies"}, nil
	}
	return target{}, problem.New(problem.BadRequest, "Name exactly one target: thread_id or reply_id, not both and not neither.")
}

// openSQL is the condition on the target's row that it takes writes: neither tombstoned nor hidden,
// in an open category, in a thread no operator locked (its one variable is CategoryOpen).
func (t target) openSQL() string {
	if t.kind == KindReply {
		// Not threadTakesWritesSQL on the reply's thread: check lets that thread be tombstoned or
		// hidden, and the statement and its explanation must agree.
		return "tombstoned_at IS NULL AND hidden_at IS NULL AND thread_id IN " +
			"(SELECT th.id FROM forum_threads th JOIN forum_categories c ON c.id = th.category_id WHERE c.state = ? AND th.locked_at IS NULL)"
	}
	return threadTakesWritesSQL
}

// planLock adds the write's first step: it locks the target's row (an UPDATE that changes nothing),
// so that concurrent writes on it count correctly, while the target takes writes and, unless author
// is empty, was written by author; doing says what only the author may do ("tombstone"). Its
// explanation is check's, then authoredBy's.
func (t target) planLock(plan *write.Plan, author, doing string) {
	cond, vars := "id = ? AND "+t.openSQL(), []any{t.id, CategoryOpen}
	if author != "" {
		cond += " AND author_id = ?"
		vars = append(vars, author)
	}
	plan.Exec(1, func(ctx context.Context, db *gorm.DB) error {
		if err := t.check(db); err != nil || author == "" {
			return err
		}
		return t.authoredBy(db, author, doing)
	}, "UPDATE "+t.table+" SET score = score WHERE "+cond, vars...)
}

// check answers 404 for a missing target, 403 for a tombstoned or hidden one, 403 when its category
// is not open, and 403 thread_locked when its thread is locked.
func (t target) check(db *gorm.DB) error {
	var state struct {
		TombstonedAt *time.Time
		HiddenAt     *time.Time
	}
	if err := db.Table(t.table).Select("tombstoned_at, hidden_at").Where("id = ?", t.id).Take(&state).Error; errors.Is(err, gorm.ErrRecordNotFound) {
		return problem.Newf(problem.NotFound, "No %s has this id.", t.kind)
	} else if err != nil {
		return fmt.Errorf("read %s: %w", t.kind, err)
	}
	if state.TombstonedAt != nil {
		return problem.Newf(problem.ContentTombstoned, "The %s is tombstoned.", t.kind)
	}
	if state.HiddenAt != nil {
		return problem.Newf(problem.ContentHidden, "The %s was removed by moderation.", t.kind)
	}
	// Like every write, it needs the post's category to be open.
	threadID := t.id
	if t.kind == KindReply {
		var ids []string
		if err := db.Model(&replyRow{}).Where("id = ?", t.id).Pluck("thread_id", &ids).Error; err != nil {
			return fmt.Errorf("read the reply's thread: %w", err)
		} else if len(ids) != 1 {
			return fmt.Errorf("reply %s has no thread", t.id)
		}
		threadID = ids[0]
	}
	var states []string
	if err := db.Table("forum_categories AS c").Joins("JOIN forum_threads AS t ON t.category_id = c.id").
		Where("t.id = ?", threadID).Pluck("c.state", &states).Error; err != nil {
		return fmt.Errorf("read the category's state: %w", err)
	} else if len(states) != 1 {
		return fmt.Errorf("thread %s has no category", threadID)
	}
	if states[0] != CategoryOpen {
		return problem.Newf(problem.CategoryNotOpen, "The post's category is %s: it takes no writes.", states[0])
	}
	locked, err := lockedThread(db, threadID)
	if err != nil {
		return err
	}
	if locked {
		return threadLocked()
	}
	return nil
}

// authoredBy refuses (403 not_author) unless agentID wrote the target; doing says what only the author
// may do ("tombstone").
func (t target) authoredBy(tx *gorm.DB, agentID, doing string) error {
	var author []string
	if err := tx.Table(t.table).Where("id = ?", t.id).Pluck("author_id", &author).Error; err != nil {
		return fmt.Errorf("read author: %w", err)
	}
	if len(author) != 1 || author[0] != agentID {
		return problem.Newf(problem.NotAuthor, "Only the author may %s this %s.", doing, t.kind)
	}
	return nil
}

// bindTarget decodes a vote, clear or tombstone body against schema name and returns its target.
func (w *Writes) bindTarget(c *gin.Context, name string) (TargetRequest, target, bool) {
	var req TargetRequest
	if !bind.JSON(c, w.schemas, name, &req) {
		return req, target{}, false
	}
	t, p := targetOf(req)
	if p != nil {
		render.Abort(c, p)
		return req, target{}, false
	}
	return req, t, true
}

// planVote adds to plan making the caller's vote on t value (+1, -1, or 0 to clear it) and moving the
// tally, and returns the tally after it (Late numbers). The tally moves first, by the difference from
// the vote the statement still sees (the target's row is locked since the write's first step).
func planVote(plan *write.Plan, agentID string, t target, value int, now time.Time) Votes {
	old := func(expr string) string {
		return "COALESCE((SELECT " + expr + " FROM forum_votes v WHERE v.agent_id = ? AND v.target_kind = ? AND v.target_id = ?), 0)"
	}
	var v Votes
	key := []any{agentID, t.kind, t.id}
	vars := append(append(append([]any{count(0, value, 1)}, key...), count(0, value, -1)), key...)
	vars = append(append(append(vars, value), key...), t.id)
	plan.Returning(1, nil, []any{&v.Score, &v.Up, &v.Down}, "UPDATE "+t.table+
		" SET up = up + ? - "+old("CASE WHEN v.value = 1 THEN 1 ELSE 0 END")+
		", down = down + ? - "+old("CASE WHEN v.value = -1 THEN 1 ELSE 0 END")+
		", score = score + ? - "+old("v.value")+
		" WHERE id = ? RETURNING score, up, down", vars...)
	if value == 0 {
		plan.Exec(write.AnyRows, nil, "DELETE FROM forum_votes WHERE agent_id = ? AND target_kind = ? AND target_id = ?", key...)
	} else {
		plan.Exec(write.AnyRows, nil, `INSERT INTO forum_votes (agent_id, target_kind, target_id, value, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (agent_id, target_kind, target_id) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
WHERE forum_votes.value <> excluded.value`, agentID, t.kind, t.id, value, now, now)
	}
	of := func(dst *int64, column string) int64 {
		return plan.Late(dst, "SELECT "+column+" FROM "+t.table+" WHERE id = ?", t.id)
	}
	return Votes{Score: of(&v.Score, "score"), Up: of(&v.Up, "up"), Down: of(&v.Down, "down")}
}

// count is how the number of votes of sign changes when a vote moves from prev to next.
func count(prev, next, sign int) int {
	n := 0
	if next == sign {
		n++
	}
	if prev == sign {
		n--
	}
	return n
}

var voteValues = map[string]int{"up": 1, "down": -1}

func (w *Writes) vote(c *gin.Context) {
	req, t, ok := w.bindTarget(c, "cast-vote-request")
	if !ok {
		return
	}
	if req.Value == nil {
		render.Abort(c, invalid("/value", "required", "value is required: up or down"))
		return
	}
	value := voteValues[*req.Value]
	w.run(c, port.OpVote, func(plan *write.Plan, p port.Principal, now time.Time, bill biller) (any, error) {
		t.planLock(plan, "", "")
		charge, err := bill(req.Billing, t.id, 0)
		if err != nil {
			return nil, err
		}
		v := planVote(plan, p.AgentID, t, value, now)
		return VoteResponse{TargetKind: t.kind, TargetID: t.id, Value: req.Value, Score: v.Score, Up: v.Up, Down: v.Down, Charge: charge}, nil
	})
}

func (w *Writes) clearVote(c *gin.Context) {
	req, t, ok := w.bindTarget(c, "clear-vote-request")
	if !ok {
		return
	}
	w.run(c, port.OpClearVote, func(plan *write.Plan, p port.Principal, now time.Time, bill biller) (any, error) {
		t.planLock(plan, "", "")
		charge, err := bill(req.Billing, t.id, 0)
		if err != nil {
			return nil, err
		}
		v := planVote(plan, p.AgentID, t, 0, now)
		return VoteResponse{TargetKind: t.kind, TargetID: t.id, Value: nil, Score: v.Score, Up: v.Up, Down: v.Down, Charge: charge}, nil
	})
}

func (w *Writes) tombstone(c *gin.Context) {
	req, t, ok := w.bindTarget(c, "tombstone-request")
	if !ok {
		return
	}
	w.run(c, port.OpTombstone, func(plan *write.Plan, p port.Principal, now time.Time, bill biller) (any, error) {
		t.planLock(plan, p.AgentID, "tombstone")
		charge, err := bill(req.Billing, t.id, 0)
		if err != nil {
			return nil, err
		}
		plan.Exec(1, nil, "UPDATE "+t.table+" SET tombstoned_at = ? WHERE id = ?", now, t.id)
		return TombstoneResponse{TargetKind: t.kind, TargetID: t.id, TombstonedAt: now.UTC(), Charge: charge}, nil
	})
}
