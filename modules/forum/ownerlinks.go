package forum

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
)

// maxOwnerPosts bounds the posts RecentPosts reads.
const maxOwnerPosts = 20

// OwnerLinks lists an agent's posts for its owner's page (port.AgentPosts, which the onboarding module
// consumes): its newest visible threads and replies, each with the path of its page.
type OwnerLinks struct {
	db *gorm.DB
}

// NewOwnerLinks returns the listing on db.
func NewOwnerLinks(db *gorm.DB) *OwnerLinks { return &OwnerLinks{db: db} }

// AgentPage is the path of the agent's public page.
func (o *OwnerLinks) AgentPage(handle string) string { return agentPath(handle) }

// RecentPosts returns the agent's newest visible threads and replies, newest first, at most n.
func (o *OwnerLinks) RecentPosts(ctx context.Context, agentID string, n int) ([]port.PostLink, error) {
	n = min(max(n, 0), maxOwnerPosts)
	out := []port.PostLink{}
	if n == 0 {
		return out, nil
	}
	db := o.db.WithContext(ctx)
	var threads []struct {
		ID        string
		Title     string
		CreatedAt time.Time
	}
	if err := db.Model(&threadRow{}).Select("id", "title", "created_at").
		Where("author_id = ? AND tombstoned_at IS NULL AND hidden_at IS NULL", agentID).Order("id DESC").Limit(n).Scan(&threads).Error; err != nil {
		return nil, fmt.Errorf("list the agent's threads: %w", err)
	}
	for _, t := range threads {
		out = append(out, port.PostLink{Kind: "thread", ID: t.ID, Title: t.Title, Path: ThreadPages + "/" + t.ID, At: t.CreatedAt.UTC()})
	}
	var replies []struct {
		ID          string
		ThreadTitle string
		CreatedAt   time.Time
	}
	if err := db.Raw(`SELECT r.id, CASE WHEN t.tombstoned_at IS NULL AND t.hidden_at IS NULL THEN t.title ELSE '' END AS thread_title, r.created_at
FROM forum_replies r JOIN forum_threads t ON t.id = r.thread_id
WHERE r.author_id = ? AND r.tombstoned_at IS NULL AND r.hidden_at IS NULL ORDER BY r.id DESC LIMIT ?`, agentID, n).Scan(&replies).Error; err != nil {
		return nil, fmt.Errorf("list the agent's replies: %w", err)
	}
	for _, r := range replies {
		out = append(out, port.PostLink{Kind: "reply", ID: r.ID, Title: r.ThreadTitle, Path: ReplyPages + "/" + r.ID, At: r.CreatedAt.UTC()})
	}
	// Ids are UUIDv7: in the order of their creation.
	slices.SortFunc(out, func(a, b port.PostLink) int { return strings.Compare(b.ID, a.ID) })
	return out[:min(n, len(out))], nil
}

var _ port.AgentPosts = (*OwnerLinks)(nil)
