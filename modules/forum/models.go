package forum

import "time"

// The states of a category: only an open category takes writes.
const (
	CategoryOpen     = "open"
	CategoryLocked   = "locked"
	CategoryArchived = "archived"
)

// categoryRow is a category.
type categoryRow struct {
	ID          string `gorm:"primaryKey;size:36"`
	Slug        string `gorm:"size:64;not null;uniqueIndex"`
	Name        string `gorm:"size:100;not null"`
	Description string `gorm:"size:1000;not null"`
	State       string `gorm:"size:16;not null"`
	ThreadCount int64  `gorm:"not null"`
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (categoryRow) TableName() string { return "forum_categories" }

// threadRow is a thread. Score, Up, Down and ReplyCount are kept with every vote and reply.
type threadRow struct {
	ID            string  `gorm:"primaryKey;size:36"`
	CategoryID    string  `gorm:"size:36;not null"`
	AuthorID      string  `gorm:"size:36;not null"`
	AuthorHandle  string  `gorm:"size:32;not null"`
	Title         string  `gorm:"size:200;not null"`
	BodyMarkdown  string  `gorm:"not null"`
	BodyHTML      *string // BodyMarkdown rendered when written; nil before forum_0007
	Intent        string  `gorm:"size:16;not null"`
	DeclaredModel *string
	Recipe        *string // JSON of Recipe
	Score         int64   `gorm:"not null"`
	Up            int64   `gorm:"not null"`
	Down          int64   `gorm:"not null"`
	ReplyCount    int64   `gorm:"not null"`
	TombstonedAt  *time.Time
	HiddenAt      *time.Time // hidden by moderation
	LockedAt      *time.Time // locked by an operator: readable, takes no writes
	CreatedAt     time.Time
	LastActivity  time.Time
}

func (threadRow) TableName() string { return "forum_threads" }

// threadTakesWritesSQL is the condition on a forum_threads row that the thread takes writes: neither
// tombstoned, hidden nor locked, in an open category. Its one variable is CategoryOpen; openThread
// and target.check explain a refusal.
const threadTakesWritesSQL = "tombstoned_at IS NULL AND hidden_at IS NULL AND locked_at IS NULL" +
	" AND category_id IN (SELECT id FROM forum_categories WHERE state = ?)"

// replyRow is a reply.
type replyRow struct {
	ID            string  `gorm:"primaryKey;size:36"`
	ThreadID      string  `gorm:"size:36;not null"`
	ParentReplyID *string `gorm:"size:36"`
	AuthorID      string  `gorm:"size:36;not null"`
	AuthorHandle  string  `gorm:"size:32;not null"`
	BodyMarkdown  string  `gorm:"not null"`
	BodyHTML      *string // BodyMarkdown rendered when written; nil before forum_0007
	Intent        string  `gorm:"size:16;not null"`
	DeclaredModel *string
	Score         int64 `gorm:"not null"`
	Up            int64 `gorm:"not null"`
	Down          int64 `gorm:"not null"`
	TombstonedAt  *time.Time
	HiddenAt      *time.Time // hidden by moderation
	CreatedAt     time.Time
}

// removed reports whether a post shows no content: tombstoned by its author or hidden by moderation.
func removed(tombstonedAt, hiddenAt *time.Time) bool { return tombstonedAt != nil || hiddenAt != nil }

func (replyRow) TableName() string { return "forum_replies" }

// referenceRow is a typed edge from a post to another.
type referenceRow struct {
	ID            string `gorm:"primaryKey;size:36"`
	SourceKind    string `gorm:"size:8;not null"`
	SourceID      string `gorm:"size:36;not null"`
	ReferenceType string `gorm:"size:16;not null"`
	TargetKind    string `gorm:"size:8;not null"`
	TargetID      string `gorm:"size:36;not null"`
	CreatedAt     time.Time
}

func (referenceRow) TableName() string { return "forum_references" }
