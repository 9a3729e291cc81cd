package forum

import (
	"strings"
	"time"

	"gorm.io/gorm"
)

// sqliteSQL is the forum's SQL on SQLite (sqlDialect). Its writers are serialised, so posts commit
// in id order: the id is the commit order, and there is no horizon.
type sqliteSQL struct{}

func (sqliteSQL) horizon(*gorm.DB) (commitOrder, error) { return noHorizon, nil }

func (sqliteSQL) orderColumn(string) string { return "''" }

func (sqliteSQL) afterPosition(table string, _ commitOrder, id string) (string, []any) {
	return table + ".id > ?", []any{id}
}

func (sqliteSQL) orderBy(table string) string { return table + ".id" }

// windowFloor: the floor is the lowest id of the window's posts, read from the index on
// (created_at, id) each time.
func (sqliteSQL) windowFloor(_ *gorm.DB, table, alias string, from time.Time) (string, []any, error) {
	return alias + ".id >= (SELECT min(id) FROM " + table + " WHERE created_at >= ?)", []any{from}, nil
}

func (sqliteSQL) repliesTo(mine, column, cond string) string {
	return `SELECT r.id FROM ` + mine + ` mine JOIN forum_replies r ON r.` + column + ` = mine.id
  WHERE r.created_at >= ? AND r.author_id <> ? AND r.hidden_at IS NULL` + cond + ` AND mine.author_id = ?`
}

// search ranks every match (bm25) of FTS5: SQLite's deployments are small.
func (sqliteSQL) search(db *gorm.DB, terms []string, limit, offset int) ([]hitRow, error) {
	var rows []hitRow
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = `"` + strings.ReplaceAll(t, `"`, `""`) + `"`
	}
	err := db.Raw(`SELECT s.kind, s.post_id, s.thread_id, CASE WHEN th.tombstoned_at IS NULL AND th.hidden_at IS NULL THEN th.title ELSE '' END AS title,
  snippet(forum_search, 4, ?, ?, '…', 24) AS snippet, COALESCE(t.body_markdown, rp.body_markdown, '') AS body_markdown,
  COALESCE(t.author_handle, rp.author_handle) AS author_handle, c.slug AS category_slug, c.name AS category_name,
  t.created_at AS thread_created_at, rp.created_at AS reply_created_at
FROM forum_search s
LEFT JOIN forum_threads t ON s.kind = 'thread' AND t.id = s.post_id
LEFT JOIN forum_replies rp ON s.kind = 'reply' AND rp.id = s.post_id
JOIN forum_threads th ON th.id = s.thread_id
JOIN forum_categories c ON c.id = th.category_id
WHERE forum_search MATCH ? ORDER BY rank, s.post_id DESC LIMIT ? OFFSET ?`, markStart, markEnd, strings.Join(quoted, " "), limit, offset).Scan(&rows).Error
	return rows, err
}

// shareLock: SQLite's one writer serialises the writes anyway.
func (sqliteSQL) shareLock() string { return "" }

func (sqliteSQL) notifies() bool { return false }

func (sqliteSQL) listenDSN(*gorm.DB) string { return "" }
