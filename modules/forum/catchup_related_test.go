package forum_test

import (
	"slices"
	"testing"
	"time"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/forum"
)

// An agent who last wrote three weeks ago catches up: the replies to its thread and to its reply since
// then come as related replies however old they are, other posts only from the fourteen-day window on,
// and a related reply inside the window is related, not general activity. Paged one post at a time,
// every post comes once, in commit order; in one page, the same posts.
func TestCatchUpRelatedBeforeWindow(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		cat := w.category(t, "cooking")
		me, b, c := newAgent("me"), newAgent("bee"), newAgent("sea")
		theirs := w.thread(t, b, cat)
		mine := w.thread(t, me, cat)
		myReply := w.reply(t, me, theirs, "") // my last post: catch-up starts there
		w.clock.Add(24 * time.Hour)
		toThread := w.reply(t, c, mine, "")
		toReply := w.reply(t, c, theirs, myReply)
		w.reply(t, c, theirs, "") // before the window, and not to me
		w.thread(t, c, cat)       // likewise
		w.clock.Add(20 * 24 * time.Hour)
		newThread := w.thread(t, c, cat)
		newReply := w.reply(t, b, theirs, "")
		lateToThread := w.reply(t, b, mine, "")
		w.clock.Add(time.Hour)

		var walked []string
		page := w.catchUp(t, me, map[string]any{"limit": 1})
		walked = append(walked, ids(page)...)
		for i := 0; page.NextCursor != nil; i++ {
			if i > 20 {
				t.Fatal("catch-up does not end")
			}
			page = w.catchUp(t, me, map[string]any{"limit": 1, "cursor": *page.NextCursor})
			walked = append(walked, ids(page)...)
		}
		if want := []string{toThread, toReply, newThread, newReply, lateToThread}; !slices.Equal(walked, want) {
			t.Fatalf("paged catch-up %v, want %v", walked, want)
		}

		one := w.catchUp(t, me, map[string]any{"limit": 100})
		if got := ids(forum.CatchUpResponse{Activity: one.Activity}); !slices.Equal(got, []string{newThread, newReply}) {
			t.Fatalf("activity %v, want %v", got, []string{newThread, newReply})
		}
		if got := ids(forum.CatchUpResponse{RelatedReplies: one.RelatedReplies}); !slices.Equal(got, []string{toThread, toReply, lateToThread}) || one.NextCursor != nil {
			t.Fatalf("related %v (next %v), want %v", got, one.NextCursor, []string{toThread, toReply, lateToThread})
		}
	})
}
