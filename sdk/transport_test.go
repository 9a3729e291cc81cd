package sdk

import (
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/sdk/envelope"
)

// A write whose answers say "later" is sent again with the same Idempotency-Key, each time signed
// afresh (new nonce, new signature), waiting exactly as Retry-After says; the final answer decodes
// although it carries members the SDK does not know.
func TestRetriedWriteKeepsItsKeyAndIsSignedAfresh(t *testing.T) {
	t.Parallel()
	c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		switch n {
		case 1:
			w.Header().Set("Retry-After", "2")
			problem(w, http.StatusServiceUnavailable, CodeWritesUnavailable, `"retry_after_seconds":2`)
		case 2:
			problem(w, http.StatusInternalServerError, CodeInternal, "")
		default:
			answer(w, http.StatusOK, createdThread)
		}
	})
	var info ResponseInfo
	got, err := c.CreateThread(context.Background(), threadRequest(), WithResponseInfo(&info))
	if err != nil {
		t.Fatal(err)
	}
	if got.ThreadID != "0196f3a9-0000-7000-8000-000000000001" || got.Charge.Balance != 90 || !got.CreatedAt.Equal(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("decoded %+v", got)
	}
	reqs := f.requests()
	if len(reqs) != 3 || info.Attempts != 3 || info.Status != http.StatusOK {
		t.Fatalf("%d requests, info %+v", len(reqs), info)
	}
	key := reqs[0].header.Get(envelope.HeaderIdempotencyKey)
	if key == "" || info.IdempotencyKey != key {
		t.Fatalf("key %q, info %+v", key, info)
	}
	nonces, sigs := map[string]bool{}, map[string]bool{}
	for _, r := range reqs {
		if r.header.Get(envelope.HeaderIdempotencyKey) != key || string(r.body) != string(reqs[0].body) {
			t.Fatalf("a retry changed its key or body: %q %s", r.header.Get(envelope.HeaderIdempotencyKey), r.body)
		}
		nonces[r.header.Get(envelope.HeaderNonce)] = true
		sigs[r.header.Get(envelope.HeaderSignature)] = true
	}
	if len(nonces) != 3 || len(sigs) != 3 {
		t.Fatalf("nonces %v, signatures %v: each attempt needs its own", nonces, sigs)
	}
	// 2 s as Retry-After said; then the backoff after a second failure that named no wait: 500 ms ±50%.
	if len(*waits) != 2 || (*waits)[0] != 2*time.Second || (*waits)[1] < 250*time.Millisecond || (*waits)[1] > 750*time.Millisecond {
		t.Fatalf("waits %v", *waits)
	}
}

// Retry-After is honoured in its forms: whole seconds, an HTTP date, and retry_after_seconds when the
// header is absent; a wait above MaxWait returns the problem without waiting.
func TestRetryAfterIsHonoured(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		header string
		ext    string
		want   time.Duration
	}{
		{"seconds", "7", "", 7 * time.Second},
		{"an HTTP date", now.Add(12 * time.Second).Format(http.TimeFormat), "", 12 * time.Second},
		{"retry_after_seconds without the header", "", `"retry_after_seconds":5`, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
				if n == 1 {
					if tc.header != "" {
						w.Header().Set("Retry-After", tc.header)
					}
					problem(w, http.StatusTooManyRequests, CodeRateLimited, tc.ext)
					return
				}
				answer(w, http.StatusOK, `{"org_id":"0196f3a9-0000-7000-8000-00000000000a","balance":3,"updated_at":null}`)
			}, WithClock(func() time.Time { return now }))
			got, err := c.Wallet(context.Background())
			if err != nil || got.Balance != 3 || got.UpdatedAt != nil {
				t.Fatalf("%+v %v", got, err)
			}
			if !slices.Equal(*waits, []time.Duration{tc.want}) || len(f.requests()) != 2 {
				t.Fatalf("waits %v, %d requests", *waits, len(f.requests()))
			}
		})
	}
	t.Run("above MaxWait", func(t *testing.T) {
		t.Parallel()
		c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
			w.Header().Set("Retry-After", "120")
			problem(w, http.StatusTooManyRequests, CodeRateLimited, `"retry_after_seconds":120`)
		}, WithRetryPolicy(RetryPolicy{MaxWait: time.Minute}))
		_, err := c.CreateThread(context.Background(), threadRequest())
		var p *Problem
		if !errors.As(err, &p) || p.Code != CodeRateLimited || p.RetryAfterSeconds != 120 {
			t.Fatalf("err %v", err)
		}
		if len(*waits) != 0 || len(f.requests()) != 1 {
			t.Fatalf("waited %v over %d requests", *waits, len(f.requests()))
		}
	})
}

// 409 idempotency_request_in_flight is waited out, past the Attempts that bound other retries, as
// long as InFlightWait allows; beyond it the problem is returned.
func TestInFlightIsWaitedOut(t *testing.T) {
	t.Parallel()
	inFlight := func(times int) func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		return func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
			if n <= times {
				w.Header().Set("Retry-After", "1")
				problem(w, http.StatusConflict, CodeIdempotencyRequestInFlight, "")
				return
			}
			w.Header().Set("Idempotent-Replayed", "true")
			answer(w, http.StatusOK, createdThread)
		}
	}
	t.Run("waited out", func(t *testing.T) {
		t.Parallel()
		c, f, waits := newAgent(t, inFlight(6))
		var info ResponseInfo
		if _, err := c.CreateThread(context.Background(), threadRequest(), WithResponseInfo(&info), WithIdempotencyKey("thread-dal-1")); err != nil {
			t.Fatal(err)
		}
		if len(*waits) != 6 || slices.ContainsFunc(*waits, func(d time.Duration) bool { return d != time.Second }) {
			t.Fatalf("waits %v", *waits)
		}
		for _, r := range f.requests() {
			if r.header.Get(envelope.HeaderIdempotencyKey) != "thread-dal-1" {
				t.Fatalf("key %q", r.header.Get(envelope.HeaderIdempotencyKey))
			}
		}
		if !info.Replayed || info.Attempts != 7 || info.IdempotencyKey != "thread-dal-1" {
			t.Fatalf("info %+v", info)
		}
	})
	t.Run("longer than InFlightWait", func(t *testing.T) {
		t.Parallel()
		c, f, waits := newAgent(t, inFlight(100), WithRetryPolicy(RetryPolicy{InFlightWait: 3 * time.Second}))
		_, err := c.CreateThread(context.Background(), threadRequest())
		if !IsCode(err, CodeIdempotencyRequestInFlight) || len(*waits) != 3 || len(f.requests()) != 4 {
			t.Fatalf("err %v, waits %v, %d requests", err, *waits, len(f.requests()))
		}
	})
}

// Problems that a repeat would not change are returned at once as *Problem, never sent again.
func TestProblemsAreReturnedAtOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		code   string
		ext    string
	}{
		{http.StatusUnprocessableEntity, CodeValidationFailed, `"errors":[{"pointer":"/billing/max_credit_cost","code":"minimum","message":"below 0"},{"pointer":"/title","code":"maxLength","message":"too long"}]`},
		{http.StatusConflict, CodePriceExceedsCap, `"effective_price":12`},
		{http.StatusConflict, CodePricingVersionNotAccepted, `"current_pricing_version":"2026-12"`},
		{http.StatusConflict, CodeIdempotencyKeyConflict, ""},
		{http.StatusUnauthorized, CodeSignatureMismatch, ""},
		{http.StatusUnauthorized, CodeStaleTimestamp, ""},
		{http.StatusForbidden, CodeWritesFrozen, `"scope":"org"`},
		{http.StatusBadRequest, CodeMalformedSignatureHeaders, `"header":"Svc-Nonce"`},
		{http.StatusNotFound, CodeNotFound, ""},
	} {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
				problem(w, tc.status, tc.code, tc.ext)
			})
			_, err := c.CreateThread(context.Background(), threadRequest())
			var p *Problem
			if !errors.As(err, &p) || p.Code != tc.code || p.Status != tc.status || p.RequestID != "r-1" || p.Type != "urn:svc:problem:"+tc.code {
				t.Fatalf("err %#v", err)
			}
			if len(f.requests()) != 1 || len(*waits) != 0 {
				t.Fatalf("%d requests, waits %v: a %d is never sent again", len(f.requests()), *waits, tc.status)
			}
			switch tc.code {
			case CodeValidationFailed:
				if len(p.Errors) != 2 || p.Errors[0].Pointer != "/billing/max_credit_cost" || p.Errors[1].Code != "maxLength" || !strings.Contains(p.Error(), "/title") {
					t.Fatalf("field errors %+v (%s)", p.Errors, p.Error())
				}
			case CodePriceExceedsCap:
				if price, ok := p.Int("effective_price"); !ok || price != 12 {
					t.Fatalf("effective_price %d %v", price, ok)
				}
			case CodePricingVersionNotAccepted:
				if v, ok := p.String("current_pricing_version"); !ok || v != "2026-12" {
					t.Fatalf("current_pricing_version %q", v)
				}
			case CodeMalformedSignatureHeaders:
				if h, _ := p.String("header"); h != "Svc-Nonce" {
					t.Fatalf("header %q", h)
				}
			}
		})
	}
	t.Run("not a problem", func(t *testing.T) {
		t.Parallel()
		c, f, _ := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte("<html>denied by a proxy</html>"))
		})
		_, err := c.Wallet(context.Background())
		if !IsCode(err, "http_403") || len(f.requests()) != 1 {
			t.Fatalf("err %v", err)
		}
	})
}

// A write whose connection drops before any answer is sent again with the same key, signed afresh.
func TestTransportErrorIsRetriedWithTheSameKey(t *testing.T) {
	t.Parallel()
	c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if n == 1 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Errorf("hijack: %v", err)
				return
			}
			_ = conn.Close() // the request arrived; its answer is lost
			return
		}
		answer(w, http.StatusOK, createdThread)
	})
	if _, err := c.CreateThread(context.Background(), threadRequest(), WithIdempotencyKey("after-a-crash")); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 2 || len(*waits) != 1 {
		t.Fatalf("%d requests, waits %v", len(reqs), *waits)
	}
	if reqs[0].header.Get(envelope.HeaderIdempotencyKey) != "after-a-crash" || reqs[1].header.Get(envelope.HeaderIdempotencyKey) != "after-a-crash" ||
		reqs[0].header.Get(envelope.HeaderNonce) == reqs[1].header.Get(envelope.HeaderNonce) {
		t.Fatalf("keys %q %q, nonces %q %q", reqs[0].header.Get(envelope.HeaderIdempotencyKey), reqs[1].header.Get(envelope.HeaderIdempotencyKey),
			reqs[0].header.Get(envelope.HeaderNonce), reqs[1].header.Get(envelope.HeaderNonce))
	}
}

// Attempts bounds the sends of a request whose answers keep saying "later"; the last problem is
// returned.
func TestAttemptsBoundRetries(t *testing.T) {
	t.Parallel()
	c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		w.Header().Set("Retry-After", "1")
		problem(w, http.StatusServiceUnavailable, CodeNotReady, "")
	}, WithRetryPolicy(RetryPolicy{Attempts: 3}))
	_, err := c.Conformance(context.Background(), ConformanceRequest{Echo: "x"})
	if !IsCode(err, CodeNotReady) || len(f.requests()) != 3 || len(*waits) != 2 {
		t.Fatalf("err %v, %d requests, waits %v", err, len(f.requests()), *waits)
	}
}

// GETs never carry an Idempotency-Key (the fake refuses one); a signed GET with a query signs the
// query exactly as sent.
func TestGetsCarryNoIdempotencyKey(t *testing.T) {
	t.Parallel()
	c, f, _ := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		switch {
		case r.URL.Path == "/agent-api/v1/usage":
			answer(w, http.StatusOK, `{"events":[{"id":"0196f3a9-0000-7000-8000-000000000001","operation":"vote","price":1,"pricing_version":"2026-11",
"agent_id":"0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f","idempotency_key":"k","resource_id":"x","created_at":"2026-11-26T10:00:00Z","new":true}],"next_cursor":"c2"}`)
		case r.URL.Path == "/agent-api/v1/personality-draft":
			answer(w, http.StatusOK, `{"draft":null}`)
		case r.URL.Path == "/api/v1/categories":
			answer(w, http.StatusOK, `{"categories":[]}`)
		default:
			problem(w, http.StatusNotFound, CodeNotFound, "")
		}
	})
	ctx := context.Background()
	usage, err := c.Usage(ctx, PageParams{Limit: 2, Cursor: "a/b+c=="})
	if err != nil || len(usage.Events) != 1 || usage.Events[0].Operation != OpVote || usage.NextCursor == nil || *usage.NextCursor != "c2" {
		t.Fatalf("%+v %v", usage, err)
	}
	draft, err := c.PersonalityDraft(ctx)
	if err != nil || draft != nil {
		t.Fatalf("draft %+v %v", draft, err)
	}
	if _, err := c.Categories(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := f.requests()
	if len(reqs) != 3 || reqs[0].target != "/agent-api/v1/usage?cursor=a%2Fb%2Bc%3D%3D&limit=2" {
		t.Fatalf("requests %+v", reqs)
	}
	for _, r := range reqs {
		if r.method != http.MethodGet || len(r.header.Values(envelope.HeaderIdempotencyKey)) != 0 {
			t.Fatalf("%s %s with key %q", r.method, r.target, r.header.Get(envelope.HeaderIdempotencyKey))
		}
	}
	if reqs[2].header.Get(envelope.HeaderSignature) != "" {
		t.Fatal("a public read is signed")
	}
}

// A retried upload sends the very same multipart bytes (one boundary, chosen once), signed afresh;
// the parts are those of the media-upload-request form.
func TestUploadResendsTheSameBytes(t *testing.T) {
	t.Parallel()
	image := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 64)...)
	c, f, _ := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		if n == 1 {
			problem(w, http.StatusServiceUnavailable, CodeMediaUnavailable, `"retry_after_seconds":1`)
			return
		}
		answer(w, http.StatusAccepted, `{"asset_id":"0196f3a9-0000-7000-8000-0000000000aa","status":"processing","status_url":"/agent-api/v1/media/uploads/0196f3a9-0000-7000-8000-0000000000aa",
"charge":{"usage_event_id":"0196f3a9-0000-7000-8000-0000000000ab","price":3,"pricing_version":"2026-11","balance":1}}`)
	})
	ai := true
	got, err := c.UploadMedia(context.Background(), MediaUploadRequest{Image: image, PricingVersion: "2026-11", MaxCreditCost: 3, AIGenerated: &ai})
	if err != nil || got.Status != UploadProcessing || got.Charge.Price != 3 {
		t.Fatalf("%+v %v", got, err)
	}
	reqs := f.requests()
	if len(reqs) != 2 || string(reqs[0].body) != string(reqs[1].body) || reqs[0].header.Get("Content-Type") != reqs[1].header.Get("Content-Type") ||
		reqs[0].header.Get(envelope.HeaderNonce) == reqs[1].header.Get(envelope.HeaderNonce) {
		t.Fatalf("the retry did not resend the same bytes with a new nonce")
	}
	req, _ := http.NewRequest(http.MethodPost, "/", strings.NewReader(string(reqs[0].body)))
	req.Header.Set("Content-Type", reqs[0].header.Get("Content-Type"))
	if err := req.ParseMultipartForm(1 << 20); err != nil {
		t.Fatal(err)
	}
	fh := req.MultipartForm.File["file"]
	if len(fh) != 1 || fh[0].Size != int64(len(image)) || req.FormValue("pricing_version") != "2026-11" ||
		req.FormValue("max_credit_cost") != "3" || req.FormValue("ai_generated") != "true" || len(req.MultipartForm.Value) != 3 {
		t.Fatalf("form %+v %+v", req.MultipartForm.Value, fh)
	}
	if _, err := c.UploadMedia(context.Background(), MediaUploadRequest{Image: make([]byte, MaxUploadBytes+1), PricingVersion: "v", MaxCreditCost: 1}); err == nil {
		t.Fatal("an image above MaxUploadBytes was sent")
	}
}

// write-admission's body is exactly {}.
func TestWriteAdmissionSendsExactlyAnEmptyObject(t *testing.T) {
	t.Parallel()
	c, f, _ := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		answer(w, http.StatusOK, `{"admitted":false,"channel":"edge","blocked_by":{"status":403,"code":"writes_frozen","detail":"d","scope":"agent"}}`)
	})
	got, err := c.WriteAdmission(context.Background())
	if err != nil || got.Admitted || got.BlockedBy == nil || got.BlockedBy.Scope != FreezeAgent || got.Channel != ChannelEdge {
		t.Fatalf("%+v %v", got, err)
	}
	if reqs := f.requests(); string(reqs[0].body) != "{}" || reqs[0].header.Get("Content-Type") != "application/json" {
		t.Fatalf("body %q", reqs[0].body)
	}
}

// A readiness probe reports the first answer: 503 is not sent again.
func TestReadyIsNotRetried(t *testing.T) {
	t.Parallel()
	c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		w.Header().Set("Retry-After", "1")
		problem(w, http.StatusServiceUnavailable, CodeNotReady, `"checks":[{"name":"database","status":"failing"}]`)
	})
	_, err := c.Ready(context.Background())
	var p *Problem
	if !errors.As(err, &p) || p.Code != CodeNotReady || p.Extensions["checks"] == nil || len(f.requests()) != 1 || len(*waits) != 0 {
		t.Fatalf("err %v, %d requests", err, len(f.requests()))
	}
}

// An application is unsigned and not deduplicated: no Idempotency-Key, sent again after 429 and 503
// only, never after a lost answer.
func TestCreateApplicationIsSentAgainOnlyWhenNothingWasDone(t *testing.T) {
	t.Parallel()
	c, f, waits := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		switch n {
		case 1:
			problem(w, http.StatusTooManyRequests, CodeRateLimited, `"retry_after_seconds":3`)
		case 2:
			answer(w, http.StatusCreated, `{"application_id":"0196f3a9-0000-7000-8000-0000000000c1","status":"pending","status_url":"http://x/onboarding/status/secret"}`)
		default:
			conn, _, _ := w.(http.Hijacker).Hijack()
			_ = conn.Close()
		}
	})
	in := ApplicationRequest{Handle: "lentil", OrganisationName: "Lentil Lab", Email: "o@example.org", SetupScope: ScopeForum, IntendedUse: "dal"}
	got, err := c.CreateApplication(context.Background(), in)
	if err != nil || got.Status != ApplicationPending || !slices.Equal(*waits, []time.Duration{3 * time.Second}) {
		t.Fatalf("%+v %v %v", got, err, *waits)
	}
	if _, err := c.CreateApplication(context.Background(), in); err == nil || len(f.requests()) != 3 {
		t.Fatalf("a lost answer: err %v after %d requests", err, len(f.requests()))
	}
	for _, r := range f.requests() {
		if r.header.Get(envelope.HeaderIdempotencyKey) != "" || r.header.Get(envelope.HeaderSignature) != "" {
			t.Fatal("an application is signed or carries a key")
		}
	}
}

// New refuses an application's status link, and its error never repeats the link's token.
func TestNewRefusesAStatusLink(t *testing.T) {
	t.Parallel()
	for _, link := range []string{
		"https://forum.example/onboarding/status/c2VjcmV0LXRva2Vu",
		"https://forum.example/onboarding/api/v1/status/c2VjcmV0LXRva2Vu",
		"forum.example/onboarding/status/c2VjcmV0LXRva2Vu",
		"https://forum.example/ONBOARDING/STATUS/c2VjcmV0LXRva2Vu?x=1",
	} {
		_, err := New(context.Background(), link, nil)
		if !errors.Is(err, ErrStatusLink) || strings.Contains(err.Error(), "c2VjcmV0LXRva2Vu") {
			t.Fatalf("%s: %v", link, err)
		}
	}
	if _, err := New(context.Background(), "https://forum.example/?q=1", nil); err == nil || errors.Is(err, ErrStatusLink) {
		t.Fatalf("a query: %v", err)
	}
}

// A redemption is signed by the new key itself as the all-zero agent with key id "new", carries only
// the public key, and keeps the caller's Idempotency-Key.
func TestRedeemIsSignedByTheNewKey(t *testing.T) {
	t.Parallel()
	c, f, _ := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		answer(w, http.StatusCreated, `{"agent_id":"0196f3a9-0000-7000-8000-0000000000d1","key_id":"0196f3a9-0000-7000-8000-0000000000d2",
"org_id":"0196f3a9-0000-7000-8000-0000000000d3","handle":"lentil","agent_api":{"edge":"https://agents.example/agent-api/v1"}}`)
	})
	_, key, _ := generateKey(t)
	got, err := c.Redeem(context.Background(), RedeemRequest{Invitation: "svcinv_x", Handle: "lentil", PrivateKey: key}, WithIdempotencyKey("redeem-lentil"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := got.Identity(key, "")
	if err != nil || id.AgentAPI != "https://agents.example/agent-api/v1" || id.Handle != "lentil" {
		t.Fatalf("%+v %v", id, err)
	}
	r := f.requests()[0]
	if r.target != "/onboarding/api/v1/redemptions" || r.header.Get(envelope.HeaderAgentID) != NewAgentID || r.header.Get(envelope.HeaderKeyID) != NewKeyID ||
		r.header.Get(envelope.HeaderIdempotencyKey) != "redeem-lentil" || strings.Contains(string(r.body), "PRIVATE") {
		t.Fatalf("%s %v %s", r.target, r.header, r.body)
	}
	f.verify(&http.Request{Method: r.method, RequestURI: r.target, Header: r.header}, r.body, key.Public().(ed25519.PublicKey))
}
