package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/network"
	mail "github.com/wneessen/go-mail"
)

const (
	// DefaultMailImage is the mail image `make images` builds (build/mail/build.sh: Mailpit).
	DefaultMailImage = "svc-mail:dev"

	// mailAlias is the mail server's name on the test network; mailSMTPPort and mailAPIPort are its
	// SMTP listener (no TLS, no authentication required, any sender and recipient) and its HTTP API in
	// the container.
	mailAlias    = "mail"
	mailSMTPPort = "1025/tcp"
	mailAPIPort  = "8025/tcp"
)

// mailImage is the mail image under test (SVC_MAIL_IMAGE).
func mailImage() string { return envOr("SVC_MAIL_IMAGE", DefaultMailImage) }

// mailServer is a running SMTP server that keeps every message it receives, with an HTTP API to read
// them back.
type mailServer struct {
	*testcontainers.DockerContainer
	// SMTPEndpoint is host:port of the SMTP listener from this host; APIURL is the HTTP API's base URL
	// from this host (http://host:port, no trailing slash).
	SMTPEndpoint, APIURL string
	// NetworkSMTPEndpoint and NetworkAPIURL are the same from the other containers on the network it
	// was started on: mail:1025 and http://mail:8025. SMTP is plain: no TLS, STARTTLS not offered.
	NetworkSMTPEndpoint, NetworkAPIURL string
}

// receivedMail is one message the mail server received, as its HTTP API reports it.
type receivedMail struct {
	// ID is the server's identifier of the message.
	ID string
	// From is the address of the From header; To are the addresses of the To header, in order.
	From string
	To   []string
	// Subject is decoded; Text is the decoded text/plain body (empty when the message has none).
	Subject string
	Text    string
}

func (m receivedMail) String() string {
	return fmt.Sprintf("{From: %q, To: %q, Subject: %q, Text: %q}", m.From, m.To, m.Subject, m.Text)
}

// startMail starts the mail image on the Docker network named networkName, reachable there as mail:1025
// (SMTP) and mail:8025 (HTTP API), and waits until the API answers GET /readyz and the SMTP listener
// greets. Its logs are printed when the test fails; it is removed when the test ends.
func startMail(t *testing.T, networkName string) mailServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	defer cancel()
	c := runServer(t, ctx, "mail server", mailImage(),
		network.WithNetworkName([]string{mailAlias}, networkName),
		testcontainers.WithExposedPorts(mailSMTPPort, mailAPIPort),
		readyOn("/readyz", mailAPIPort))
	smtpEndpoint, err := c.PortEndpoint(ctx, mailSMTPPort, "")
	if err != nil {
		t.Fatalf("e2e: SMTP endpoint of the mail server: %v", err)
	}
	apiURL, err := c.PortEndpoint(ctx, mailAPIPort, "http")
	if err != nil {
		t.Fatalf("e2e: API endpoint of the mail server: %v", err)
	}
	m := mailServer{
		DockerContainer:     c,
		SMTPEndpoint:        smtpEndpoint,
		APIURL:              apiURL,
		NetworkSMTPEndpoint: mailAlias + ":" + strings.TrimSuffix(mailSMTPPort, "/tcp"),
		NetworkAPIURL:       "http://" + mailAlias + ":" + strings.TrimSuffix(mailAPIPort, "/tcp"),
	}
	// Mailpit starts its HTTP server and its SMTP listener side by side: /readyz answering does not
	// mean that SMTP does.
	poll(t, ctx, time.Now(), time.Minute, 100*time.Millisecond, "the mail server's SMTP greeting", func() (bool, string) {
		err := smtpGreets(ctx, m.SMTPEndpoint)
		return err == nil, fmt.Sprint(err)
	})
	return m
}

// smtpGreets connects to the SMTP server at endpoint and reads its greeting, a 220 reply.
func smtpGreets(ctx context.Context, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	conn.SetDeadline(deadline)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return fmt.Errorf("read the greeting of %s: %w", endpoint, err)
	}
	if !strings.HasPrefix(line, "220") {
		return fmt.Errorf("greeting of %s: %q, want 220", endpoint, line)
	}
	fmt.Fprint(conn, "QUIT\r\n")
	return nil
}

// messages returns every message the mail server holds, in the order it received them.
func (m mailServer) messages(t *testing.T, ctx context.Context) []receivedMail {
	t.Helper()
	// The list gives summaries, newest first, a page at a time; each message's text is in its own
	// document.
	var ids []string
	for {
		var page struct {
			Count    int `json:"messages_count"`
			Messages []struct {
				ID string
			} `json:"messages"`
		}
		m.getJSON(t, ctx, "/api/v1/messages?limit=100&start="+strconv.Itoa(len(ids)), &page)
		for _, s := range page.Messages {
			ids = append(ids, s.ID)
		}
		if len(page.Messages) == 0 || len(ids) >= page.Count {
			break
		}
	}
	slices.Reverse(ids)
	out := make([]receivedMail, 0, len(ids))
	for _, id := range ids {
		var doc struct {
			ID      string
			From    *struct{ Address string }
			To      []struct{ Address string }
			Subject string
			Text    string
		}
		m.getJSON(t, ctx, "/api/v1/message/"+url.PathEscape(id), &doc)
		msg := receivedMail{ID: doc.ID, Subject: doc.Subject, Text: doc.Text}
		if doc.From != nil {
			msg.From = doc.From.Address
		}
		for _, a := range doc.To {
			msg.To = append(msg.To, a.Address)
		}
		out = append(out, msg)
	}
	return out
}

// awaitMessages waits until the mail server holds at least n messages and returns them all, in the
// order it received them; it fails the test unless that happens within 30 seconds.
func (m mailServer) awaitMessages(t *testing.T, ctx context.Context, n int) []receivedMail {
	t.Helper()
	var got []receivedMail
	poll(t, ctx, time.Now(), 30*time.Second, 200*time.Millisecond, fmt.Sprintf("%d messages at the mail server", n), func() (bool, string) {
		got = m.messages(t, ctx)
		return len(got) >= n, fmt.Sprintf("%d messages: %v", len(got), got)
	})
	return got
}

// getJSON decodes the 200 answer of the mail server's API to GET path into v.
func (m mailServer) getJSON(t *testing.T, ctx context.Context, path string, v any) {
	t.Helper()
	r := mustGet(t, ctx, m.APIURL+path)
	if r.Status != 200 {
		t.Fatalf("e2e: GET %s%s: status %d: %s", m.APIURL, path, r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("e2e: GET %s%s: decode: %v\n%s", m.APIURL, path, err, r.Body)
	}
}

// TestMailServerReceives: the mail image started by startMail answers on the network alias it was
// given, accepts two messages sent with go-mail over plain SMTP without authentication, and its API
// gives each back with its recipient, subject and text body, in the order they were sent.
func TestMailServerReceives(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	nw := newNetwork(t, ctx)
	ms := startMail(t, nw.Name)

	if ms.NetworkSMTPEndpoint != "mail:1025" || ms.NetworkAPIURL != "http://mail:8025" {
		t.Errorf("network endpoints = %q, %q; want mail:1025, http://mail:8025", ms.NetworkSMTPEndpoint, ms.NetworkAPIURL)
	}
	aliases, err := ms.NetworkAliases(ctx)
	if err != nil {
		t.Fatalf("network aliases of the mail server: %v", err)
	}
	if !slices.Contains(aliases[nw.Name], mailAlias) {
		t.Errorf("the mail server's aliases on %s = %q, want %q among them", nw.Name, aliases[nw.Name], mailAlias)
	}
	// Another container on the network reaches it by its alias.
	if r := runOnce(t, ctx, nw, nil, "health", "--url", ms.NetworkAPIURL+"/readyz"); r.ExitCode != 0 {
		t.Errorf("svc health --url %s/readyz from the network: exit %d\nstdout: %s\nstderr: %s",
			ms.NetworkAPIURL, r.ExitCode, r.Stdout, r.Stderr)
	}
	if got := ms.messages(t, ctx); len(got) != 0 {
		t.Fatalf("a new mail server holds %d messages, want none: %v", len(got), got)
	}

	// Two messages, one connection: the second's body is long and not ASCII, so that it travels
	// quoted-printable and comes back decoded.
	want := []receivedMail{
		{From: "svc@example.test", To: []string{"first@example.test"}, Subject: "First message",
			Text: "Hello from the first message."},
		{From: "svc@example.test", To: []string{"second.reader@example.org"}, Subject: "Zweite Nachricht: Grüße",
			Text: "Grüße aus dem Forum — " + strings.Repeat("a line longer than seventy-six characters, ", 3) + "end."},
	}
	var msgs []*mail.Msg
	for _, w := range want {
		msg := mail.NewMsg()
		if err := msg.From(w.From); err != nil {
			t.Fatalf("From %q: %v", w.From, err)
		}
		if err := msg.To(w.To...); err != nil {
			t.Fatalf("To %q: %v", w.To, err)
		}
		msg.Subject(w.Subject)
		msg.SetBodyString(mail.TypeTextPlain, w.Text)
		msgs = append(msgs, msg)
	}
	host, port, err := net.SplitHostPort(ms.SMTPEndpoint)
	if err != nil {
		t.Fatalf("SMTP endpoint %q: %v", ms.SMTPEndpoint, err)
	}
	portNum, err := strconv.Atoi(port)
	if err != nil {
		t.Fatalf("SMTP endpoint %q: port: %v", ms.SMTPEndpoint, err)
	}
	client, err := mail.NewClient(host, mail.WithPort(portNum), mail.WithTLSPolicy(mail.NoTLS),
		mail.WithHELO("e2e.example.test"), mail.WithTimeout(10*time.Second))
	if err != nil {
		t.Fatalf("go-mail client of %s: %v", ms.SMTPEndpoint, err)
	}
	if err := client.DialAndSendWithContext(ctx, msgs...); err != nil {
		t.Fatalf("send %d messages to %s: %v", len(msgs), ms.SMTPEndpoint, err)
	}

	got := ms.awaitMessages(t, ctx, len(want))
	if len(got) != len(want) {
		t.Fatalf("the mail server holds %d messages, want %d:\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	for i, w := range want {
		g := got[i]
		// The body's line ending is the transport's, not part of the text.
		g.Text = strings.TrimRight(g.Text, "\r\n")
		if g.ID == "" || g.From != w.From || !slices.Equal(g.To, w.To) || g.Subject != w.Subject || g.Text != w.Text {
			t.Errorf("message %d:\ngot  %v (ID %q)\nwant %v", i+1, g, g.ID, w)
		}
	}
}
