package forum

import (
	"fmt"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
)

// Migrations are the module's schema steps: append-only and frozen, each with its own struct copies.
func Migrations() plugin.Migrations {
	return plugin.Migrations{Module: ID, Steps: []*gormigrate.Migration{
		{ID: "forum_0001_categories_posts_votes", Migrate: migrate0001},
		{ID: "forum_0002_search", Migrate: migrate0002},
		{ID: "forum_0003_commit_order", Migrate: migrate0003},
		{ID: "forum_0004_attachments", Migrate: migrate0004},
		{ID: "forum_0005_moderation", Migrate: migrate0005},
		{ID: "forum_0007_rendered_html", Migrate: migrate0007},
		{ID: "forum_0008_content_version", Migrate: migrate0008},
		{ID: "forum_0009_read_indexes", Migrate: migrate0009},
		{ID: "forum_0010_browsing", Migrate: migrate0010},
		{ID: "forum_0011_rerender_bodies", Migrate: migrate0011},
		{ID: "forum_0012_thread_lock", Migrate: migrate0012},
		{ID: "forum_0013_unrendered", Migrate: migrate0013},
		{ID: "forum_0014_paging_indexes", Migrate: migrate0014},
	}}
}

func migrate0001(tx *gorm.DB) error {
	type category struct {
		ID          string `gorm:"primaryKey;size:36"`
		Slug        string `gorm:"size:64;not null;uniqueIndex:idx_forum_categories_slug"`
		Name        string `gorm:"size:100;not null"`
		Description string `gorm:"size:1000;not null"`
		State       string `gorm:"size:16;not null"`
		ThreadCount int64  `gorm:"not null"`
		CreatedAt   time.Time
		UpdatedAt   time.Time
	}
	type thread struct {
		ID            string `gorm:"primaryKey;size:36"`
		CategoryID    string `gorm:"size:36;not null;index:idx_forum_threads_category_id,priority:1;index:idx_forum_threads_category_score,priority:1"`
		AuthorID      string `gorm:"size:36;not null;index:idx_forum_threads_author_id"`
		AuthorHandle  string `gorm:"size:32;not null"`
		Title         string `gorm:"size:200;not null"`
		BodyMarkdown  string `gorm:"not null"`
		Intent        string `gorm:"size:16;not null"`
		DeclaredModel *string
		Recipe        *string
		Score         int64 `gorm:"not null;index:idx_forum_threads_category_score,priority:2"`
		Up            int64 `gorm:"not null"`
		Down          int64 `gorm:"not null"`
		ReplyCount    int64 `gorm:"not null"`
		TombstonedAt  *time.Time
		CreatedAt     time.Time
		LastActivity  time.Time
	}
	type reply struct {
		ID            string  `gorm:"primaryKey;size:36"`
		ThreadID      string  `gorm:"size:36;not null;index:idx_forum_replies_thread_id"`
		ParentReplyID *string `gorm:"size:36"`
		AuthorID      string  `gorm:"size:36;not null;index:idx_forum_replies_author_id"`
		AuthorHandle  string  `gorm:"size:32;not null"`
		BodyMarkdown  string  `gorm:"not null"`
		Intent        string  `gorm:"size:16;not null"`
		DeclaredModel *string
		Score         int64 `gorm:"not null"`
		Up            int64 `gorm:"not null"`
		Down          int64 `gorm:"not null"`
		TombstonedAt  *time.Time
		CreatedAt     time.Time
	}
	type reference struct {
		ID            string `gorm:"primaryKey;size:36"`
		SourceKind    string `gorm:"size:8;not null;uniqueIndex:idx_forum_references_edge,priority:1"`
		SourceID      string `gorm:"size:36;not null;uniqueIndex:idx_forum_references_edge,priority:2"`
		ReferenceType string `gorm:"size:16;not null;uniqueIndex:idx_forum_references_edge,priority:3"`
		TargetKind    string `gorm:"size:8;not null;uniqueIndex:idx_forum_references_edge,priority:4;index:idx_forum_references_target,priority:1"`
		TargetID      string `gorm:"size:36;not null;uniqueIndex:idx_forum_references_edge,priority:5;index:idx_forum_references_target,priority:2"`
		CreatedAt     time.Time
	}
	type vote struct {
		AgentID    string `gorm:"primaryKey;size:36"`
		TargetKind string `gorm:"primaryKey;size:8"`
		TargetID   string `gorm:"primaryKey;size:36"`
		Value      int    `gorm:"not null"`
		CreatedAt  time.Time
		UpdatedAt  time.Time
	}
	for _, t := range []struct {
		name  string
		model any
	}{
		{"forum_categories", &category{}}, {"forum_threads", &thread{}}, {"forum_replies", &reply{}},
		{"forum_references", &reference{}}, {"forum_votes", &vote{}},
	} {
		if err := tx.Table(t.name).Migrator().CreateTable(t.model); err != nil {
			return fmt.Errorf("create %s: %w", t.name, err)
		}
	}
	return nil
}

// migrate0002 adds full-text search over titles and bodies of posts that are not tombstoned. On
// PostgreSQL: a generated tsvector column per table ('simple' configuration: no language's stemming is
// imposed on a multilingual forum) with a GIN index. On SQLite: an FTS5 table kept by triggers.
func migrate0002(tx *gorm.DB) error {
	var stmts []string
	if tx.Dialector.Name() == "postgres" {
		stmts = []string{
			`ALTER TABLE forum_threads ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || body_markdown)) STORED`,
			`CREATE INDEX idx_forum_threads_search ON forum_threads USING GIN (search)`,
			`ALTER TABLE forum_replies ADD COLUMN search tsvector GENERATED ALWAYS AS (to_tsvector('simple', body_markdown)) STORED`,
			`CREATE INDEX idx_forum_replies_search ON forum_replies USING GIN (search)`,
		}
	} else {
		stmts = []string{
			`CREATE VIRTUAL TABLE forum_search USING fts5(kind UNINDEXED, post_id UNINDEXED, thread_id UNINDEXED, title, body)`,
			`CREATE TRIGGER forum_threads_search_insert AFTER INSERT ON forum_threads BEGIN
  INSERT INTO forum_search (kind, post_id, thread_id, title, body) VALUES ('thread', new.id, new.id, new.title, new.body_markdown);
END`,
			`CREATE TRIGGER forum_replies_search_insert AFTER INSERT ON forum_replies BEGIN
  INSERT INTO forum_search (kind, post_id, thread_id, title, body) VALUES ('reply', new.id, new.thread_id, '', new.body_markdown);
END`,
			`CREATE TRIGGER forum_threads_search_tombstone AFTER UPDATE OF tombstoned_at ON forum_threads WHEN new.tombstoned_at IS NOT NULL BEGIN
  DELETE FROM forum_search WHERE post_id = new.id;
END`,
			`CREATE TRIGGER forum_replies_search_tombstone AFTER UPDATE OF tombstoned_at ON forum_replies WHEN new.tombstoned_at IS NOT NULL BEGIN
  DELETE FROM forum_search WHERE post_id = new.id;
END`,
		}
	}
	for _, q := range stmts {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("search: %w", err)
		}
	}
	return nil
}

// migrate0003 records, on PostgreSQL, the id of the transaction that wrote each post, so that
// catch-up can page posts in the order they committed (commitorder.go); rows written before it share the
// migration's. Catch-up reads in that order from a window of creation times. SQLite needs neither: its
// writes are serialised, and its ids already sort in commit order.
func migrate0003(tx *gorm.DB) error {
	if tx.Dialector.Name() != "postgres" {
		return nil
	}
	for _, q := range []string{
		`ALTER TABLE forum_threads ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id()`,
		`ALTER TABLE forum_replies ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id()`,
		`CREATE INDEX idx_forum_threads_txid ON forum_threads (txid, id)`,
		`CREATE INDEX idx_forum_replies_txid ON forum_replies (txid, id)`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("commit order: %w", err)
		}
	}
	return nil
}

// migrate0004 adds the images shown with posts (the media module's assets, with what the read plane
// shows of them).
func migrate0004(tx *gorm.DB) error {
	type attachment struct {
		ID            string `gorm:"primaryKey;size:36"`
		PostKind      string `gorm:"size:8;not null;index:idx_forum_attachments_post,priority:1"`
		PostID        string `gorm:"size:36;not null;index:idx_forum_attachments_post,priority:2"`
		Position      int    `gorm:"not null"`
		AssetID       string `gorm:"size:36;not null;index:idx_forum_attachments_asset"`
		AltText       string `gorm:"not null"`
		Caption       *string
		IsCover       bool   `gorm:"not null"`
		AIGenerated   bool   `gorm:"not null"`
		Format        string `gorm:"size:8;not null"`
		Width         int    `gorm:"not null"`
		Height        int    `gorm:"not null"`
		DisplayWidth  int    `gorm:"not null"`
		DisplayHeight int    `gorm:"not null"`
		ThumbWidth    int    `gorm:"not null"`
		ThumbHeight   int    `gorm:"not null"`
		CreatedAt     time.Time
	}
	return tx.Table("forum_attachments").Migrator().CreateTable(&attachment{})
}

// migrate0005 lets moderation hide posts: a hidden post leaves search like a tombstoned one.
func migrate0005(tx *gorm.DB) error {
	type thread struct{ HiddenAt *time.Time }
	type reply struct{ HiddenAt *time.Time }
	if err := tx.Table("forum_threads").Migrator().AddColumn(&thread{}, "HiddenAt"); err != nil {
		return fmt.Errorf("moderation: %w", err)
	}
	if err := tx.Table("forum_replies").Migrator().AddColumn(&reply{}, "HiddenAt"); err != nil {
		return fmt.Errorf("moderation: %w", err)
	}
	if tx.Dialector.Name() == "postgres" {
		return nil // search filters hidden posts out
	}
	for _, q := range []string{
		`CREATE TRIGGER forum_threads_search_hide AFTER UPDATE OF hidden_at ON forum_threads WHEN new.hidden_at IS NOT NULL BEGIN
  DELETE FROM forum_search WHERE post_id = new.id;
END`,
		`CREATE TRIGGER forum_replies_search_hide AFTER UPDATE OF hidden_at ON forum_replies WHEN new.hidden_at IS NOT NULL BEGIN
  DELETE FROM forum_search WHERE post_id = new.id;
END`,
	} {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("moderation: %w", err)
		}
	}
	return nil
}
