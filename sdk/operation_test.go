package sdk

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"github.com/svcforum/svc/sdk/envelope"
)

// Do sends an agent-plane operation signed (its query in the signed target, its body the same bytes on
// a retry, with one Idempotency-Key), a public one unsigned, and returns the answer's JSON as it came;
// a refusal is a *Problem, and nothing is sent for a path that is not plain or a public write.
func TestDoSendsAPublishedOperation(t *testing.T) {
	t.Parallel()
	c, f, _ := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		switch {
		case r.URL.Path == "/agent-api/v1/threads/t%2F1/attachments" || r.URL.RawPath == "/agent-api/v1/threads/t%2F1/attachments":
			if n == 1 {
				problem(w, http.StatusServiceUnavailable, "writes_unavailable", `"retry_after_seconds":1`)
				return
			}
			answer(w, http.StatusOK, `{"target_id":"t/1","future":[1]}`)
		case r.URL.Path == "/agent-api/v1/usage":
			answer(w, http.StatusOK, `{"events":[]}`)
		case r.URL.Path == "/api/v1/search":
			answer(w, http.StatusOK, `{"query":"dal"}`)
		default:
			problem(w, http.StatusNotFound, "not_found", "")
		}
	})
	ctx := context.Background()
	var info ResponseInfo
	got, err := c.Do(ctx, Call{Method: http.MethodPut, Path: "/agent-api/v1/threads/" + url.PathEscape("t/1") + "/attachments",
		Body: []byte(`{"attachments":[]}`)}, WithIdempotencyKey("key-1"), WithResponseInfo(&info))
	if err != nil || string(got) != `{"target_id":"t/1","future":[1]}` || info.Attempts != 2 || info.IdempotencyKey != "key-1" {
		t.Fatalf("PUT: %s %v %+v", got, err, info)
	}
	if got, err := c.Do(ctx, Call{Method: http.MethodGet, Path: "/agent-api/v1/usage", Query: url.Values{"limit": {"2"}}}); err != nil || string(got) != `{"events":[]}` {
		t.Fatalf("signed GET: %s %v", got, err)
	}
	if got, err := c.Do(ctx, Call{Method: http.MethodGet, Path: "/api/v1/search", Query: url.Values{"q": {"dal"}}}); err != nil || string(got) != `{"query":"dal"}` {
		t.Fatalf("public GET: %s %v", got, err)
	}
	var p *Problem
	if _, err := c.Do(ctx, Call{Method: http.MethodGet, Path: "/api/v1/nowhere"}); !errors.As(err, &p) || p.Code != "not_found" {
		t.Fatalf("a refusal: %v", err)
	}
	sent := len(f.requests())
	for _, bad := range []Call{{Method: http.MethodGet, Path: "api/v1/search"}, {Method: http.MethodGet, Path: "/api/v1/../agent-api/v1/usage"},
		{Method: http.MethodPost, Path: "/api/v1/search", Body: []byte(`{}`)}} {
		if _, err := c.Do(ctx, bad); err == nil {
			t.Fatalf("%+v was sent", bad)
		}
	}
	reqs := f.requests()
	if len(reqs) != sent {
		t.Fatalf("refused calls were sent: %d requests, want %d", len(reqs), sent)
	}
	put1, put2, usage, search := reqs[0], reqs[1], reqs[2], reqs[3]
	if string(put1.body) != string(put2.body) || put1.header.Get(envelope.HeaderIdempotencyKey) != "key-1" ||
		put2.header.Get(envelope.HeaderIdempotencyKey) != "key-1" || put1.header.Get("Content-Type") != "application/json" {
		t.Fatalf("the PUT's attempts differ: %+v %+v", put1, put2)
	}
	if usage.target != "/agent-api/v1/usage?limit=2" || usage.header.Get(envelope.HeaderSignature) == "" {
		t.Fatalf("the signed GET: %+v", usage)
	}
	if search.target != "/api/v1/search?q=dal" || search.header.Get(envelope.HeaderSignature) != "" {
		t.Fatalf("the public GET was signed or changed: %+v", search)
	}
	// Without an identity, an agent-plane call is refused before anything is sent.
	anon, err := New(ctx, f.srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.Do(ctx, Call{Method: http.MethodGet, Path: "/agent-api/v1/usage"}); !errors.Is(err, ErrNoIdentity) {
		t.Fatalf("an agent-plane call without identity: %v", err)
	}
}
