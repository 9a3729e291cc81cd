package sdk

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A failed bootstrap is one line that names the URL once, and still wraps the cause (the net error,
// the *Problem the service answered).
func TestBootstrapErrorsNameTheURLOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	once := WithRetryPolicy(RetryPolicy{Attempts: 1})

	// Nothing listens.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String()
	l.Close()
	_, err = New(ctx, closed, nil, once)
	var ue *url.Error
	wantOnce(t, err, closed+"/.well-known/svc", "svc: reading the discovery document at "+closed+"/.well-known/svc: ")
	if !errors.As(err, &ue) {
		t.Errorf("%v does not wrap the *url.Error", err)
	}

	// A problem, and a self-test that cannot read the vectors.
	vectors, err := os.ReadFile("testdata/svc-sig-v1-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var srvURL string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/forum/.well-known/svc":
			problem(w, http.StatusNotFound, "not_found", "")
		case "/.well-known/svc":
			answer(w, http.StatusOK, discoveryJSON(srvURL, srvURL+"/vectors.json"))
		case "/vectors.json":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>" + string(vectors[:10])))
		}
	}))
	defer srv.Close()
	srvURL = srv.URL
	_, err = New(ctx, srv.URL+"/forum", nil, once)
	wantOnce(t, err, srv.URL+"/forum/.well-known/svc", "svc: reading the discovery document at "+srv.URL+"/forum/.well-known/svc: 404 not_found")
	if !IsCode(err, CodeNotFound) {
		t.Errorf("%v does not wrap the problem", err)
	}
	_, err = New(ctx, srv.URL, nil, once)
	wantOnce(t, err, srv.URL+"/vectors.json", "svc: self-test: reading the signing vectors at "+srv.URL+"/vectors.json: the answer is not the documented JSON: ")

	// A call's own error names its request once too.
	c := &Client{http: &http.Client{}, userAgent: "t", clock: time.Now, retry: RetryPolicy{Attempts: 1}.withDefaults(), sleep: sleepCtx}
	err = c.do(ctx, request{method: http.MethodGet, url: closed + "/api/v1/search?q=secret"}, nil)
	wantOnce(t, err, closed+"/api/v1/search", "svc: GET "+closed+"/api/v1/search: ")
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("%v shows the query", err)
	}
}

// wantOnce checks that err is one line starting with prefix that names u exactly once.
func wantOnce(t *testing.T, err error, u, prefix string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %q...", prefix)
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, prefix) || strings.Count(msg, strings.TrimPrefix(u, "http://")) != 1 || strings.Contains(msg, "\n") ||
		strings.Contains(msg, ": svc: ") || strings.Contains(msg, `"`) {
		t.Errorf("error %q: want one line starting %q, naming %s once", msg, prefix, u)
	}
}

// discoveryJSON is a discovery document naming the signing vectors at vectorsURL ("" for none).
func discoveryJSON(base, vectorsURL string) string {
	locs := `"discovery":"` + base + `/.well-known/svc","schemas":{}`
	if vectorsURL != "" {
		locs += `,"signing_vectors":"` + vectorsURL + `"`
	}
	return `{"protocol":"svc-discovery-v1","service":{"name":"svc-public-api","version":"0.1.0"},"media_type":"application/svc+json; version=1",` +
		`"signature_scheme":"svc-sig-v1","base_url":"` + base + `","modules":["onboarding"],"locations":{` + locs + `}}`
}

// A client signs only after its signer passed the self-test against published vectors: without them
// (which New accepts for a client without an identity), Redeem fails with ErrSignerUnchecked and sends
// nothing; a failed SelfTest stops an agent's signed calls until one passes again.
func TestSignedCallsNeedAPassedSelfTest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	vectors, err := os.ReadFile("testdata/svc-sig-v1-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var (
		srvURL      string
		withVectors atomic.Bool
		broken      atomic.Bool
		signed      atomic.Int64
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/svc":
			v := ""
			if withVectors.Load() {
				v = srvURL + "/vectors"
			}
			answer(w, http.StatusOK, discoveryJSON(srvURL, v))
		case "/vectors":
			if broken.Load() {
				_, _ = w.Write([]byte(strings.Replace(string(vectors), `"signature_mismatch"`, `"ok"`, 1)[:len(vectors)/2]))
				return
			}
			_, _ = w.Write(vectors)
		case "/onboarding/api/v1/redemptions":
			signed.Add(1)
			answer(w, http.StatusCreated, `{"agent_id":"0196f3a9-0000-7000-8000-0000000000d1","key_id":"k","org_id":"0196f3a9-0000-7000-8000-0000000000d3","handle":"lentil","agent_api":{"edge":"`+srvURL+`/agent-api/v1"}}`)
		case "/agent-api/v1/conformance":
			signed.Add(1)
			answer(w, http.StatusOK, `{"agent_id":"0196f3a9-0000-7000-8000-0000000000d1","key_id":"k","org_id":"o","handle":"lentil","echo":"x","channel":"edge"}`)
		}
	}))
	defer srv.Close()
	srvURL = srv.URL
	_, key, _ := generateKey(t)

	// No vectors published: the client reads, but does not sign.
	anon, err := New(ctx, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := anon.SelfTest(ctx); err != nil {
		t.Fatalf("SelfTest without vectors and without an identity: %v", err)
	}
	_, err = anon.Redeem(ctx, RedeemRequest{Invitation: "svcinv_x", Handle: "lentil", PrivateKey: key})
	if !errors.Is(err, ErrSignerUnchecked) || signed.Load() != 0 {
		t.Fatalf("Redeem without a self-test: %v (%d signed requests arrived)", err, signed.Load())
	}
	if _, err := New(ctx, srv.URL, &Identity{AgentID: "0196f3a9-0000-7000-8000-0000000000d1", KeyID: "k", PrivateKey: key, AgentAPI: srv.URL + "/agent-api/v1"}); err == nil {
		t.Fatal("New with an identity and no vectors")
	}

	// With vectors: it signs; after a failed self-test it stops, until one passes again.
	withVectors.Store(true)
	agent, err := New(ctx, srv.URL, &Identity{AgentID: "0196f3a9-0000-7000-8000-0000000000d1", KeyID: "k", PrivateKey: key, AgentAPI: srv.URL + "/agent-api/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Conformance(ctx, ConformanceRequest{Echo: "x"}); err != nil || signed.Load() != 1 {
		t.Fatalf("Conformance: %v", err)
	}
	broken.Store(true)
	if err := agent.SelfTest(ctx); err == nil {
		t.Fatal("SelfTest passed on broken vectors")
	}
	if _, err := agent.Conformance(ctx, ConformanceRequest{Echo: "x"}); !errors.Is(err, ErrSignerUnchecked) || signed.Load() != 1 {
		t.Fatalf("Conformance after a failed self-test: %v", err)
	}
	broken.Store(false)
	if err := agent.SelfTest(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := agent.Conformance(ctx, ConformanceRequest{Echo: "x"}); err != nil || signed.Load() != 2 {
		t.Fatalf("Conformance after the self-test passed again: %v", err)
	}
	anonWith, err := New(ctx, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anonWith.Redeem(ctx, RedeemRequest{Invitation: "svcinv_x", Handle: "lentil", PrivateKey: key}); err != nil || signed.Load() != 3 {
		t.Fatalf("Redeem after the self-test: %v", err)
	}
}
