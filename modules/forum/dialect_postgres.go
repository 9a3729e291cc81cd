package forum

import (
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"weak"

	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// postgresSQL is the forum's SQL on PostgreSQL (sqlDialect).
type postgresSQL struct{}

// horizon is the oldest transaction still running (pg_snapshot_xmin).
func (postgresSQL) horizon(db *gorm.DB) (commitOrder, error) {
	var xmin string
	if err := db.Raw("SELECT pg_snapshot_xmin(pg_current_snapshot())::text").Scan(&xmin).Error; err != nil {
		return 0, fmt.Errorf("read the commit horizon: %w", err)
	}
	return parseOrder(xmin)
}

func (postgresSQL) orderColumn(table string) string { return table + ".txid::text" }

func (postgresSQL) afterPosition(table string, order commitOrder, id string) (string, []any) {
	return "(" + table + ".txid, " + table + ".id) > (?::text::xid8, ?)", []any{strconv.FormatUint(uint64(order), 10), id}
}

func (postgresSQL) orderBy(table string) string { return table + ".txid, " + table + ".id" }

// windowFloor: the floor is the lowest txid of the window's posts, read from the index on
// (created_at, txid) (forum_0009), and remembered (floors).
func (postgresSQL) windowFloor(db *gorm.DB, table, alias string, from time.Time) (string, []any, error) {
	floor, err := floors.get(db, table, from)
	if err != nil {
		return "", nil, err
	}
	return alias + ".txid >= ?::text::xid8", []any{strconv.FormatUint(uint64(floor), 10)}, nil
}

// repliesTo: the fences keep the planner from walking every reply in commit order, or every reply
// that answers a reply, looking for them.
func (postgresSQL) repliesTo(mine, column, cond string) string {
	return `SELECT r.id, r.txid FROM ` + mine + ` mine CROSS JOIN LATERAL (SELECT r.id, r.txid FROM forum_replies r
    WHERE r.` + column + ` = mine.id AND r.created_at >= ? AND r.author_id <> ? AND r.hidden_at IS NULL` + cond + ` OFFSET 0) r
  WHERE mine.author_id = ? OFFSET 0`
}

// search ranks the newest maxResults matches (Reads.match), in a read-only transaction planned for
// its words.
func (postgresSQL) search(db *gorm.DB, terms []string, limit, offset int) ([]hitRow, error) {
	var rows []hitRow
	query := strings.Join(terms, " ")
	err := db.Transaction(func(tx *gorm.DB) error {
		// Planned for its words every time: how to find the newest matches depends on how common
		// they are, and a plan made once for any words (a prepared statement's generic plan, after
		// five runs) walks the primary key for a rare word, or reads every match of a common one.
		if err := tx.Exec("SET LOCAL plan_cache_mode = force_custom_plan").Error; err != nil {
			return err
		}
		return tx.Raw(`WITH newest AS (
  SELECT kind, post_id, thread_id, search FROM (
    SELECT 'thread' AS kind, id AS post_id, id AS thread_id, search FROM (
      SELECT id, search FROM forum_threads
      WHERE tombstoned_at IS NULL AND hidden_at IS NULL AND search @@ plainto_tsquery('english', ?)
      ORDER BY id DESC LIMIT ?) t
    UNION ALL
    SELECT 'reply', id, thread_id, search FROM (
      SELECT id, thread_id, search FROM forum_replies
      WHERE tombstoned_at IS NULL AND hidden_at IS NULL AND search @@ plainto_tsquery('english', ?)
      ORDER BY id DESC LIMIT ?) r
  ) m ORDER BY post_id DESC LIMIT ?
), page AS (
  SELECT kind, post_id, thread_id, ts_rank(search, plainto_tsquery('english', ?)) AS rank FROM newest
  ORDER BY rank DESC, post_id DESC LIMIT ? OFFSET ?
)
SELECT page.kind, page.post_id, page.thread_id,
  CASE WHEN t.tombstoned_at IS NULL AND t.hidden_at IS NULL THEN t.title ELSE '' END AS title,
  ts_headline('english', CASE WHEN page.kind = 'reply' THEN r.body_markdown ELSE t.body_markdown END, plainto_tsquery('english', ?), ?) AS snippet,
  COALESCE(CASE WHEN page.kind = 'reply' THEN r.body_markdown ELSE t.body_markdown END, '') AS body_markdown,
  CASE WHEN page.kind = 'reply' THEN r.author_handle ELSE t.author_handle END AS author_handle,
  c.slug AS category_slug, c.name AS category_name,
  CASE WHEN page.kind = 'reply' THEN r.created_at ELSE t.created_at END AS created_at
FROM page
JOIN forum_threads t ON t.id = page.thread_id
JOIN forum_categories c ON c.id = t.category_id
LEFT JOIN forum_replies r ON page.kind = 'reply' AND r.id = page.post_id
ORDER BY page.rank DESC, page.post_id DESC`, query, maxResults, query, maxResults, maxResults, query, limit, offset, query, headlineOptions).Scan(&rows).Error
	}, &sql.TxOptions{ReadOnly: true})
	return rows, err
}

// shareLock: a hide under way is waited for (and then seen), and one that comes later waits.
func (postgresSQL) shareLock() string { return " FOR SHARE" }

func (postgresSQL) notifies() bool { return true }

func (postgresSQL) listenDSN(db *gorm.DB) string {
	if d, ok := db.Dialector.(*postgres.Dialector); ok && d.Config != nil {
		return d.DSN
	}
	return ""
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
