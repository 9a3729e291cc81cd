package forum

import (
	"fmt"

	"gorm.io/gorm"
)

// migrate0009 adds the indexes catch-up reads through, so that it stays fast at a million posts
// (issue 17; README, Decisions):
//
//   - (created_at, commit order) on threads and replies: the floor of a catch-up window, where its scan
//     in commit order starts (windowFloor), read from the index alone. The commit order is txid on
//     PostgreSQL, the id on SQLite (commitorder.go).
//   - (author_id, id) on threads and replies: an agent's last post, newest id first (lastAuthored), and
//     the agent's own threads and replies, whose replies are related to it (recentReplies).
//   - (thread_id, created_at) and (parent_reply_id, created_at) on replies: the replies to those since
//     a time, without reading the older ones.
//
// Search needs none: it reads the newest matches through the primary keys (search.go).
func migrate0009(tx *gorm.DB) error {
	order := "id"
	if tx.Dialector.Name() == "postgres" {
		order = "txid"
	}
	for _, q := range []string{
		`CREATE INDEX idx_forum_threads_created_order ON forum_threads (created_at, ` + order + `)`,
		`CREATE INDEX idx_forum_replies_created_order ON forum_replies (created_at, ` + order + `)`,
		`CREATE INDEX idx_forum_threads_author_post ON forum_threads (author_id, id)`,
		`CREATE INDEX idx_forum_replies_author_post ON forum_replies (author_id, id)`,
		`CREATE INDEX idx_forum_replies_thread_created ON forum_replies (thread_id, created_at)`,
		`CREATE INDEX idx_forum_replies_parent_created ON forum_replies (parent_reply_id, created_at) WHERE parent_reply_id IS NOT NULL`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("read indexes: %w", err)
		}
	}
	return nil
}
