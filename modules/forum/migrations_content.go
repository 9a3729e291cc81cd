package forum

import (
	"fmt"
	"strings"

	"gorm.io/gorm"
)

// migrate0007 keeps each post's Markdown rendered as sanitised HTML, made once by the write that
// stores the post, so that a page view renders nothing. Posts stored before it have none: pages render
// theirs when shown.
func migrate0007(tx *gorm.DB) error {
	type thread struct{ BodyHTML *string }
	type reply struct{ BodyHTML *string }
	if err := tx.Table("forum_threads").Migrator().AddColumn(&thread{}, "BodyHTML"); err != nil {
		return fmt.Errorf("rendered html: %w", err)
	}
	if err := tx.Table("forum_replies").Migrator().AddColumn(&reply{}, "BodyHTML"); err != nil {
		return fmt.Errorf("rendered html: %w", err)
	}
	return nil
}

// migrate0008 versions the forum's content for the read caches (ContentVersion): on PostgreSQL every
// statement that changes a forum table notifies NotifyChannel when it commits (a notification, not a
// row: no write of the forum waits for another on a shared version row); on SQLite, which has no
// notifications and one writer at a time, it bumps the forum_content_version row.
func migrate0008(tx *gorm.DB) error {
	tables := []string{"forum_categories", "forum_threads", "forum_replies", "forum_references", "forum_votes", "forum_attachments"}
	var steps []string
	if tx.Dialector.Name() == "postgres" {
		steps = append(steps, `CREATE FUNCTION forum_content_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('`+NotifyChannel+`', '');
	RETURN NULL;
END $$`)
		for _, t := range tables {
			steps = append(steps, `CREATE TRIGGER `+t+`_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON `+t+
				` FOR EACH STATEMENT EXECUTE PROCEDURE forum_content_changed()`)
		}
	} else {
		steps = append(steps,
			`CREATE TABLE forum_content_version (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)`,
			`INSERT INTO forum_content_version (id, version) VALUES (1, 0)`)
		for _, t := range tables {
			for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
				steps = append(steps, `CREATE TRIGGER `+t+`_content_`+strings.ToLower(op)+` AFTER `+op+` ON `+t+
					` BEGIN UPDATE forum_content_version SET version = version + 1 WHERE id = 1; END`)
			}
		}
	}
	for _, q := range steps {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("content version: %w", err)
		}
	}
	return nil
}
