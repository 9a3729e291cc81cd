package sigv1

import (
	"bufio"
	"bytes"
	"errors"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/render"
)

// heldAnswer is a route's answer kept back (Guard.leave): its status and body are buffered, and its
// headers, which go on the real writer's map, can be put back as they were before the route ran.
type heldAnswer struct {
	gin.ResponseWriter // the real writer
	c                  *gin.Context
	header             http.Header // the headers before the route ran
	status             int
	body               bytes.Buffer
	written            bool
	done               bool
}

var _ gin.ResponseWriter = (*heldAnswer)(nil)

// holdAnswer puts a heldAnswer in front of c's writer.
func holdAnswer(c *gin.Context) *heldAnswer {
	h := &heldAnswer{ResponseWriter: c.Writer, c: c, header: c.Writer.Header().Clone(), status: http.StatusOK}
	c.Writer = h
	return h
}

func (h *heldAnswer) WriteHeader(code int) {
	if code > 0 && !h.written {
		h.status = code
	}
}
func (h *heldAnswer) WriteHeaderNow() { h.written = true }
func (h *heldAnswer) Write(b []byte) (int, error) {
	h.written = true
	return h.body.Write(b)
}
func (h *heldAnswer) WriteString(s string) (int, error) {
	h.written = true
	return h.body.WriteString(s)
}
func (h *heldAnswer) Status() int { return h.status }
func (h *heldAnswer) Size() int {
	if !h.written {
		return -1
	}
	return h.body.Len()
}
func (h *heldAnswer) Written() bool { return h.written }
func (h *heldAnswer) Flush()        {}

// Hijack is refused: a held answer is sent, or dropped, once the route has returned.
func (h *heldAnswer) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return nil, nil, errors.New("a held answer cannot be hijacked")
}
func (h *heldAnswer) Pusher() http.Pusher { return nil }

// flush sends the route's answer.
func (h *heldAnswer) flush() {
	h.c.Writer, h.done = h.ResponseWriter, true
	h.ResponseWriter.WriteHeader(h.status)
	if !h.written {
		return
	}
	if h.body.Len() == 0 {
		h.ResponseWriter.WriteHeaderNow()
		return
	}
	_, _ = h.ResponseWriter.Write(h.body.Bytes())
}

// drop discards the route's answer, its headers and its problem code, for the guard's own.
func (h *heldAnswer) drop() {
	h.c.Writer, h.done = h.ResponseWriter, true
	h.resetHeaders()
	render.SetProblemCode(h.c, "")
}

func (h *heldAnswer) resetHeaders() {
	hdr := h.ResponseWriter.Header()
	for k := range hdr {
		delete(hdr, k)
	}
	for k, v := range h.header {
		hdr[k] = v
	}
}
