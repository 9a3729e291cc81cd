package host

import (
	"bytes"
	"context"
	"net"
	"sync"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
)

// A request that frames its body twice, with Content-Length and Transfer-Encoding: chunked, is refused
// (400, and the connection is closed): a proxy in front that reads the other header would see another
// request boundary than the service, which is request smuggling (RFC 9112 section 6.3 lets a server
// treat such a message as an error; section 6.1 says to close the connection after it). Go's server
// reads the body by Transfer-Encoding and drops Content-Length before any handler runs, so the check
// reads the request's head as it came off the connection: each connection of a listener keeps the
// bytes of the request being read (headConn), and the check, the first thing each request meets, finds
// its head there and moves past its body.

// maxHeaderBytes bounds a request's head (http.Server.MaxHeaderBytes).
const maxHeaderBytes = 64 << 10

// headLimit bounds what a connection keeps: the head Go's server may read (MaxHeaderBytes and 4096
// bytes of slack), what its reader may have read beyond the previous request, and as much again.
const headLimit = 2 * (maxHeaderBytes + 4096 + 4096)

// headListener hands the server connections that keep the head of the request being read.
type headListener struct{ net.Listener }

func (l headListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &headConn{Conn: c}, nil
}

// headConn keeps the bytes read from the connection from the start of the next request's head (next)
// on. Requests on one connection are read one after the other, so the next head starts where the
// previous request's body ends; once that is not known (after a chunked body, whose coded length
// nobody counts, or more bytes than headLimit), next is -1 and nothing more is kept.
type headConn struct {
	net.Conn
	mu   sync.Mutex // guards the rest: Go's server reads in the background while a handler runs
	read int64      // bytes read from the connection
	next int64      // the offset of the next request's head, or -1
	buf  []byte     // the bytes read from offset next on
}

func (c *headConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.mu.Lock()
		c.keep(p[:n])
		c.mu.Unlock()
	}
	return n, err
}

// keep records b, the bytes read at offset c.read.
func (c *headConn) keep(b []byte) {
	at := c.read
	c.read += int64(len(b))
	if c.next < 0 {
		return
	}
	if skip := c.next - at; skip > 0 { // the rest of a body
		if skip >= int64(len(b)) {
			return
		}
		b = b[skip:]
	}
	if len(c.buf)+len(b) > headLimit {
		c.lose()
		return
	}
	c.buf = append(c.buf, b...)
}

func (c *headConn) lose() {
	c.next, c.buf = -1, nil
}

// framing is what a request's head, as sent, says of its body's length.
type framing struct {
	known         bool // the head was at hand; if not, the rest is false
	contentLength bool // it has a Content-Length field
	coding        bool // it has a Transfer-Encoding field
}

// begin is called as a request's handling starts, once Go's server has read its head: it reports the
// head's framing, and moves past the request's body, of bodyLength bytes (-1 for a chunked body, after
// which the connection loses track: tracked is false).
func (c *headConn) begin(bodyLength int64) (f framing, tracked bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.next < 0 {
		return framing{}, false
	}
	// Go's server skips the CR and LF bytes an old client sends after a POST's body.
	lead := len(c.buf) - len(bytes.TrimLeft(c.buf, "\r\n"))
	end := headEnd(c.buf[lead:])
	if end < 0 {
		c.lose()
		return framing{}, false
	}
	f = headFraming(c.buf[lead : lead+end])
	if bodyLength < 0 {
		c.lose()
		return f, false
	}
	c.next += int64(lead+end) + bodyLength
	if rest := int64(len(c.buf) - lead - end); rest > bodyLength {
		c.buf = append(c.buf[:0], c.buf[int64(lead+end)+bodyLength:]...)
	} else {
		c.buf = c.buf[:0]
	}
	return f, true
}

// headEnd is the length of the head that starts b, its empty line included (Go's reader takes a line
// ending in LF with or without CR), or -1 if b does not hold all of it.
func headEnd(b []byte) int {
	for i := 0; i < len(b); {
		nl := bytes.IndexByte(b[i:], '\n')
		if nl < 0 {
			return -1
		}
		line := b[i : i+nl]
		i += nl + 1
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			return i
		}
	}
	return -1
}

// headFraming reads the fields of a head that frame its body, whatever their case or value (a folded
// line counts too: better one request refused than one smuggled).
func headFraming(head []byte) framing {
	f := framing{known: true}
	lines := bytes.Split(head, []byte("\n"))
	for _, line := range lines[1:] { // the first is the request line
		name, _, found := bytes.Cut(line, []byte(":"))
		if !found {
			continue
		}
		name = bytes.Trim(name, " \t")
		f.contentLength = f.contentLength || bytes.EqualFold(name, []byte("Content-Length"))
		f.coding = f.coding || bytes.EqualFold(name, []byte("Transfer-Encoding"))
	}
	return f
}

type headConnKey struct{}

// connContext gives each request of a connection the connection's headConn (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	if hc, ok := c.(*headConn); ok {
		return context.WithValue(ctx, headConnKey{}, hc)
	}
	return ctx
}

// oneFraming answers 400 bad_request, and closes the connection, when a request's head has both
// Transfer-Encoding and Content-Length, or Transfer-Encoding that Go's server did not decode (it
// ignores the field in an HTTP/1.0 request, and a proxy may not). A chunked request whose head is not
// at hand (on a connection that lost track, closed after it anyway) is refused too. A request served
// without a headConn (an engine served by hand) is not looked at.
func oneFraming() gin.HandlerFunc {
	return func(c *gin.Context) {
		hc, ok := c.Request.Context().Value(headConnKey{}).(*headConn)
		if !ok || c.Request.ProtoMajor != 1 {
			c.Next()
			return
		}
		chunked := len(c.Request.TransferEncoding) > 0 // Go's server takes no coding but chunked
		f, tracked := hc.begin(c.Request.ContentLength)
		if !tracked {
			c.Header("Connection", "close") // the next request's head could not be found
		}
		if f.coding && (f.contentLength || !chunked) || chunked && !f.known {
			c.Header("Connection", "close")
			render.Abort(c, problem.New(problem.BadRequest, "The request's body is framed twice, by Transfer-Encoding and by Content-Length "+
				"(or by Transfer-Encoding in HTTP/1.0), so where it ends is ambiguous (RFC 9112 section 6.3). "+
				"Send Content-Length, or Transfer-Encoding: chunked in HTTP/1.1, not both; this connection is closed."))
			return
		}
		c.Next()
	}
}
