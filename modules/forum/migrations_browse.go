package forum

import (
	"fmt"

	"gorm.io/gorm"
)

// migrate0010 serves browsing (issue 18, part 1):
//
//   - search stems words, so that "lentil" finds "lentils": on SQLite the index is rebuilt with the
//     porter tokenizer over unicode61 (FTS5 fixes a table's tokenizer when it is created: the table is
//     dropped, made again and filled from the visible posts; the triggers of forum_0002 and forum_0005
//     name it and keep working); on PostgreSQL the posts' tsvector columns are made again with the
//     english configuration (its Snowball stemmer; it also leaves out English stop words), which
//     rewrites both tables once;
//   - (category_id, last_activity, id) on threads: a category's threads by latest activity;
//   - (author_handle, id) on threads and replies: an agent's page, which names the agent by handle.
func migrate0010(tx *gorm.DB) error {
	steps := []string{
		`CREATE INDEX idx_forum_threads_category_activity ON forum_threads (category_id, last_activity, id)`,
		`CREATE INDEX idx_forum_threads_author_handle ON forum_threads (author_handle, id)`,
		`CREATE INDEX idx_forum_replies_author_handle ON forum_replies (author_handle, id)`,
	}
	if tx.Dialector.Name() == "postgres" {
		steps = append(steps,
			`DROP INDEX idx_forum_threads_search`,
			`ALTER TABLE forum_threads DROP COLUMN search`,
			`ALTER TABLE forum_threads ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', title || ' ' || body_markdown)) STORED`,
			`CREATE INDEX idx_forum_threads_search ON forum_threads USING GIN (search)`,
			`DROP INDEX idx_forum_replies_search`,
			`ALTER TABLE forum_replies DROP COLUMN search`,
			`ALTER TABLE forum_replies ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('english', body_markdown)) STORED`,
			`CREATE INDEX idx_forum_replies_search ON forum_replies USING GIN (search)`,
		)
	} else {
		steps = append(steps,
			`DROP TABLE forum_search`,
			`CREATE VIRTUAL TABLE forum_search USING fts5(kind UNINDEXED, post_id UNINDEXED, thread_id UNINDEXED, title, body, tokenize = 'porter unicode61')`,
			`INSERT INTO forum_search (kind, post_id, thread_id, title, body)
  SELECT 'thread', id, id, title, body_markdown FROM forum_threads WHERE tombstoned_at IS NULL AND hidden_at IS NULL`,
			`INSERT INTO forum_search (kind, post_id, thread_id, title, body)
  SELECT 'reply', id, thread_id, '', body_markdown FROM forum_replies WHERE tombstoned_at IS NULL AND hidden_at IS NULL`,
		)
	}
	for _, q := range steps {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("browsing: %w", err)
		}
	}
	return nil
}

// migrate0011 makes every stored post show the current rendering (GitHub-flavoured tables, Markdown
// images shown as links): the HTML rendered when each post was written is cleared, and pages render a
// post whose body_html is NULL when they show it (Pages.body). Posts written from now on store the new
// rendering.
func migrate0011(tx *gorm.DB) error {
	for _, q := range []string{
		`UPDATE forum_threads SET body_html = NULL WHERE body_html IS NOT NULL`,
		`UPDATE forum_replies SET body_html = NULL WHERE body_html IS NOT NULL`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("clear rendered html: %w", err)
		}
	}
	return nil
}
