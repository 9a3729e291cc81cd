package forum

import (
	"database/sql"
	"fmt"
	"strconv"
	"sync"
	"time"
	"weak"

	"gorm.io/gorm"
)

// A catch-up reads posts in commit order from a window of creation times (order.go). Commit order
// follows creation time, but not strictly: transactions overlap, and a post's time is read before its
// transaction commits. So the scan in commit order cannot start at the window's first post by time; it
// starts at the window's floor, the lowest commit order of a post created in the window, and reads
// from there only the posts of the window and the few written about its start. Without the floor it
// would read every post ever written before the window first (350-490 ms at a million posts).

// windowFloor is the condition, and its arguments, that starts a scan of table (as alias) in commit
// order at the floor of the window of posts created at or after from.
//
// On PostgreSQL the floor is the lowest txid of the window's posts, read from the index on
// (created_at, txid) (forum_0009), and remembered (floors). On SQLite, whose posts commit in id order,
// it is the lowest id of the window's posts, read from the index on (created_at, id) each time.
func windowFloor(db *gorm.DB, table, alias string, from time.Time) (string, []any, error) {
	if db.Dialector.Name() != "postgres" {
		return alias + ".id >= (SELECT min(id) FROM " + table + " WHERE created_at >= ?)", []any{from}, nil
	}
	floor, err := floors.get(db, table, from)
	if err != nil {
		return "", nil, err
	}
	return alias + ".txid >= ?::text::xid8", []any{strconv.FormatUint(uint64(floor), 10)}, nil
}

// floors remembers the floors of the windows of PostgreSQL's catch-ups, one an hour, so that a
// catch-up reads the index of a fourteen-day window (tens of thousands of entries at a million posts)
// once an hour, not on every page.
//
// A window is widened to start on the hour before it: its floor is then at or below the window's own,
// which is all a floor must be. A floor stays right forever, because it is taken as the lower of the
// window's lowest txid and the horizon (pg_snapshot_xmin) of the same snapshot: a post not yet visible
// then belongs to a transaction still running or not yet begun, whose txid is at or above the horizon;
// and no post's txid or creation time ever changes.
var floors = floorCache{m: map[floorKey]commitOrder{}}

// maxFloors bounds the floors remembered: past it, they are forgotten and read again as needed.
const maxFloors = 4096

type floorCache struct {
	sync.Mutex
	m map[floorKey]commitOrder
}

type floorKey struct {
	pool  weak.Pointer[sql.DB] // the database's pool: tests and tools open several
	table string
	hour  int64 // the window's start, in hours since the epoch
}

// get returns the floor of the posts of table created at or after from.
func (f *floorCache) get(db *gorm.DB, table string, from time.Time) (commitOrder, error) {
	pool, err := db.DB()
	if err != nil {
		return 0, fmt.Errorf("window floor: %w", err)
	}
	start := from.UTC().Truncate(time.Hour)
	key := floorKey{pool: weak.Make(pool), table: table, hour: start.Unix() / 3600}
	f.Lock()
	floor, ok := f.m[key]
	f.Unlock()
	if ok {
		return floor, nil
	}
	// The fence keeps PostgreSQL from turning min() into a scan of the txid index from its start.
	var row struct{ Lowest, Horizon *string }
	if err := db.Raw(`SELECT min(w.txid)::text AS lowest, pg_snapshot_xmin(pg_current_snapshot())::text AS horizon
FROM (SELECT txid FROM `+table+` WHERE created_at >= ? OFFSET 0) w`, start).Scan(&row).Error; err != nil {
		return 0, fmt.Errorf("read the window's floor: %w", err)
	}
	if row.Horizon == nil {
		return 0, fmt.Errorf("read the window's floor: no horizon")
	}
	horizon, err := strconv.ParseUint(*row.Horizon, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("horizon %q: %w", *row.Horizon, err)
	}
	floor = commitOrder(horizon)
	if row.Lowest != nil {
		lowest, err := strconv.ParseUint(*row.Lowest, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("floor %q: %w", *row.Lowest, err)
		}
		floor = min(floor, commitOrder(lowest))
	}
	f.Lock()
	if len(f.m) >= maxFloors {
		clear(f.m)
	}
	f.m[key] = floor
	f.Unlock()
	return floor, nil
}
