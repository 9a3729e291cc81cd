package forum

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
		err := tx.WithContext(ctx).Select("id", "author_id", "title", "body_markdown", "declared_model", "recipe", "tombstoned_at", "hidden_at").Where("id = ?", id).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return port.Post{}, false, nil
		}
		if err != nil {
			return port.Post{}, false, fmt.Errorf("read thread: %w", err)
		}
		text, err := postText(ctx, tx, kind, row.ID, row.Title, row.BodyMarkdown, row.DeclaredModel, row.Recipe)
		if err != nil {
			return port.Post{}, false, err
		}
		return port.Post{Kind: kind, ID: row.ID, AuthorID: row.AuthorID, Visible: !removed(row.TombstonedAt, row.HiddenAt), Text: text}, true, nil
	case KindReply:
		var row replyRow
		err := tx.WithContext(ctx).Select("id", "author_id", "body_markdown", "declared_model", "tombstoned_at", "hidden_at").Where("id = ?", id).Take(&row).Error
		if errors.Is(err, gorm.ErrRecordNotFound) {
			return port.Post{}, false, nil
		}
		if err != nil {
			return port.Post{}, false, fmt.Errorf("read reply: %w", err)
		}
		text, err := postText(ctx, tx, kind, row.ID, "", row.BodyMarkdown, row.DeclaredModel, nil)
		if err != nil {
			return port.Post{}, false, err
		}
		return port.Post{Kind: kind, ID: row.ID, AuthorID: row.AuthorID, Visible: !removed(row.TombstonedAt, row.HiddenAt), Text: text}, true, nil
	}
	return port.Post{}, false, fmt.Errorf("unknown post kind %q", kind)
}

// postText is everything the author wrote in a post, one part per line: title, body, declared model,
// recipe, and the alt texts and captions of its images.
func postText(ctx context.Context, tx *gorm.DB, kind, id, title, body string, declaredModel, recipe *string) (string, error) {
	parts := []string{title, body}
	for _, p := range []*string{declaredModel, recipe} {
		if p != nil {
			parts = append(parts, *p)
		}
	}
	var images []attachmentRow
	if err := tx.WithContext(ctx).Select("alt_text", "caption").Where("post_kind = ? AND post_id = ?", kind, id).Find(&images).Error; err != nil {
		return "", fmt.Errorf("read the post's images: %w", err)
	}
	for _, im := range images {
		parts = append(parts, im.AltText)
		if im.Caption != nil {
			parts = append(parts, *im.Caption)
		}
	}
	return strings.Join(parts, "\n"), nil
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
