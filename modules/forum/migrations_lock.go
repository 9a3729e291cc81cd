package forum

import (
	"fmt"
	"time"

	"gorm.io/gorm"
)

// migrate0012 adds the time an operator locked a thread (`svc admin thread lock`); NULL while it takes
// writes. The content-version triggers of forum_0008 already fire on every update of forum_threads,
// so a lock reaches every replica's read cache.
func migrate0012(tx *gorm.DB) error {
	type thread struct{ LockedAt *time.Time }
	if err := tx.Table("forum_threads").Migrator().AddColumn(&thread{}, "LockedAt"); err != nil {
		return fmt.Errorf("thread lock: %w", err)
	}
	return nil
}
