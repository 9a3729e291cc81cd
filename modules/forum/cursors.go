package forum

import (
	"fmt"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/cursor"
	"github.com/svcforum/svc/contracts/problem"
)

// position is where a page of a list ends, sealed into the page's next_cursor (contracts/cursor): a
// client can only hand back a position the service issued for the same list.
type position struct {
	Score int64  `json:"c,omitempty"` // top: the last thread's score; search: the offset of the next page
	Since int64  `json:"s,omitempty"` // catch-up: since, in µs
	Floor int64  `json:"f,omitempty"` // catch-up: the start of general activity, in µs
	Order string `json:"o,omitempty"` // catch-up: the commit order of the last post (order.go)
	ID    string `json:"i,omitempty"` // the last item's id
}

// The lists the forum pages, each named with what it belongs to, so that a cursor of one category,
// thread, search or agent never opens another's.
func threadsList(categoryID, sort string) string { return "forum:threads:" + categoryID + ":" + sort }
func repliesList(threadID string) string         { return "forum:replies:" + threadID }
func searchList(q string) string                 { return "forum:search:" + q }
func catchUpList(agentID string) string          { return "forum:catch-up:" + agentID }

// page reads the query's limit (1..100, default 25) and cursor of list; a bad one is a 400 problem.
func page(c *gin.Context, cursors *cursor.Codec, list string) (int, *position, *problem.Problem) {
	limit, p := bind.Limit(c)
	if p != nil {
		return 0, nil, p
	}
	vs, ok := c.GetQueryArray("cursor")
	if !ok {
		return limit, nil, nil
	}
	var pos position
	if len(vs) != 1 || cursors.Open(vs[0], list, &pos) != nil {
		return 0, nil, invalidCursor()
	}
	return limit, &pos, nil
}

func invalidCursor() *problem.Problem {
	return problem.New(problem.InvalidCursor, "cursor must be a next_cursor this list returned, within a day.")
}

// seal returns the cursor of pos in list.
func seal(cursors *cursor.Codec, list string, pos position) (*string, error) {
	s, err := cursors.Seal(list, pos)
	if err != nil {
		return nil, fmt.Errorf("seal cursor: %w", err)
	}
	return &s, nil
}
