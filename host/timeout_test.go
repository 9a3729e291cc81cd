package host

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// A client that never finishes its request headers is disconnected after the header timeout, so slow
// clients cannot hold connections open.
func TestSlowHeadersAreCutOff(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.HTTP.ReadHeader = 200 * time.Millisecond
	r := start(t, cfg, allModules(t))
	conn, err := net.Dial("tcp", r.listeners.Addr(ListenerPublic))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("GET /health/live HTTP/1.1\r\nHost: x\r\n")); err != nil {
		t.Fatal(err)
	}
	// The bound is generous: this checks that the server closes the connection, not how fast.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := bufio.NewReader(conn).ReadString('\n')
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatal("the server kept a connection with unfinished headers open")
	}
	if line != "" && !strings.HasPrefix(line, "HTTP/1.1 408") {
		t.Fatalf("unexpected answer %q", line)
	}
}
