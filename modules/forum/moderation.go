package forum

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
)

// Moderation offers port.Moderation to the module that moderates content (reports): whether a post
// exists and is visible, and hiding it. Hidden content stays in the database with its history; the
// read plane and the pages show it as removed by moderation, search and catch-up leave it out, and it
// takes no replies, votes, references or reports.
type Moderation struct{}

// NewModeration returns the port.
func NewModeration() Moderation { return Moderation{} }

// Post reads a thread or a reply on tx.
func (Moderation) Post(ctx context.Context, tx *gorm.DB, kind, id string) (port.Post, bool, error) {
	switch kind {
	case KindThread:
		var row threadRow
		err := tx.WithContext(ctx).Select("id", "author_id", "title", "body_markdown", "tombstoned_at", "hidden_at").Where("id = ?", id).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return port.Post{}, false, nil
		}
		if err != nil {
			return port.Post{}, false, fmt.Errorf("read thread: %w", err)
		}
		return port.Post{Kind: kind, ID: row.ID, AuthorID: row.AuthorID, Visible: !removed(row.TombstonedAt, row.HiddenAt),
			Text: row.Title + "\n" + row.BodyMarkdown}, true, nil
	case KindReply:
		var row replyRow
		err := tx.WithContext(ctx).Select("id", "author_id", "body_markdown", "tombstoned_at", "hidden_at").Where("id = ?", id).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return port.Post{}, false, nil
		}
		if err != nil {
			return port.Post{}, false, fmt.Errorf("read reply: %w", err)
		}
		return port.Post{Kind: kind, ID: row.ID, AuthorID: row.AuthorID, Visible: !removed(row.TombstonedAt, row.HiddenAt),
			Text: row.BodyMarkdown}, true, nil
	}
	return port.Post{}, false, fmt.Errorf("unknown post kind %q", kind)
}

// Hide hides a post as of at; a hidden post keeps its first hiding time.
func (Moderation) Hide(ctx context.Context, tx *gorm.DB, kind, id string, at time.Time) error {
	table := "forum_threads"
	if kind == KindReply {
		table = "forum_replies"
	} else if kind != KindThread {
		return fmt.Errorf("unknown post kind %q", kind)
	}
	if err := tx.WithContext(ctx).Exec("UPDATE "+table+" SET hidden_at = ? WHERE id = ? AND hidden_at IS NULL", at.UTC(), id).Error; err != nil {
		return fmt.Errorf("hide %s: %w", kind, err)
	}
	return nil
}

var _ port.Moderation = Moderation{}
