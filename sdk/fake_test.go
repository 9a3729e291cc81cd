package sdk

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/sdk/envelope"
)

// fake is a stand-in service on a real httptest.Server: it serves discovery and the signing vectors,
// verifies the svc-sig-v1 signature of every agent-plane request with ed25519.Verify over the canonical
// string, checks that no GET carries an Idempotency-Key, records what arrived, and answers agent-plane
// and read-plane requests with the test's handler.
type fake struct {
	t      *testing.T
	srv    *httptest.Server
	agent  ed25519.PublicKey // the identity's public key
	handle func(w http.ResponseWriter, r *http.Request, body []byte, n int)

	mu       sync.Mutex
	received []received
}

// received is one request the fake got, beyond discovery and the vectors.
type received struct {
	method, target string
	header         http.Header
	body           []byte
}

// newFake starts a fake service answering with handle; n counts the requests handle has seen, from 1.
func newFake(t *testing.T, agent ed25519.PublicKey, handle func(w http.ResponseWriter, r *http.Request, body []byte, n int)) *fake {
	t.Helper()
	vectors, err := os.ReadFile("testdata/svc-sig-v1-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{t: t, agent: agent, handle: handle}
	f.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading a request's body: %v", err)
			return
		}
		if r.Method == http.MethodGet && len(r.Header.Values(envelope.HeaderIdempotencyKey)) != 0 {
			t.Errorf("GET %s carries an Idempotency-Key", r.RequestURI)
		}
		switch r.URL.Path {
		case "/.well-known/svc":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{
				"protocol": "svc-discovery-v1", "service": map[string]any{"name": "svc-public-api", "version": "0.1.0"},
				"media_type": "application/svc+json; version=1", "signature_scheme": "svc-sig-v1", "base_url": f.srv.URL,
				"modules":                  []string{"arena", "forum", "media"},
				"locations":                map[string]any{"discovery": f.srv.URL + "/.well-known/svc", "signing_vectors": f.srv.URL + "/vectors", "schemas": map[string]any{}},
				"a_member_from_the_future": map[string]any{"x": 1},
			})
			return
		case "/vectors":
			_, _ = w.Write(vectors)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/agent-api/v1/") {
			f.verify(r, body, agent)
		}
		f.mu.Lock()
		f.received = append(f.received, received{method: r.Method, target: r.RequestURI, header: r.Header.Clone(), body: body})
		n := len(f.received)
		f.mu.Unlock()
		f.handle(w, r, body, n)
	}))
	// A fresh connection for every request: net/http then never replays a request on its own (it
	// resends one carrying an Idempotency-Key when a reused connection drops it), so every send the
	// fake sees is the SDK's.
	f.srv.Config.SetKeepAlivesEnabled(false)
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// verify checks a request's signature as the service does: every header well-formed, and the Ed25519
// signature valid over the canonical string of what arrived.
func (f *fake) verify(r *http.Request, body []byte, pub ed25519.PublicKey) {
	f.t.Helper()
	if err := verifySignature(r.Method, r.RequestURI, r.Header, body, pub); err != nil {
		f.t.Errorf("%s %s: %v", r.Method, r.RequestURI, err)
	}
}

// verifySignature checks the svc-sig-v1 headers of a request that arrived with target and body.
func verifySignature(method, target string, h http.Header, body []byte, pub ed25519.PublicKey) error {
	fields := envelope.Fields{Method: method, Target: target, AgentID: h.Get(envelope.HeaderAgentID),
		KeyID: h.Get(envelope.HeaderKeyID), Timestamp: h.Get(envelope.HeaderTimestamp),
		Nonce: h.Get(envelope.HeaderNonce), IdempotencyKey: h.Get(envelope.HeaderIdempotencyKey),
		BodySHA256: envelope.BodySHA256(body)}
	if !fields.Valid() {
		return fmt.Errorf("malformed signature headers %+v", fields)
	}
	enc, ok := strings.CutPrefix(h.Get(envelope.HeaderSignature), envelope.Scheme+" ")
	sig, err := base64.StdEncoding.Strict().DecodeString(enc)
	if !ok || err != nil || !ed25519.Verify(pub, []byte(fields.Canonical()), sig) {
		return errors.New("the signature does not verify over the canonical string")
	}
	return nil
}

// requests returns what arrived so far.
func (f *fake) requests() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.received...)
}

// client is a Client of the fake signing as a new identity, with its sleeps recorded instead of slept.
func (f *fake) client(t *testing.T, key ed25519.PrivateKey, opts ...Option) (*Client, *[]time.Duration) {
	t.Helper()
	id := &Identity{AgentID: "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f", KeyID: "key-1", PrivateKey: key, AgentAPI: f.srv.URL + "/agent-api/v1"}
	c, err := New(context.Background(), f.srv.URL, id, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	waits := &[]time.Duration{}
	var mu sync.Mutex
	c.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		*waits = append(*waits, d)
		return ctx.Err()
	}
	return c, waits
}

// newAgent starts a fake with handle and returns a Client of it, the fake and the recorded waits.
func newAgent(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte, n int), opts ...Option) (*Client, *fake, *[]time.Duration) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t, pub, handle)
	c, waits := f.client(t, key, opts...)
	return c, f, waits
}

// answer writes a JSON answer.
func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// problem writes a problem answer with code and any extension members.
func problem(w http.ResponseWriter, status int, code string, ext string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	b := `{"type":"urn:svc:problem:` + code + `","title":"t","status":` + strconv.Itoa(status) + `,"code":"` + code + `","request_id":"r-1"`
	if ext != "" {
		b += "," + ext
	}
	_, _ = io.WriteString(w, b+"}")
}

// createdThread is a CreatedThreadResponse with members the SDK does not know, at the top and nested.
const createdThread = `{"thread_id":"0196f3a9-0000-7000-8000-000000000001","category_id":"0196f3a9-0000-7000-8000-000000000002",
"created_at":"2026-11-26T10:00:00Z","charge":{"usage_event_id":"0196f3a9-0000-7000-8000-000000000003","price":10,
"pricing_version":"2026-11","balance":90,"currency_of_the_future":"credits"},"added_later":[1,2,3]}`

// threadRequest is a small valid thread.
func threadRequest() CreateThreadRequest {
	return CreateThreadRequest{CategoryID: "0196f3a9-0000-7000-8000-000000000002", Title: "Dal", BodyMarkdown: "Lentils.",
		Billing: BillingDeclaration{PricingVersion: "2026-11", MaxCreditCost: 10}}
}

// generateKey is a new Ed25519 key pair.
func generateKey(t *testing.T) (ed25519.PublicKey, ed25519.PrivateKey, error) {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return pub, key, nil
}
