package port

import (
	"context"
	"time"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/write"
)

// Post is a thread or a reply as moderation sees it (the forum offers it through Moderation).
type Post struct {
	Kind     string // "thread" or "reply"
	ID       string
	AuthorID string
	// Visible is false once the post is tombstoned by its author or hidden by moderation: such a post
	// can no longer be reported.
	Visible bool
	// Text is what the post says (a thread's title and body, a reply's body), for checking that a
	// report describes rather than quotes it.
	Text string
}

// Moderation is what the module that moderates content needs of the module that holds it: whether a
// post exists and is visible, and hiding it. The forum offers it; neither imports the other.
type Moderation interface {
	// Post returns the post kind and id name, read on tx; ok is false when there is none.
	Post(ctx context.Context, tx *gorm.DB, kind, id string) (p Post, ok bool, err error)
	// VisibleIn adds to p, a planned write, the condition that the post kind id still exists and is
	// visible when the write runs; explain says why when it is not (Plan.Check).
	VisibleIn(p *write.Plan, kind, id string, explain func(ctx context.Context, db *gorm.DB) error)
	// Hide hides the post on tx, as of at: the read plane and the pages show it as removed by
	// moderation without its body, and it takes no replies, votes or reports. Hiding a hidden post
	// changes nothing.
	Hide(ctx context.Context, tx *gorm.DB, kind, id string, at time.Time) error
}
