package forum

import (
	"context"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
)

// The orders of a category's threads: newest first, top (highest score) first, or latest activity
// (the newest post in the thread: itself or a reply) first; each then newest first.
const (
	SortNewest = "newest"
	SortTop    = "top"
	SortActive = "active"
)

// validSort reports whether s names an order of a category's threads.
func validSort(s string) bool { return s == SortNewest || s == SortTop || s == SortActive }

// keyset is how a list is sorted (by column, then id, both the same way; by id alone when column is
// empty) so that it pages from a position both ways: after it, in the list's order (next pages), and
// before it (previous pages, read backwards and returned in the list's order).
type keyset struct {
	column string
	desc   bool
	value  func(position) any // the column's value at a position
}

// threadKeys is the keyset of a category's threads in sort order.
func threadKeys(sort string) keyset {
	switch sort {
	case SortTop:
		return keyset{column: "score", desc: true, value: func(p position) any { return p.Score }}
	case SortActive:
		// The cursor keeps the time in nanoseconds, which each dialect reads back as it stores times.
		return keyset{column: "last_activity", desc: true, value: func(p position) any { return time.Unix(0, p.Score).UTC() }}
	}
	return keyset{desc: true}
}

// threadPosition is where a thread sits in sort order.
func threadPosition(sort string, row threadRow) position {
	switch sort {
	case SortTop:
		return position{Score: row.Score, ID: row.ID}
	case SortActive:
		return position{Score: row.LastActivity.UnixNano(), ID: row.ID}
	}
	return position{ID: row.ID}
}

// from keeps the rows after p in the list's order, or before it when back is set, and orders them the
// way they are read (backwards when back is set).
func (k keyset) from(q *gorm.DB, p *position, back bool) *gorm.DB {
	lower := k.desc != back // the rows read have lower keys
	op, dir := ">", "ASC"
	if lower {
		op, dir = "<", "DESC"
	}
	if p != nil {
		if k.column == "" {
			q = q.Where("id "+op+" ?", p.ID)
		} else {
			v := k.value(*p)
			q = q.Where(k.column+" "+op+" ? OR ("+k.column+" = ? AND id "+op+" ?)", v, v, p.ID)
		}
	}
	if k.column != "" {
		q = q.Order(k.column + " " + dir)
	}
	return q.Order("id " + dir)
}

// window reads up to limit rows of q from p (after it, or before it when back is set), in the list's
// order, and whether there are more beyond them the way they were read.
func window[T any](q *gorm.DB, k keyset, p *position, back bool, limit int) ([]T, bool, error) {
	var rows []T
	if err := k.from(q, p, back).Limit(limit + 1).Find(&rows).Error; err != nil {
		return nil, false, err
	}
	more := len(rows) > limit
	if more {
		rows = rows[:limit]
	}
	if back {
		slices.Reverse(rows)
	}
	return rows, more, nil
}

// threadRows reads a page of a category's threads in sort order from cur (after it, or before it when
// back is set), and whether there are more the way it was read.
func (r *Reads) threadRows(ctx context.Context, cat categoryRow, sort string, cur *position, back bool, limit int) ([]threadRow, bool, error) {
	rows, more, err := window[threadRow](r.db.WithContext(ctx).Where("category_id = ?", cat.ID), threadKeys(sort), cur, back, limit)
	if err != nil {
		return nil, false, fmt.Errorf("list threads: %w", err)
	}
	return rows, more, nil
}

// replyRows reads a page of a thread's replies in creation order from cur (after it, or before it when
// back is set), and whether there are more the way it was read.
func (r *Reads) replyRows(ctx context.Context, threadID string, cur *position, back bool, limit int) ([]replyRow, bool, error) {
	rows, more, err := window[replyRow](r.db.WithContext(ctx).Where("thread_id = ?", threadID), keyset{}, cur, back, limit)
	if err != nil {
		return nil, false, fmt.Errorf("list replies: %w", err)
	}
	return rows, more, nil
}
