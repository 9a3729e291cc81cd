package forum

import (
	"fmt"
	"net/url"
	"strconv"

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
	Order string `json:"o,omitempty"` // catch-up: the commit order of the last post (commitorder.go)
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

// maxPageNumber bounds the pages' page parameter.
const maxPageNumber = 1_000_000

// beforeList names the cursors that open the page before a position of list, so that a next cursor
// never opens a previous page, or the other way round.
func beforeList(list string) string { return list + ":before" }

// pageAt is where a page of a list starts (after the position of a cursor, before the position of a
// before cursor, or at the start of the list) and its number, counted from the first page.
type pageAt struct {
	pos    *position
	back   bool
	number int
}

// pageStart reads a page's limit, its cursor or before cursor, and its number (page, given with a
// cursor, shown only: the list is paged by its positions). A bad one is a 400 problem.
func pageStart(c *gin.Context, cursors *cursor.Codec, list string) (int, pageAt, *problem.Problem) {
	limit, cur, prob := page(c, cursors, list)
	if prob != nil {
		return 0, pageAt{}, prob
	}
	at := pageAt{pos: cur, number: 1}
	if vs, ok := c.GetQueryArray("before"); ok {
		var pos position
		if cur != nil || len(vs) != 1 || cursors.Open(vs[0], beforeList(list), &pos) != nil {
			return 0, pageAt{}, problem.New(problem.InvalidCursor, "before must be a previous page's cursor this list returned, within a day, and without cursor.")
		}
		at.pos, at.back = &pos, true
	}
	if vs, ok := c.GetQueryArray("page"); ok {
		n, err := strconv.Atoi(vs[0])
		if len(vs) != 1 || err != nil || n < 1 || n > maxPageNumber || strconv.Itoa(n) != vs[0] {
			return 0, pageAt{}, problem.Newf(problem.BadRequest, "page must be an integer from 1 to %d, given once.", maxPageNumber)
		}
		at.number = n
	}
	if at.pos == nil {
		at.number = 1 // the start of the list is its first page
	}
	return limit, at, nil
}

// pager is a page's place in its list, as the page shows it: its number, the number of its first item,
// and the links to the first, previous and next pages (empty when there is none).
type pager struct {
	Number   int
	Start    int
	FirstURL string
	PrevURL  string
	NextURL  string
}

// pager returns the links of the page at `at` of list, whose items run from the position first to
// last (nil on an empty page), with more items beyond them the way the page was read. href makes the
// address of a page of the same list from the parameters that page it.
func (at pageAt) pager(cursors *cursor.Codec, list string, limit int, first, last *position, more bool, href func(url.Values) string) (pager, error) {
	hasPrev, hasNext := at.pos != nil, more
	if at.back {
		hasPrev, hasNext = more, last != nil
	}
	out := pager{Number: at.number}
	switch {
	case !hasPrev:
		out.Number = 1 // nothing is before it: whatever its address said, it is the first page
	case out.Number < 2:
		out.Number = 2
	}
	out.Start = (out.Number-1)*limit + 1
	if hasPrev {
		out.FirstURL = href(url.Values{})
		out.PrevURL = out.FirstURL
		// The previous page is the one before this page's first item, whatever the page's number
		// says: the number travels in the address only to be shown, and posts made since (or a
		// cursor from the JSON plane) would make "the first page" skip the items in between.
		if first != nil {
			before, err := seal(cursors, beforeList(list), *first)
			if err != nil {
				return pager{}, err
			}
			out.PrevURL = href(url.Values{"before": {*before}, "page": {strconv.Itoa(max(out.Number-1, 1))}})
		}
	}
	if hasNext && last != nil {
		next, err := seal(cursors, list, *last)
		if err != nil {
			return pager{}, err
		}
		out.NextURL = href(url.Values{"cursor": {*next}, "page": {strconv.Itoa(out.Number + 1)}})
	}
	return out, nil
}

// pageHref returns the function that makes the address of a page of path: keep (the parameters of
// the list, such as sort, and the limit the query named) and the paging parameters.
func pageHref(path string, keep url.Values) func(url.Values) string {
	return func(v url.Values) string {
		for k, vs := range keep {
			v[k] = vs
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
}

// paged is a read-plane answer that may have a next page: cacheable announces it in a Link header
// (render.NextLink), beside next_cursor in the body.
type paged interface{ nextCursor() *string }

func (l ThreadList) nextCursor() *string   { return l.NextCursor }
func (l ReplyList) nextCursor() *string    { return l.NextCursor }
func (r SearchResult) nextCursor() *string { return r.NextCursor }

var (
	_ paged = ThreadList{}
	_ paged = ReplyList{}
	_ paged = SearchResult{}
)
