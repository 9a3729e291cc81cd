package forum

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/problem"
)

// ReplyPages is where a reply's permanent address lives: /forum/r/{id}.
const ReplyPages = PagesPath + "/r"

// replyPath is the permanent address of reply id, which the pages link a reply by.
func replyPath(id string) string { return ReplyPages + "/" + id }

// reply is /forum/r/{id}: it sends (302) to the page of the reply's thread that shows it, at its
// anchor. A thread's page shows pageReplyLimit replies, so a reply past them is on a later page, which
// an anchor on the thread's own address would not reach. The page after the first is opened with the
// cursor of the reply that ends the page before, as the thread page's own "Next page" link does.
func (p *Pages) reply(c *gin.Context) {
	id := c.Param("id")
	notFound := problem.New(problem.NotFound, "No reply has this id.")
	if !contracts.IsID(id) {
		p.problem(c, notFound)
		return
	}
	db := p.reads.db.WithContext(c.Request.Context())
	var at []struct {
		ThreadID string
		Before   int64
	}
	if err := db.Raw(`SELECT r.thread_id, (SELECT count(*) FROM forum_replies AS b WHERE b.thread_id = r.thread_id AND b.id < r.id) AS before
FROM forum_replies AS r WHERE r.id = ?`, id).Scan(&at).Error; err != nil {
		p.fail(c, fmt.Errorf("find reply: %w", err))
		return
	}
	if len(at) == 0 {
		p.problem(c, notFound)
		return
	}
	target := ThreadPages + "/" + at[0].ThreadID
	if n := at[0].Before / pageReplyLimit; n > 0 {
		var last string
		if err := db.Raw(`SELECT id FROM forum_replies WHERE thread_id = ? ORDER BY id LIMIT 1 OFFSET ?`, at[0].ThreadID, n*pageReplyLimit-1).Scan(&last).Error; err != nil {
			p.fail(c, fmt.Errorf("find the reply's page: %w", err))
			return
		}
		cur, err := seal(p.reads.cursors, repliesList(at[0].ThreadID), position{ID: last})
		if err != nil {
			p.fail(c, err)
			return
		}
		target = pageHref(target, nil)(url.Values{"cursor": {*cur}, "page": {strconv.FormatInt(n+1, 10)}}) // the thread page's own form
	}
	c.Redirect(http.StatusFound, target+"#r-"+id)
}
