package host

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// rawConn is one TCP connection to a listener, written to as bytes and read as HTTP responses: the
// requests a Go client would never send.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawConn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	// Only so that a server that keeps the connection open fails the test instead of hanging it.
	if err := conn.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

func (c *rawConn) send(raw string) {
	c.t.Helper()
	if _, err := io.WriteString(c.conn, raw); err != nil {
		c.t.Fatal(err)
	}
}

// next reads the next response; close reports whether it said the connection closes after it.
func (c *rawConn) next() (res response, close bool) {
	c.t.Helper()
	r, err := http.ReadResponse(c.r, nil)
	if err != nil {
		c.t.Fatalf("reading a response: %v", err)
	}
	defer r.Body.Close()
	body, err := io.ReadAll(r.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	return response{r.StatusCode, r.Header, body}, r.Close
}

// closed checks that the server sends nothing more and closes the connection.
func (c *rawConn) closed() {
	c.t.Helper()
	if rest, err := io.ReadAll(c.r); err != nil || len(rest) != 0 {
		c.t.Fatalf("after the refusal the connection sent %q (%v), want it closed", rest, err)
	}
}

// A request whose body is framed twice, by Content-Length and Transfer-Encoding (or by
// Transfer-Encoding in HTTP/1.0, which Go's server ignores and a proxy may not), is refused with 400
// bad_request on every listener, and its connection is closed: what follows on it, a request a proxy
// in front would not have seen, is never served. The headers are matched in any case and order.
func TestBodyFramedTwiceRefused(t *testing.T) {
	r := start(t, testConfig(t, "sqlite"), discoveryOnly(t))
	const smuggled = "GET /health/ready HTTP/1.1\r\nHost: svc.test\r\n\r\n"
	heads := map[string]string{
		"length then coding": "GET /health/live HTTP/1.1\r\nHost: svc.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
		"coding then length": "GET /health/live HTTP/1.1\r\nHost: svc.test\r\ntransfer-encoding: CHUNKED\r\ncontent-length: 0\r\n\r\n0\r\n\r\n",
		"HTTP/1.0 coding":    "GET /health/live HTTP/1.0\r\nHost: svc.test\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	}
	for _, listener := range []string{ListenerPublic, ListenerAgentEdge, ListenerAgentPrivate, ListenerAdmin} {
		for name, head := range heads {
			t.Run(listener+"/"+name, func(t *testing.T) {
				c := dialRaw(t, r.listeners.Addr(listener))
				c.send(head + smuggled)
				res, closing := c.next()
				checkProblem(t, res, http.StatusBadRequest, "bad_request")
				if !closing { // ReadResponse takes "Connection: close" out of the header into Close
					t.Error("the response does not say Connection: close")
				}
				c.closed()
			})
		}
	}
}

// The check follows each connection from request to request: a body of Content-Length bytes (that
// reads like a head framed twice, and is followed by the CR LF an old client sends after a POST) is
// skipped, the next request is served on the same connection, and one framed twice after them is
// refused. A chunked request alone is served, and its connection is closed after it (where its coded
// body ends is not counted, so the next head could not be found).
func TestOneFramingFollowsTheConnection(t *testing.T) {
	r := start(t, testConfig(t, "sqlite"), discoveryOnly(t))
	addr := r.listeners.Addr(ListenerPublic)

	c := dialRaw(t, addr)
	body := "GET /x HTTP/1.1\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n"
	c.send("POST /health/live HTTP/1.1\r\nHost: svc.test\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body + "\r\n" +
		"GET /health/live HTTP/1.1\r\nHost: svc.test\r\n\r\n")
	res, closing := c.next()
	checkProblem(t, res, http.StatusMethodNotAllowed, "method_not_allowed")
	if closing {
		t.Fatal("a request with Content-Length closed its connection")
	}
	if res, closing = c.next(); res.status != http.StatusOK || closing {
		t.Fatalf("the next request on the connection: %d (closing %v)", res.status, closing)
	}
	c.send("GET /.well-known/svc HTTP/1.1\r\nHost: svc.test\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n")
	res, _ = c.next()
	checkProblem(t, res, http.StatusBadRequest, "bad_request")
	c.closed()

	c = dialRaw(t, addr)
	c.send("GET /.well-known/svc HTTP/1.1\r\nHost: svc.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" +
		"GET /health/live HTTP/1.1\r\nHost: svc.test\r\n\r\n")
	if res, closing = c.next(); res.status != http.StatusOK || !closing {
		t.Fatalf("a chunked request: %d (closing %v): %s", res.status, closing, res.body)
	}
	c.closed()
}

func TestHeadFraming(t *testing.T) {
	for head, want := range map[string]framing{
		"GET / HTTP/1.1\r\nHost: a\r\n\r\n":                                      {known: true},
		"GET / HTTP/1.1\nContent-Length: 1\n\n":                                  {known: true, contentLength: true},
		"GET / HTTP/1.1\r\nX: y\r\n Content-Length : 1\r\n\r\n":                  {known: true, contentLength: true},
		"GET / HTTP/1.1\r\nTRANSFER-ENCODING:chunked\r\n\r\n":                    {known: true, coding: true},
		"GET /Content-Length:1 HTTP/1.1\r\nX-Content-Length: 1\r\n\r\n":          {known: true},
		"GET / HTTP/1.1\r\nX: Content-Length: 1\r\nTransfer-Encoding: x\r\n\r\n": {known: true, coding: true},
	} {
		if got := headFraming([]byte(head)); got != want {
			t.Errorf("%q: %+v, want %+v", head, got, want)
		}
	}
	for b, want := range map[string]int{"GET / HTTP/1.1\r\n\r\nbody": 18, "GET / HTTP/1.1\n\n": 16, "GET / HTTP/1.1\r\nHost: a\r\n": -1, "": -1} {
		if got := headEnd([]byte(b)); got != want {
			t.Errorf("headEnd(%q) = %d, want %d", b, got, want)
		}
	}
}
