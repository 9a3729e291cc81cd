package forum

import (
	"cmp"
	"fmt"
	"strconv"
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

// The SQL of each dialect is in sqlDialect (dialect.go).

// noHorizon means every committed post is settled (SQLite).
const noHorizon = commitOrder(^uint64(0))

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

// compareOrder sorts two posts by commit order, then id.
func compareOrder(ao commitOrder, aid string, bo commitOrder, bid string) int {
	return cmp.Or(cmp.Compare(ao, bo), cmp.Compare(aid, bid))
}

// The window's floor. A catch-up reads posts in commit order from a window of creation times.
// Commit order follows creation time, but not strictly: transactions overlap, and a post's time is read
// before its transaction commits. So the scan in commit order cannot start at the window's first post
// by time; it starts at the window's floor, the lowest commit order of a post created in the window
// (sqlDialect.windowFloor), and reads from there only the posts of the window and the few written
// about its start. Without the floor it would read every post ever written before the window first
// (350-490 ms at a million posts).
//
// On PostgreSQL the floor is the lowest txid of the window's posts, read from the index on
// (created_at, txid) (forum_0009), and remembered (floors, dialect_postgres.go). On SQLite, whose
// posts commit in id order, it is the lowest id of the window's posts, read from the index on
// (created_at, id) each time.
