package forum

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/svcforum/svc/contracts/write"

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

// postSQL reads a post, whether it is removed, and its images' alt texts and captions in one
// statement (one row per image, or one with NULLs for none): a planned report reads it before its
// batch, and one round trip is all it may spend.
const postSQL = `SELECT p.id, p.author_id, %s, p.body_markdown, p.declared_model, %s,
  (p.tombstoned_at IS NOT NULL OR p.hidden_at IS NOT NULL) AS removed, a.alt_text, a.caption
FROM %s AS p LEFT JOIN forum_attachments AS a ON a.post_kind = ? AND a.post_id = p.id
WHERE p.id = ? ORDER BY a.position`

// Post reads a thread or a reply on tx. Its text is everything the author wrote, one part per line:
// title, body, declared model, recipe, and the alt texts and captions of its images.
func (Moderation) Post(ctx context.Context, tx *gorm.DB, kind, id string) (port.Post, bool, error) {
	var sql string
	switch kind {
	case KindThread:
		sql = fmt.Sprintf(postSQL, "p.title", "p.recipe", "forum_threads")
	case KindReply:
		sql = fmt.Sprintf(postSQL, "''", "CAST(NULL AS TEXT)", "forum_replies")
	default:
		return port.Post{}, false, fmt.Errorf("unknown post kind %q", kind)
	}
	rows, err := tx.WithContext(ctx).Raw(sql, kind, id).Rows()
	if err != nil {
		return port.Post{}, false, fmt.Errorf("read %s: %w", kind, err)
	}
	defer rows.Close()
	var post port.Post
	var parts []string
	found := false
	for rows.Next() {
		var postID, author, title, body string
		var model, recipe, alt, caption *string
		var isRemoved bool
		if err := rows.Scan(&postID, &author, &title, &body, &model, &recipe, &isRemoved, &alt, &caption); err != nil {
			return port.Post{}, false, fmt.Errorf("read %s: %w", kind, err)
		}
		if !found {
			found = true
			post = port.Post{Kind: kind, ID: postID, AuthorID: author, Visible: !isRemoved}
			parts = []string{title, body}
			if model != nil {
				parts = append(parts, *model)
			}
			if recipe != nil {
				texts, err := recipeTexts(*recipe)
				if err != nil {
					return port.Post{}, false, fmt.Errorf("read %s: %w", kind, err)
				}
				parts = append(parts, texts...)
			}
		}
		if alt != nil {
			parts = append(parts, *alt)
			if caption != nil {
				parts = append(parts, *caption)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return port.Post{}, false, fmt.Errorf("read %s: %w", kind, err)
	}
	if !found {
		return port.Post{}, false, nil
	}
	post.Text = strings.Join(parts, "\n")
	return post, true, nil
}

// recipeTexts returns the texts the author wrote in a stored recipe, one per part, as written: the stored
// JSON escapes some characters (&, <, >, quotes, line breaks), so a copy of a step would not match it.
func recipeTexts(stored string) ([]string, error) {
	var r Recipe
	if err := json.Unmarshal([]byte(stored), &r); err != nil {
		return nil, fmt.Errorf("decode recipe: %w", err)
	}
	var out []string
	for _, s := range r.texts() {
		out = append(out, s)
	}
	return out, nil
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

// VisibleIn adds to a planned write the condition that the post is still there and neither
// tombstoned nor hidden when the write runs (Post's Visible, checked again in the write). On
// PostgreSQL the post's row is share-locked until the write commits, so a hide that is under way is
// waited for (and then seen), and one that comes later waits for the write: a report never lands on a
// post hidden while it ran. SQLite's one writer serialises them anyway.
func (Moderation) VisibleIn(p *write.Plan, kind, id string, explain func(context.Context, *gorm.DB) error) {
	table := "forum_threads"
	switch kind {
	case KindThread:
	case KindReply:
		table = "forum_replies"
	default:
		p.Refuse(fmt.Errorf("unknown post kind %q", kind))
		return
	}
	lock := dialectNamed(p.Dialect()).shareLock()
	p.Check(explain, "SELECT EXISTS (SELECT 1 FROM "+table+" WHERE id = ? AND tombstoned_at IS NULL AND hidden_at IS NULL"+lock+")", id)
}

var _ port.Moderation = Moderation{}
