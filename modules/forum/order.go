package forum

import (
	"cmp"
	"fmt"
	"strconv"

	"gorm.io/gorm"
)

// Catch-up pages posts in the order their transactions committed, so that a post whose transaction
// commits after a page has passed where its id sorts is still returned on a later page.
//
// On PostgreSQL every post records its transaction's id (forum_0003, txid = pg_current_xact_id()),
// and a page returns only posts below the horizon: the oldest transaction still running
// (pg_snapshot_xmin), below which every transaction has committed or rolled back for good. A post
// above it waits for a later page; the page says there is more (next_cursor) rather than pass it.
//
// On SQLite writers are serialised (each write takes the write lock at BEGIN and makes its ids while
// holding it), so the ids of posts already sort in commit order, and there is no horizon.

// commitOrder is a post's place in commit order: its transaction id on PostgreSQL, 0 on SQLite.
type commitOrder uint64

// noHorizon means every committed post is settled (SQLite).
const noHorizon = commitOrder(^uint64(0))

// horizon returns the commit order below which every post is settled.
func horizon(db *gorm.DB) (commitOrder, error) {
	if db.Dialector.Name() != "postgres" {
		return noHorizon, nil
	}
	var xmin string
	if err := db.Raw("SELECT pg_snapshot_xmin(pg_current_snapshot())::text").Scan(&xmin).Error; err != nil {
		return 0, fmt.Errorf("read the commit horizon: %w", err)
	}
	return parseOrder(xmin)
}

func parseOrder(s string) (commitOrder, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("commit order %q: %w", s, err)
	}
	return commitOrder(n), nil
}

func (o commitOrder) String() string {
	if o == 0 {
		return ""
	}
	return strconv.FormatUint(uint64(o), 10)
}

// orderColumn is the SQL that gives a post's commit order as text, on the dialect of db.
func orderColumn(db *gorm.DB, table string) string {
	if db.Dialector.Name() == "postgres" {
		return table + ".txid::text"
	}
	return "''"
}

// afterPosition is the condition, and its arguments, that keeps the posts after a position (order, id).
func afterPosition(db *gorm.DB, table string, order commitOrder, id string) (string, []any) {
	if db.Dialector.Name() == "postgres" {
		return "(" + table + ".txid, " + table + ".id) > (?::text::xid8, ?)", []any{strconv.FormatUint(uint64(order), 10), id}
	}
	return table + ".id > ?", []any{id}
}

// orderBy sorts by commit order, then id.
func orderBy(db *gorm.DB, table string) string {
	if db.Dialector.Name() == "postgres" {
		return table + ".txid, " + table + ".id"
	}
	return table + ".id"
}

// compareOrder sorts two posts by commit order, then id.
func compareOrder(ao commitOrder, aid string, bo commitOrder, bid string) int {
	return cmp.Or(cmp.Compare(ao, bo), cmp.Compare(aid, bid))
}
