package sigv1_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
)

const (
	agentID = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"
	keyID   = "ed25519:a1"
	idem    = "6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"
)

var (
	priv = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	pub  = priv.Public().(ed25519.PublicKey)
	now  = time.Unix(1767225600, 0)
)

func fixed() *signer.Signer {
	return signer.New(agentID, keyID, priv, signer.WithClock(func() time.Time { return now }),
		signer.WithNonces(func() string { return "AAECAwQFBgcICQoLDA0ODw" }))
}

// verify is what the server does with a received request.
func verify(t *testing.T, method, target string, h http.Header, body []byte) bool {
	t.Helper()
	env, err := sigv1.ParseHeaders(method, target, h)
	if err != nil {
		t.Fatalf("ParseHeaders: %v", err)
	}
	env.BodySHA256 = sigv1.BodySHA256(body)
	if err := env.CheckFreshness(now); err != nil {
		t.Fatalf("freshness: %v", err)
	}
	return sigv1.Verify(pub, env)
}

func newRequest(t *testing.T, method, url string, body []byte) *http.Request {
	t.Helper()
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost || method == http.MethodPut {
		req.Header.Set("Idempotency-Key", idem)
	}
	return req
}

func TestSignRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		method, url, target string
		body                []byte
	}{
		{"GET", "https://svc.example/agent-api/v1/wallet", "/agent-api/v1/wallet", nil},
		{"GET", "https://svc.example", "/", nil},
		{"POST", "https://svc.example/agent-api/v1/threads", "/agent-api/v1/threads", []byte(`{"title":"dal"}`)},
		{"POST", "https://svc.example/agent-api/v1/write-admission", "/agent-api/v1/write-admission", []byte(`{}`)},
		{"POST", "https://svc.example/agent-api/v1/votes", "/agent-api/v1/votes", nil},
		{"PUT", "https://svc.example/agent-api/v1/threads/x/attachments?dry=1", "/agent-api/v1/threads/x/attachments?dry=1", []byte(`{"attachments":[]}`)},
		{"GET", "https://svc.example/agent-api/v1/activity?b=2&a=1&a=0&cursor=eyJ9%3D%3D", "/agent-api/v1/activity?b=2&a=1&a=0&cursor=eyJ9%3D%3D", nil},
		{"GET", "https://svc.example/agent-api/v1/media/uploads/caf%C3%A9%2Fx", "/agent-api/v1/media/uploads/caf%C3%A9%2Fx", nil},
		{"GET", "https://svc.example/agent-api/v1/p%6Fsts?a=1", "/agent-api/v1/p%6Fsts?a=1", nil},
		{"GET", "https://svc.example/agent-api/v1/wallet?", "/agent-api/v1/wallet?", nil},
		{"GET", "https://svc.example/agent-api/v1/wallet#frag", "/agent-api/v1/wallet", nil},
		{"GET", "https://svc.example/agent-api/v1/café", "/agent-api/v1/caf%C3%A9", nil},
	} {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			req := newRequest(t, tc.method, tc.url, tc.body)
			if err := fixed().Sign(req); err != nil {
				t.Fatal(err)
			}
			if got := req.URL.RequestURI(); got != tc.target {
				t.Fatalf("request-target %q, want %q", got, tc.target)
			}
			if !verify(t, tc.method, tc.target, req.Header, tc.body) {
				t.Fatal("does not verify")
			}
			if (tc.method == "GET") != (req.Header.Get("Idempotency-Key") == "") {
				t.Fatalf("Idempotency-Key %q on %s", req.Header.Get("Idempotency-Key"), tc.method)
			}
			// The body is still there, and GetBody gives it again.
			var got []byte
			if req.Body != nil {
				got, _ = io.ReadAll(req.Body)
			}
			if !bytes.Equal(got, tc.body) || req.ContentLength != int64(len(tc.body)) {
				t.Fatalf("body after signing %q (length %d), want %q", got, req.ContentLength, tc.body)
			}
			if req.GetBody != nil {
				again, _ := req.GetBody()
				got, _ = io.ReadAll(again)
				if !bytes.Equal(got, tc.body) {
					t.Fatalf("GetBody gives %q", got)
				}
			}
			// One byte of the body changed: the signature fails.
			if len(tc.body) > 0 {
				changed := bytes.Clone(tc.body)
				changed[len(changed)/2] ^= 0x01
				if verify(t, tc.method, tc.target, req.Header, changed) {
					t.Fatal("verifies a body changed by one byte")
				}
			}
		})
	}
}

// TestSignOverHTTP sends signed requests through net/http to a server that verifies what it receives
// on the request line: the signed target is exactly what is sent.
func TestSignOverHTTP(t *testing.T) {
	type seen struct {
		target string
		ok     bool
		err    error
	}
	results := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		env, err := sigv1.ParseHeaders(r.Method, r.RequestURI, r.Header)
		if err == nil {
			env.BodySHA256 = sigv1.BodySHA256(body)
		}
		results <- seen{r.RequestURI, err == nil && sigv1.Verify(pub, env), err}
	}))
	defer srv.Close()

	s := signer.New(agentID, keyID, priv) // the real clock and nonces
	for _, path := range []string{"/agent-api/v1/wallet", "/agent-api/v1/activity?b=2&a=1&a=2",
		"/agent-api/v1/p%6Fsts?a=%20b+c", "/agent-api/v1/media/uploads/caf%C3%A9%2Fx", "/agent-api/v1//x/../y", "/agent-api/v1/wallet?"} {
		for _, method := range []string{"GET", "POST", "PUT"} {
			body := []byte(`{"title":"Grüße 🍜"}`)
			if method == "GET" {
				body = nil
			}
			req := newRequest(t, method, srv.URL+path, body)
			if err := s.Sign(req); err != nil {
				t.Fatal(err)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := <-results
			if got.err != nil || !got.ok || got.target != path {
				t.Errorf("%s %s: server saw %q, verified %v, %v", method, path, got.target, got.ok, got.err)
			}
		}
	}
}

func TestSignHeaders(t *testing.T) {
	req := newRequest(t, "POST", "https://svc.example/agent-api/v1/threads", []byte(`{}`))
	req.Header.Set("Svc-Nonce", "stale-nonce-from-an-earlier-attempt")
	if err := fixed().Sign(req); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Svc-Agent-Id":    agentID,
		"Svc-Key-Id":      keyID,
		"Svc-Timestamp":   "1767225600",
		"Svc-Nonce":       "AAECAwQFBgcICQoLDA0ODw",
		"Idempotency-Key": idem,
	}
	for k, v := range want {
		if got := req.Header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if sig := req.Header.Get("Svc-Signature"); !regexp.MustCompile(`^svc-sig-v1 [A-Za-z0-9+/]{86}==$`).MatchString(sig) {
		t.Errorf("Svc-Signature = %q", sig)
	}
}

func TestSignIsDeterministicAndResignable(t *testing.T) {
	sign := func() http.Header {
		req := newRequest(t, "POST", "https://svc.example/agent-api/v1/threads", []byte(`{"a":1}`))
		if err := fixed().Sign(req); err != nil {
			t.Fatal(err)
		}
		// Signing again (a retry) replaces the headers rather than adding values.
		if err := fixed().Sign(req); err != nil {
			t.Fatal(err)
		}
		return req.Header
	}
	a, b := sign(), sign()
	if a.Get("Svc-Signature") != b.Get("Svc-Signature") || len(a.Values("Svc-Signature")) != 1 {
		t.Fatalf("signatures %q, %q", a.Values("Svc-Signature"), b.Values("Svc-Signature"))
	}
}

func TestDefaultNonces(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)
	seen := map[string]bool{}
	for range 1000 {
		n := signer.RandomNonce()
		if !re.MatchString(n) {
			t.Fatalf("nonce %q", n)
		}
		if raw, err := base64.RawURLEncoding.DecodeString(n); err != nil || len(raw) != 16 {
			t.Fatalf("nonce %q decodes to %d bytes, %v", n, len(raw), err)
		}
		if seen[n] {
			t.Fatalf("nonce %q repeated", n)
		}
		seen[n] = true
	}
	req := newRequest(t, "GET", "https://svc.example/agent-api/v1/wallet", nil)
	if err := signer.New(agentID, keyID, priv).Sign(req); err != nil {
		t.Fatal(err)
	}
	if !re.MatchString(req.Header.Get("Svc-Nonce")) {
		t.Fatalf("default nonce %q", req.Header.Get("Svc-Nonce"))
	}
	ts, err := strconv.ParseInt(req.Header.Get("Svc-Timestamp"), 10, 64)
	if err != nil || time.Since(time.Unix(ts, 0)).Abs() > time.Minute {
		t.Fatalf("default clock timestamp %q", req.Header.Get("Svc-Timestamp"))
	}
}

func TestSignRefuses(t *testing.T) {
	signers := map[string]*signer.Signer{
		"bad agent id":   signer.New(strings.ToUpper(agentID), keyID, priv),
		"bad key id":     signer.New(agentID, "key id", priv),
		"short key":      signer.New(agentID, keyID, priv[:32]),
		"nil key":        signer.New(agentID, keyID, nil),
		"bad nonce":      signer.New(agentID, keyID, priv, signer.WithNonces(func() string { return "short" })),
		"pre-epoch time": signer.New(agentID, keyID, priv, signer.WithClock(func() time.Time { return time.Unix(-1, 0) })),
	}
	for name, s := range signers {
		req := newRequest(t, "GET", "https://svc.example/agent-api/v1/wallet", nil)
		if err := s.Sign(req); err == nil {
			t.Errorf("%s: signed", name)
		}
		if req.Header.Get("Svc-Signature") != "" {
			t.Errorf("%s: set a signature", name)
		}
	}

	requests := map[string]func() *http.Request{
		"POST without Idempotency-Key": func() *http.Request {
			r := newRequest(t, "POST", "https://svc.example/agent-api/v1/threads", []byte(`{}`))
			r.Header.Del("Idempotency-Key")
			return r
		},
		"PUT without Idempotency-Key": func() *http.Request {
			r := newRequest(t, "PUT", "https://svc.example/agent-api/v1/threads/x/attachments", []byte(`{}`))
			r.Header.Del("Idempotency-Key")
			return r
		},
		"GET with Idempotency-Key": func() *http.Request {
			r := newRequest(t, "GET", "https://svc.example/agent-api/v1/wallet", nil)
			r.Header.Set("Idempotency-Key", idem)
			return r
		},
		"two Idempotency-Keys": func() *http.Request {
			r := newRequest(t, "POST", "https://svc.example/agent-api/v1/threads", []byte(`{}`))
			r.Header.Add("Idempotency-Key", "again")
			return r
		},
		"Idempotency-Key with a space": func() *http.Request {
			r := newRequest(t, "POST", "https://svc.example/agent-api/v1/threads", []byte(`{}`))
			r.Header.Set("Idempotency-Key", "a b")
			return r
		},
		"lowercase method": func() *http.Request {
			r := newRequest(t, "GET", "https://svc.example/agent-api/v1/wallet", nil)
			r.Method = "get"
			return r
		},
		"no URL": func() *http.Request {
			r := newRequest(t, "GET", "https://svc.example/agent-api/v1/wallet", nil)
			r.URL = nil
			return r
		},
		"opaque URL": func() *http.Request {
			r := newRequest(t, "GET", "https://svc.example/agent-api/v1/wallet", nil)
			r.URL.Opaque = "x"
			return r
		},
	}
	for name, mk := range requests {
		req := mk()
		if err := fixed().Sign(req); err == nil {
			t.Errorf("%s: signed", name)
		} else if strings.Contains(err.Error(), idem) {
			t.Errorf("%s: error echoes a value: %v", name, err)
		}
	}
	if err := fixed().Sign(nil); err == nil {
		t.Error("nil request signed")
	}
}

func TestSignEmptyMethodIsGET(t *testing.T) {
	req := newRequest(t, "GET", "https://svc.example/agent-api/v1/wallet", nil)
	req.Method = ""
	if err := fixed().Sign(req); err != nil {
		t.Fatal(err)
	}
	if !verify(t, "GET", "/agent-api/v1/wallet", req.Header, nil) {
		t.Fatal("does not verify as GET")
	}
}

func TestSignBodyReadError(t *testing.T) {
	req := newRequest(t, "POST", "https://svc.example/agent-api/v1/threads", nil)
	req.Body = io.NopCloser(iotest.ErrReader(errors.New("boom")))
	if err := fixed().Sign(req); err == nil || req.Header.Get("Svc-Signature") != "" {
		t.Fatalf("err %v, signature %q", err, req.Header.Get("Svc-Signature"))
	}
}
