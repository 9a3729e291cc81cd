package forum

import (
	"fmt"
	"time"

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

// lock takes the target's row for this transaction (an UPDATE that changes nothing locks it on
// PostgreSQL; SQLite has one writer), so that concurrent votes on it count correctly. It answers 404
// for a missing target and 403 for a tombstoned one.
func (t target) lock(tx *gorm.DB) error {
	res := tx.Exec("UPDATE "+t.table+" SET score = score WHERE id = ?", t.id)
	if res.Error != nil {
		return fmt.Errorf("lock %s: %w", t.kind, res.Error)
	}
	if res.RowsAffected == 0 {
		return problem.Newf(problem.NotFound, "No %s has this id.", t.kind)
	}
	var state struct {
		TombstonedAt *time.Time
		HiddenAt     *time.Time
	}
	if err := tx.Table(t.table).Select("tombstoned_at, hidden_at").Where("id = ?", t.id).Take(&state).Error; err != nil {
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
		if err := tx.Model(&replyRow{}).Where("id = ?", t.id).Pluck("thread_id", &ids).Error; err != nil || len(ids) != 1 {
			return fmt.Errorf("read the reply's thread: %v", err)
		}
		threadID = ids[0]
	}
	var states []string
	if err := tx.Table("forum_categories AS c").Joins("JOIN forum_threads AS t ON t.category_id = c.id").
		Where("t.id = ?", threadID).Pluck("c.state", &states).Error; err != nil || len(states) != 1 {
		return fmt.Errorf("read the category's state: %v", err)
	}
	if states[0] != CategoryOpen {
		return problem.Newf(problem.CategoryNotOpen, "The post's category is %s: it takes no writes.", states[0])
	}
	locked, err := lockedThread(tx, threadID)
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

// tally returns the target's votes.
func (t target) tally(tx *gorm.DB) (Votes, error) {
	var v Votes
	err := tx.Table(t.table).Select("score, up, down").Where("id = ?", t.id).Take(&v).Error
	return v, err
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

// setVote makes the caller's vote on t value (+1, -1, or 0 to clear it) and moves the tally.
func setVote(tx *gorm.DB, agentID string, t target, value int, now time.Time) (Votes, error) {
	var old []voteRow
	if err := tx.Where("agent_id = ? AND target_kind = ? AND target_id = ?", agentID, t.kind, t.id).Limit(1).Find(&old).Error; err != nil {
		return Votes{}, fmt.Errorf("read vote: %w", err)
	}
	prev := 0
	if len(old) == 1 {
		prev = old[0].Value
	}
	switch {
	case value == 0 && prev != 0:
		if err := tx.Where("agent_id = ? AND target_kind = ? AND target_id = ?", agentID, t.kind, t.id).Delete(&voteRow{}).Error; err != nil {
			return Votes{}, fmt.Errorf("clear vote: %w", err)
		}
	case value != 0 && prev == 0:
		if err := tx.Create(&voteRow{AgentID: agentID, TargetKind: t.kind, TargetID: t.id, Value: value, CreatedAt: now, UpdatedAt: now}).Error; err != nil {
			return Votes{}, fmt.Errorf("record vote: %w", err)
		}
	case value != 0 && prev != value:
		if err := tx.Model(&voteRow{}).Where("agent_id = ? AND target_kind = ? AND target_id = ?", agentID, t.kind, t.id).
			Updates(map[string]any{"value": value, "updated_at": now}).Error; err != nil {
			return Votes{}, fmt.Errorf("change vote: %w", err)
		}
	}
	up, down := count(prev, value, 1), count(prev, value, -1)
	if err := tx.Exec("UPDATE "+t.table+" SET up = up + ?, down = down + ?, score = score + ? WHERE id = ?",
		up, down, value-prev, t.id).Error; err != nil {
		return Votes{}, fmt.Errorf("tally vote: %w", err)
	}
	return t.tally(tx)
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
	ctx := c.Request.Context()
	w.run(c, func(tx *gorm.DB, p port.Principal, now time.Time) (any, error) {
		if err := t.lock(tx); err != nil {
			return nil, err
		}
		charge, err := w.charge(ctx, tx, p, c, port.OpVote, req.Billing, t.id)
		if err != nil {
			return nil, err
		}
		v, err := setVote(tx, p.AgentID, t, value, now)
		if err != nil {
			return nil, err
		}
		return VoteResponse{TargetKind: t.kind, TargetID: t.id, Value: req.Value, Score: v.Score, Up: v.Up, Down: v.Down, Charge: charge}, nil
	})
}

func (w *Writes) clearVote(c *gin.Context) {
	req, t, ok := w.bindTarget(c, "clear-vote-request")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	w.run(c, func(tx *gorm.DB, p port.Principal, now time.Time) (any, error) {
		if err := t.lock(tx); err != nil {
			return nil, err
		}
		charge, err := w.charge(ctx, tx, p, c, port.OpClearVote, req.Billing, t.id)
		if err != nil {
			return nil, err
		}
		v, err := setVote(tx, p.AgentID, t, 0, now)
		if err != nil {
			return nil, err
		}
		return VoteResponse{TargetKind: t.kind, TargetID: t.id, Value: nil, Score: v.Score, Up: v.Up, Down: v.Down, Charge: charge}, nil
	})
}

func (w *Writes) tombstone(c *gin.Context) {
	req, t, ok := w.bindTarget(c, "tombstone-request")
	if !ok {
		return
	}
	ctx := c.Request.Context()
	w.run(c, func(tx *gorm.DB, p port.Principal, now time.Time) (any, error) {
		if err := t.lock(tx); err != nil {
			return nil, err
		}
		if err := t.authoredBy(tx, p.AgentID, "tombstone"); err != nil {
			return nil, err
		}
		charge, err := w.charge(ctx, tx, p, c, port.OpTombstone, req.Billing, t.id)
		if err != nil {
			return nil, err
		}
		if err := tx.Exec("UPDATE "+t.table+" SET tombstoned_at = ? WHERE id = ?", now, t.id).Error; err != nil {
			return nil, fmt.Errorf("tombstone: %w", err)
		}
		return TombstoneResponse{TargetKind: t.kind, TargetID: t.id, TombstonedAt: now.UTC(), Charge: charge}, nil
	})
}
