package forum

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// ThreadAdmin is the operator's moderation of whole threads (`svc admin thread lock|unlock|move`),
// beside the reports that hide single posts. A locked thread stays readable and takes no writes:
// replies, votes and vote clears on it or its replies, tombstones, image changes (403 thread_locked,
// like a locked category's category_not_open). Every change is an update of forum_threads (and of
// forum_categories for a move), which the content-version triggers of forum_0008 carry to every
// replica's read cache: the command needs no running server to tell.
type ThreadAdmin struct {
	db    *gorm.DB
	clock port.Clock
}

// NewThreadAdmin returns the thread moderation on db.
func NewThreadAdmin(db *gorm.DB, clock port.Clock) *ThreadAdmin {
	return &ThreadAdmin{db: db, clock: clock}
}

// ThreadState is what the commands print: where the thread is and whether it is locked.
type ThreadState struct {
	ThreadID     string     `json:"thread_id"`
	Title        string     `json:"title"`
	CategorySlug string     `json:"category_slug"`
	Locked       bool       `json:"locked"`
	LockedAt     *time.Time `json:"locked_at"`
	MovedFrom    string     `json:"moved_from,omitempty"` // move: the category it left ("" when it was there already)
}

// threadLocked is the refusal of a write to a locked thread.
func threadLocked() *problem.Problem {
	return problem.New(problem.ThreadLocked, "An operator locked the thread: it stays readable and takes no writes until it is unlocked.")
}

// lockedThread reports whether thread id is locked, for writes that reach a thread through one of its
// posts.
func lockedThread(tx *gorm.DB, id string) (bool, error) {
	var n int64
	if err := tx.Model(&threadRow{}).Where("id = ? AND locked_at IS NOT NULL", id).Count(&n).Error; err != nil {
		return false, fmt.Errorf("read the thread's lock: %w", err)
	}
	return n > 0, nil
}

// SetLocked locks or unlocks thread id. Locking a locked thread keeps its first lock time; either
// way the answer is the thread's state.
func (a *ThreadAdmin) SetLocked(ctx context.Context, id string, locked bool) (ThreadState, error) {
	db := a.db.WithContext(ctx)
	var err error
	if locked {
		now := a.clock.Now().UTC().Truncate(time.Microsecond)
		err = db.Model(&threadRow{}).Where("id = ? AND locked_at IS NULL", id).UpdateColumn("locked_at", now).Error
	} else {
		err = db.Model(&threadRow{}).Where("id = ? AND locked_at IS NOT NULL", id).UpdateColumn("locked_at", nil).Error
	}
	if err != nil {
		return ThreadState{}, fmt.Errorf("lock thread: %w", err)
	}
	return a.state(db, id)
}

// Move moves thread id to the category slug (of any state: moving a thread to an archived category
// archives it), and moves one thread of the thread counts with it, in one transaction.
func (a *ThreadAdmin) Move(ctx context.Context, id, slug string) (ThreadState, error) {
	var from string
	err := a.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var th threadRow
		if err := tx.Select("id", "category_id").Where("id = ?", id).Take(&th).Error; err != nil {
			return notFoundThread(err, id)
		}
		to, err := categoryBySlug(tx, slug)
		if err != nil {
			if errors.Is(err, gorm.ErrRecordNotFound) {
				return problem.Newf(problem.NotFound, "no category has the slug %q", slug)
			}
			return fmt.Errorf("find category: %w", err)
		}
		if to.ID == th.CategoryID {
			return nil
		}
		res := tx.Model(&threadRow{}).Where("id = ? AND category_id = ?", id, th.CategoryID).UpdateColumn("category_id", to.ID)
		if res.Error != nil {
			return fmt.Errorf("move thread: %w", res.Error)
		}
		if res.RowsAffected != 1 {
			return problem.Newf(problem.Conflict, "the thread %s moved meanwhile; run the command again", id)
		}
		// The two counts in id order, the order every move takes, so two moves between the same
		// categories in opposite directions cannot deadlock.
		for _, c := range orderedCounts(th.CategoryID, to.ID) {
			if err := tx.Model(&categoryRow{}).Where("id = ?", c.id).UpdateColumn("thread_count", gorm.Expr("thread_count + ?", c.delta)).Error; err != nil {
				return fmt.Errorf("count threads: %w", err)
			}
		}
		var old categoryRow
		if err := tx.Select("slug").Where("id = ?", th.CategoryID).Take(&old).Error; err != nil {
			return fmt.Errorf("find the thread's category: %w", err)
		}
		from = old.Slug
		return nil
	})
	if err != nil {
		return ThreadState{}, err
	}
	s, err := a.state(a.db.WithContext(ctx), id)
	s.MovedFrom = from
	return s, err
}

type countChange struct {
	id    string
	delta int
}

func orderedCounts(from, to string) []countChange {
	if from < to {
		return []countChange{{from, -1}, {to, 1}}
	}
	return []countChange{{to, 1}, {from, -1}}
}

func (a *ThreadAdmin) state(db *gorm.DB, id string) (ThreadState, error) {
	var s struct {
		ID       string
		Title    string
		Slug     string
		LockedAt *time.Time
	}
	err := db.Table("forum_threads AS t").Joins("JOIN forum_categories AS c ON c.id = t.category_id").
		Select("t.id, t.title, c.slug, t.locked_at").Where("t.id = ?", id).Take(&s).Error
	if err != nil {
		return ThreadState{}, notFoundThread(err, id)
	}
	out := ThreadState{ThreadID: s.ID, Title: s.Title, CategorySlug: s.Slug, Locked: s.LockedAt != nil}
	if s.LockedAt != nil {
		t := s.LockedAt.UTC()
		out.LockedAt = &t
	}
	return out, nil
}

func notFoundThread(err error, id string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return problem.Newf(problem.NotFound, "no thread has the id %q", id)
	}
	return fmt.Errorf("find thread: %w", err)
}
