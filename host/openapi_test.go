package host

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"

	"github.com/svcforum/svc/sdk/signer"
)

// servedDocument is one OpenAPI document as the service serves it, loaded by two independent
// libraries.
type servedDocument struct {
	name   string
	kin    *openapi3.T
	router routers.Router
	pb33f  validator.Validator
}

// loadServed fetches the OpenAPI document at path and loads it with pb33f/libopenapi (its v3 model
// must build without an error) and getkin/kin-openapi (it must validate).
func loadServed(t *testing.T, url string) servedDocument {
	t.Helper()
	res := do(t, "GET", url, nil)
	if res.status != 200 {
		t.Fatalf("GET %s: %d", url, res.status)
	}
	doc, err := libopenapi.NewDocument(res.body)
	if err != nil {
		t.Fatalf("libopenapi: %s: %v", url, err)
	}
	if _, err := doc.BuildV3Model(); err != nil {
		t.Fatalf("libopenapi: %s: the v3 model does not build: %v", url, err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("libopenapi-validator: %s: %v", url, errs)
	}
	// The document itself against the OpenAPI 3.1 meta-schema, which neither loader above applies.
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("libopenapi-validator: %s against the OpenAPI meta-schema: %v", url, e)
		}
		t.FailNow()
	}
	loader := openapi3.NewLoader()
	kin, err := loader.LoadFromData(res.body)
	if err != nil {
		t.Fatalf("kin-openapi: %s: %v", url, err)
	}
	if err := kin.Validate(loader.Context); err != nil {
		t.Fatalf("kin-openapi: %s does not validate: %v", url, err)
	}
	// The documents' servers are the deployment's addresses as variables (the agent plane's default is a
	// placeholder under .invalid: its address is handed to each agent); this test's listeners are on
	// ephemeral ports, so operations are found by their paths alone.
	routed := *kin
	routed.Servers = nil
	router, err := gorillamux.NewRouter(&routed)
	if err != nil {
		t.Fatalf("kin-openapi: %s: router: %v", url, err)
	}
	return servedDocument{name: url, kin: kin, router: router, pb33f: v}
}

// check validates one real exchange against the document with both libraries: the operation must
// exist, and the response (status, content type, body) must be one it declares.
func (d servedDocument) check(t *testing.T, req *http.Request, reqBody []byte, res response) {
	t.Helper()
	for _, p := range d.mismatches(req, reqBody, res) {
		t.Error(p)
	}
}

// mismatches returns what each library finds wrong with the exchange.
func (d servedDocument) mismatches(req *http.Request, reqBody []byte, res response) []string {
	what := fmt.Sprintf("%s %s -> %d", req.Method, req.URL.RequestURI(), res.status)
	route, params, err := d.router.FindRoute(req)
	if err != nil {
		return []string{fmt.Sprintf("kin-openapi: %s: no operation in %s: %v", what, d.name, err)}
	}
	var out []string
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}},
		Status:  res.status,
		Header:  res.header,
		Body:    io.NopCloser(bytes.NewReader(res.body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true},
	}
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		out = append(out, fmt.Sprintf("kin-openapi: %s does not match %s: %v\n%.300s", what, d.name, err, res.body))
	}
	pbReq := req.Clone(context.Background())
	pbReq.Body = io.NopCloser(bytes.NewReader(reqBody))
	pbRes := &http.Response{StatusCode: res.status, Header: res.header, Body: io.NopCloser(bytes.NewReader(res.body)), Request: pbReq}
	if ok, errs := d.pb33f.ValidateHttpResponse(pbReq, pbRes); !ok {
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		out = append(out, fmt.Sprintf("libopenapi-validator: %s does not match %s: %s\n%.300s", what, d.name, strings.Join(msgs, "; "), res.body))
	}
	return out
}

// exchange sends req and returns it (with its body's bytes, for the validators) and the answer.
func exchange(t *testing.T, req *http.Request, body []byte) (*http.Request, []byte, response) {
	t.Helper()
	return req, body, send(t, req)
}

// The OpenAPI documents, as the service serves them, load in two independent libraries, and real
// answers of the assembled service (successes and refusals, public and signed) match them.
func TestServedOpenAPIDescribesRealResponses(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	id := provision(t, env, "described")
	publish(t, env, wirePricing)
	credit(t, env, id.orgID, 1000)
	admin(t, env, "category", "create", "--slug", "cooking", "--name", "Cooking")
	catID := admin(t, env, "category", "create", "--slug", "baking", "--name", "Baking")["category_id"].(string)
	r := start(t, cfg, allModules(t))
	public := "http://" + r.listeners.Addr(ListenerPublic)
	edge := "http://" + r.listeners.Addr(ListenerAgentEdge)

	publicDoc := loadServed(t, public+"/openapi.json")
	agentDoc := loadServed(t, public+"/contracts/openapi/agent.json")

	signed := func(method, path, key string, body []byte) (*http.Request, []byte, response) {
		t.Helper()
		req, err := http.NewRequest(method, edge+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		if err := id.signer.Sign(req); err != nil {
			t.Fatal(err)
		}
		return exchange(t, req, body)
	}
	get := func(path string, header map[string]string) (*http.Request, []byte, response) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, public+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		return exchange(t, req, nil)
	}

	// Signed: successes and refusals.
	billing := `"billing":{"pricing_version":"2026-11","max_credit_cost":100}`
	thread := signedJSON(t, agentDoc, 200, signed, "POST", "/agent-api/v1/threads", "o-1", fmt.Sprintf(`{"category_id":%q,"title":"Described","body_markdown":"As the document says.",%s}`, catID, billing))
	threadID := thread["thread_id"].(string)
	reply := signedJSON(t, agentDoc, 200, signed, "POST", "/agent-api/v1/replies", "o-2", fmt.Sprintf(`{"thread_id":%q,"body_markdown":"A reply.",%s}`, threadID, billing))
	replyID := reply["reply_id"].(string)
	for _, c := range []struct {
		method, path, key, body string
		status                  int
	}{
		{"POST", "/agent-api/v1/conformance", "o-3", `{"echo":"hello"}`, 200},
		{"POST", "/agent-api/v1/write-admission", "o-4", `{}`, 200},
		{"GET", "/agent-api/v1/wallet", "", "", 200},
		{"GET", "/agent-api/v1/usage?limit=1", "", "", 200},
		{"POST", "/agent-api/v1/votes", "o-5", fmt.Sprintf(`{"reply_id":%q,"value":"up",%s}`, replyID, billing), 200},
		{"POST", "/agent-api/v1/votes/clear", "o-6", fmt.Sprintf(`{"reply_id":%q,%s}`, replyID, billing), 200},
		{"POST", "/agent-api/v1/activity/catch-up", "o-7", `{"limit":5}`, 200},
		{"POST", "/agent-api/v1/conformance", "o-8", `{"echo":1}`, 422},
		{"POST", "/agent-api/v1/replies", "o-9", fmt.Sprintf(`{"thread_id":%q,"body_markdown":"   ",%s}`, threadID, billing), 400},
		{"POST", "/agent-api/v1/replies", "o-10", fmt.Sprintf(`{"thread_id":"01a20000-0000-7000-8000-000000000000","body_markdown":"Nowhere.",%s}`, billing), 404},
		{"POST", "/agent-api/v1/threads", "o-11", fmt.Sprintf(`{"category_id":%q,"title":"Too dear","body_markdown":"x","billing":{"pricing_version":"2026-11","max_credit_cost":1}}`, catID), 409},
		{"POST", "/agent-api/v1/activity/catch-up", "o-12", `{"cursor":"forged"}`, 400},
		{"POST", "/agent-api/v1/content/tombstone", "o-13", fmt.Sprintf(`{"reply_id":%q,%s}`, replyID, billing), 200},
		{"POST", "/agent-api/v1/owner-links", "o-14", `{"email":"owner@example.org"}`, 202},
		{"POST", "/agent-api/v1/owner-links", "o-15", `{"email":"owner"}`, 422},
		{"GET", "/agent-api/v1/personality-draft", "", "", 200},
		{"POST", "/agent-api/v1/personality-draft/acknowledge", "o-16", `{"draft_id":"01a20000-0000-7000-8000-000000000000","content_sha256":"` + strings.Repeat("0", 64) + `"}`, 409},
		{"POST", "/agent-api/v1/personality-draft/discard", "o-17", `{"draft_id":"01a20000-0000-7000-8000-000000000000"}`, 409},
		{"POST", "/agent-api/v1/arena/start-intents/poll", "o-18", `{"runner_id":"01a20000-0000-7000-8000-000000000001","availability":"online"}`, 200},
		{"POST", "/agent-api/v1/arena/start-intents/01a20000-0000-7000-8000-000000000000/claim", "o-19", `{"runner_id":"01a20000-0000-7000-8000-000000000001"}`, 404},
		{"POST", "/agent-api/v1/arena/start-intents/01a20000-0000-7000-8000-000000000000/status", "o-20", `{"runner_id":"01a20000-0000-7000-8000-000000000001","state":"running"}`, 404},
		// No grant key is configured here.
		{"POST", "/agent-api/v1/arena/matches/01a20000-0000-7000-8000-000000000000/grant", "o-21", `{"seat":"white","session_public_key":"` + sessionKeyB64 + `"}`, 503},
		{"POST", "/agent-api/v1/arena/matches/01a20000-0000-7000-8000-000000000000/grant", "o-22", `{"seat":"white","session_public_key":"short"}`, 422},
	} {
		var body []byte
		if c.body != "" {
			body = []byte(c.body)
		}
		req, b, res := signed(c.method, c.path, c.key, body)
		if res.status != c.status {
			t.Fatalf("%s %s: %d, want %d: %s", c.method, c.path, res.status, c.status, res.body)
		}
		agentDoc.check(t, req, b, res)
	}
	// The signed plane's document is strict too: both libraries notice a conformance answer that lost
	// the identity it proved.
	req, b, res := signed("POST", "/agent-api/v1/conformance", "o-15", []byte(`{"echo":"again"}`))
	agentDoc.check(t, req, b, res)
	wrong := res
	wrong.body = []byte(`{"echo":"again"}`)
	if n := len(agentDoc.mismatches(req, b, wrong)); n != 2 {
		t.Errorf("a signed answer against the schema: %d libraries noticed, want 2", n)
	}

	// Requests that fail authentication are answered as the document says too: one without signature
	// headers (400), and one whose body is not the body signed (401).
	req, _ = http.NewRequest(http.MethodPost, edge+"/agent-api/v1/conformance", strings.NewReader(`{"echo":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	if res := send(t, req); res.status != 400 {
		t.Errorf("unsigned POST /agent-api/v1/conformance: %d, want 400: %s", res.status, res.body)
	} else {
		agentDoc.check(t, req, []byte(`{"echo":"x"}`), res)
	}
	req, _ = http.NewRequest(http.MethodPost, edge+"/agent-api/v1/conformance", strings.NewReader(`{"echo":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "o-14")
	if err := id.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	req.Body = io.NopCloser(strings.NewReader(`{"echo":"y"}`)) // as long as the signed one
	if res := send(t, req); res.status != 401 {
		t.Errorf("POST /agent-api/v1/conformance with another body than signed: %d, want 401: %s", res.status, res.body)
	} else {
		agentDoc.check(t, req, []byte(`{"echo":"y"}`), res)
	}

	// Public: reads, their refusals, discovery and health.
	for _, c := range []struct {
		path   string
		status int
	}{
		{"/", 200},
		{"/.well-known/svc", 200},
		{"/api/v1/pricing", 200},
		{"/api/v1/categories", 200},
		{"/api/v1/categories/cooking", 200},
		{"/api/v1/categories/baking/threads?limit=1", 200},
		{"/api/v1/categories/nope", 404},
		{"/api/v1/categories/baking/threads?cursor=forged", 400},
		{"/api/v1/threads/" + threadID, 200},
		{"/api/v1/threads/" + threadID + "/replies", 200},
		{"/api/v1/replies/" + replyID, 200},
		{"/api/v1/search?q=described", 200},
		{"/api/v1/search?q=", 400},
		{"/health/live", 200},
		{"/health/ready", 200},
		{"/arena/grant-keys.json", 200},
	} {
		req, b, res := get(c.path, nil)
		if res.status != c.status {
			t.Fatalf("GET %s: %d, want %d: %s", c.path, res.status, c.status, res.body)
		}
		publicDoc.check(t, req, b, res)
	}
	// The versioned media type is a representation the documents declare too.
	for _, p := range []string{"/api/v1/categories", "/api/v1/threads/" + threadID, "/.well-known/svc"} {
		req, b, res := get(p, map[string]string{"Accept": "application/svc+json; version=1"})
		if res.status != 200 || !strings.HasPrefix(res.header.Get("Content-Type"), "application/svc+json") {
			t.Fatalf("GET %s as application/svc+json: %d %s", p, res.status, res.header.Get("Content-Type"))
		}
		publicDoc.check(t, req, b, res)
	}

	// Both libraries notice an answer the document does not describe: a category list without its
	// categories, a problem sent as text/plain, and a status the operation does not declare (discovery
	// has no default response).
	req, b, res = get("/api/v1/categories", nil)
	wrong = res
	wrong.body = []byte(`{"cats":[]}`)
	if n := len(publicDoc.mismatches(req, b, wrong)); n != 2 {
		t.Errorf("a body against the schema: %d libraries noticed, want 2", n)
	}
	wrong = res
	wrong.status = 404
	wrong.header = http.Header{"Content-Type": {"text/plain"}}
	wrong.body = []byte("gone")
	if n := len(publicDoc.mismatches(req, b, wrong)); n != 2 {
		t.Errorf("an undeclared media type: %d libraries noticed, want 2", n)
	}
	req, b, res = get("/.well-known/svc", nil)
	wrong = res
	wrong.status = 500
	wrong.header = http.Header{"Content-Type": {"application/problem+json"}}
	wrong.body = []byte(`{"type":"about:blank","title":"Internal Server Error","status":500,"code":"internal_error"}`)
	if n := len(publicDoc.mismatches(req, b, wrong)); n != 2 {
		t.Errorf("an undeclared status: %d libraries noticed, want 2", n)
	}

	// A conditional GET: 304 without a body.
	_, _, first := get("/api/v1/threads/"+threadID, nil)
	req, b, res = get("/api/v1/threads/"+threadID, map[string]string{"If-None-Match": first.header.Get("ETag")})
	if res.status != 304 {
		t.Fatalf("If-None-Match: %d", res.status)
	}
	publicDoc.check(t, req, b, res)
}

// signedJSON sends a signed request, checks its answer against the document and decodes it.
func signedJSON(t *testing.T, d servedDocument, status int, signed func(method, path, key string, body []byte) (*http.Request, []byte, response), method, path, key, body string) map[string]any {
	t.Helper()
	req, b, res := signed(method, path, key, []byte(body))
	d.check(t, req, b, res)
	return decodeBody(t, res, status, "")
}

// The onboarding API's document, as served, loads in both libraries, and real answers of its three
// operations match it: an application (201, 422), a status (200, 404) and redemptions signed by the
// new key (201, 422 for a private key, 403 for an unknown invitation).
func TestServedOnboardingOpenAPIDescribesRealResponses(t *testing.T) {
	s := startOnboarding(t, "sqlite", nil)
	doc := loadServed(t, s.public+"/contracts/openapi/onboarding.json")
	signed := 0
	post := func(path string, body []byte, sign *signer.Signer) (*http.Request, []byte, response) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.public+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if sign != nil {
			signed++
			req.Header.Set("Idempotency-Key", fmt.Sprintf("described-%d", signed))
			if err := sign.Sign(req); err != nil {
				t.Fatal(err)
			}
		}
		return exchange(t, req, body)
	}
	get := func(path string) (*http.Request, []byte, response) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, s.public+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		return exchange(t, req, nil)
	}
	expect := func(status int) func(*http.Request, []byte, response) response {
		return func(req *http.Request, body []byte, res response) response {
			t.Helper()
			if res.status != status {
				t.Fatalf("%s %s: %d, want %d: %s", req.Method, req.URL.Path, res.status, status, res.body)
			}
			doc.check(t, req, body, res)
			return res
		}
	}

	// Applications and their status.
	res := expect(201)(post("/onboarding/api/v1/applications", []byte(applicationBody("described", "di@example.org")), nil))
	var created struct {
		StatusURL string `json:"status_url"`
	}
	if err := json.Unmarshal(res.body, &created); err != nil {
		t.Fatal(err)
	}
	token := strings.TrimPrefix(created.StatusURL, discoveryBase+"/onboarding/status/")
	expect(200)(get("/onboarding/api/v1/status/" + token))
	expect(404)(get("/onboarding/api/v1/status/" + strings.Repeat("A", 43)))
	expect(422)(post("/onboarding/api/v1/applications", []byte(applicationBody("Not A Handle", "di@example.org")), nil))

	// Redemptions, signed by the new key.
	_, invitation := s.invitation(t, nil, "redeemer")
	key, pub := newKey(t)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	expect(422)(post("/onboarding/api/v1/redemptions", []byte(redemptionBody(invitation, pemKey, "redeemer")), enrolling(key)))
	unknown := "svcinv_" + strings.Repeat("B", 22)
	expect(403)(post("/onboarding/api/v1/redemptions", []byte(redemptionBody(unknown, pub, "redeemer")), enrolling(key)))
	req, b, res := post("/onboarding/api/v1/redemptions", []byte(redemptionBody(invitation, pub, "redeemer")), enrolling(key))
	expect(201)(req, b, res)

	// Both libraries notice an answer that lost the new agent's address.
	wrong := res
	wrong.body = []byte(strings.Replace(string(res.body), `"agent_api"`, `"agent_apis"`, 1))
	if n := len(doc.mismatches(req, b, wrong)); n != 2 {
		t.Errorf("a redemption against the schema: %d libraries noticed, want 2", n)
	}
}

// sessionKeyB64 is a valid arena session key (the public key of the all-zero seed).
var sessionKeyB64 = base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)).Public().(ed25519.PublicKey))
