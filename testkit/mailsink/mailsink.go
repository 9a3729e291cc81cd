// Package mailsink is a real SMTP server (go-smtp) for tests, in the test process: it keeps every message
// it receives, decoded as a mail reader decodes it, so that tests read links and invitations from mail as
// a person does, never from a table. It is its own package so that only the tests that receive mail
// depend on an SMTP library.
package mailsink

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Sink is a running SMTP server that keeps what it receives.
type Sink struct {
	mu     sync.Mutex
	msgs   []Mail
	refuse bool
	addr   string
}

// Mail is one message as its recipient reads it: the envelope, the headers and the decoded text.
type Mail struct {
	From, To string // the SMTP envelope
	Header   mail.Header
	Subject  string
	Text     string // the decoded text/plain body, with "\n" line ends
	Err      error  // the message could not be read as a text/plain mail
}

// Start starts a sink on a free local port; it stops when t ends.
func Start(t testing.TB) *Sink {
	t.Helper()
	s := &Sink{}
	srv := smtp.NewServer(s)
	srv.Domain = "sink.test"
	srv.AllowInsecureAuth = true
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// URL is the sink as an smtp:// URL: plain SMTP, no STARTTLS.
func (s *Sink) URL() string { return "smtp://" + s.addr + "?tls=none" }

// Refuse makes the sink refuse (451, try later) every recipient until it is called with false: a
// server that is up but will not take mail.
func (s *Sink) Refuse(refuse bool) { s.mu.Lock(); s.refuse = refuse; s.mu.Unlock() }

// Messages returns what the sink received, in order.
func (s *Sink) Messages() []Mail {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// Count returns how many messages went to the address.
func (s *Sink) Count(to string) int {
	n := 0
	for _, m := range s.Messages() {
		if m.To == to {
			n++
		}
	}
	return n
}

// Wait returns the first message to the address whose subject contains subject, polling until it
// arrives or within passes.
func (s *Sink) Wait(t testing.TB, to, subject string, within time.Duration) Mail {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		msgs := s.Messages()
		for _, m := range msgs {
			if m.To == to && strings.Contains(m.Subject, subject) {
				if m.Err != nil {
					t.Fatalf("the mail to %s: %v", to, m.Err)
				}
				return m
			}
		}
		if time.Now().After(deadline) {
			var got []string
			for _, m := range msgs {
				got = append(got, m.To+": "+m.Subject)
			}
			t.Fatalf("no mail to %s about %q within %s; received %q", to, subject, within, got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// NewSession is go-smtp's Backend.
func (s *Sink) NewSession(*smtp.Conn) (smtp.Session, error) { return &sinkSession{s: s}, nil }

type sinkSession struct {
	s        *Sink
	from, to string
}

func (x *sinkSession) Reset()        {}
func (x *sinkSession) Logout() error { return nil }
func (x *sinkSession) Mail(from string, _ *smtp.MailOptions) error {
	x.from = from
	return nil
}
func (x *sinkSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	if x.s.refuse {
		return &smtp.SMTPError{Code: 451, Message: "try again later"}
	}
	x.to = to
	return nil
}
func (x *sinkSession) Data(r io.Reader) error {
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m := readMail(raw)
	m.From, m.To = x.from, x.to
	x.s.mu.Lock()
	defer x.s.mu.Unlock()
	x.s.msgs = append(x.s.msgs, m)
	return nil
}

// readMail decodes a message as a mail reader does: the subject's encoded words, and the body's
// transfer encoding (quoted-printable folds long lines with soft breaks, "=\r\n", that are no part of
// the text).
func readMail(raw []byte) Mail {
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return Mail{Err: fmt.Errorf("parse: %w", err)}
	}
	out := Mail{Header: msg.Header}
	if out.Subject, err = new(mime.WordDecoder).DecodeHeader(msg.Header.Get("Subject")); err != nil {
		return Mail{Err: fmt.Errorf("subject: %w", err)}
	}
	if mt, _, err := mime.ParseMediaType(msg.Header.Get("Content-Type")); err != nil || mt != "text/plain" {
		out.Err = fmt.Errorf("Content-Type %q, want text/plain (%v)", msg.Header.Get("Content-Type"), err)
		return out
	}
	body := msg.Body
	switch cte := strings.ToLower(msg.Header.Get("Content-Transfer-Encoding")); cte {
	case "quoted-printable":
		body = quotedprintable.NewReader(body)
	case "base64":
		body = base64.NewDecoder(base64.StdEncoding, body)
	case "", "7bit", "8bit":
	default:
		out.Err = fmt.Errorf("Content-Transfer-Encoding %q", cte)
		return out
	}
	text, err := io.ReadAll(body)
	if err != nil {
		out.Err = fmt.Errorf("body: %w", err)
		return out
	}
	out.Text = strings.ReplaceAll(string(text), "\r\n", "\n")
	return out
}
