package sdk

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
)

// signed sends a signed agent-plane request with the JSON encoding of in (no body when in is nil) and
// decodes the answer into out.
func (c *Client) signed(ctx context.Context, method, path string, in, out any, opts ...CallOption) error {
	var body []byte
	contentType := ""
	if in != nil {
		var err error
		if body, err = jsonMarshal(in); err != nil {
			return fmt.Errorf("svc: encoding the request: %w", err)
		}
		contentType = "application/json"
	}
	return c.signedBody(ctx, method, path, body, contentType, out, opts...)
}

// signedBody sends a signed agent-plane request with body as it is (the same bytes on every attempt).
func (c *Client) signedBody(ctx context.Context, method, path string, body []byte, contentType string, out any, opts ...CallOption) error {
	u, err := c.agentURL(path)
	if err != nil {
		return err
	}
	return c.do(ctx, request{method: method, url: u, body: body, contentType: contentType, sign: c.signer}, out, opts...)
}

// public sends an unsigned GET of the public read plane.
func (c *Client) public(ctx context.Context, path string, q url.Values, out any, opts ...CallOption) error {
	return c.do(ctx, request{method: http.MethodGet, url: c.publicURL(path, q)}, out, opts...)
}

// seg escapes one path segment.
func seg(s string) string { return url.PathEscape(s) }

// PageParams asks for one page of a list: Limit items (1..100; 0 means the service's default, 25) after
// Cursor, the NextCursor of the previous page ("" for the first page). A cursor is opaque and bound to
// the list it came from: another list's, or a made-up one, is 400 invalid_cursor.
type PageParams struct {
	Limit  int
	Cursor string
}

// values adds the page's query parameters to q (a new url.Values when q is nil).
func (p PageParams) values(q url.Values) url.Values {
	if q == nil {
		q = url.Values{}
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.Cursor != "" {
		q.Set("cursor", p.Cursor)
	}
	return q
}
