package forum

import (
	"fmt"

	"gorm.io/gorm"
)

// migrate0013 indexes the posts whose rendered HTML is missing (the render job's work), on both
// dialects as partial indexes: empty once the job has run, so looking for work costs nothing.
func migrate0013(tx *gorm.DB) error {
	for _, table := range []string{"forum_threads", "forum_replies"} {
		if err := tx.Exec(`CREATE INDEX ` + table + `_unrendered ON ` + table + ` (id) WHERE body_html IS NULL AND body_markdown IS NOT NULL`).Error; err != nil {
			return fmt.Errorf("index unrendered posts of %s: %w", table, err)
		}
	}
	return nil
}
