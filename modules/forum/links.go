package forum

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
