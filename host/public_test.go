package host

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/site"
)

// browser is the Accept header a browser sends for a page.
var browser = map[string]string{"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}

// Each client address of the public listener gets its rate and burst, then 429 with Retry-After (a
// page for a person, a problem for a program); the probes are never limited, and other listeners
// are not limited by it.
func TestPublicRateLimitPerAddress(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.PublicRate, cfg.PublicBurst = 0.01, 3 // three at once, then one every 100 s
	r := start(t, cfg, discoveryOnly(t))
	for i := range cfg.PublicBurst {
		if res := do(t, "GET", r.url(ListenerPublic, "/"), nil); res.status != 200 {
			t.Fatalf("request %d within the burst: %d", i+1, res.status)
		}
	}
	res := do(t, "GET", r.url(ListenerPublic, "/"), nil)
	p := checkProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	if ra, err := strconv.Atoi(res.header.Get("Retry-After")); err != nil || ra < 1 || p["retry_after_seconds"] != float64(ra) {
		t.Fatalf("Retry-After %q, retry_after_seconds %v", res.header.Get("Retry-After"), p["retry_after_seconds"])
	}
	page := do(t, "GET", r.url(ListenerPublic, "/forum"), browser)
	if page.status != http.StatusTooManyRequests || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") ||
		page.header.Get("Retry-After") == "" || page.header.Get("Content-Security-Policy") != site.CSP {
		t.Fatalf("a person over the limit: %d %v", page.status, page.header)
	}
	for _, path := range []string{"/health/live", "/health/ready"} {
		if res := do(t, "GET", r.url(ListenerPublic, path), nil); res.status != 200 {
			t.Fatalf("%s over the limit: %d", path, res.status)
		}
	}
	if res := do(t, "GET", r.url(ListenerAdmin, "/metrics"), nil); res.status != 200 {
		t.Fatalf("/metrics: %d", res.status)
	}
}

// An unknown address answers a person with the site's 404 page and a program with a problem; so
// does a method the route does not take.
func TestNotFoundForPeopleAndPrograms(t *testing.T) {
	r := start(t, testConfig(t, "sqlite"), allModules(t))
	checkProblem(t, do(t, "GET", r.url(ListenerPublic, "/forum/nothing/here"), nil), 404, "not_found")
	checkProblem(t, do(t, "GET", r.url(ListenerPublic, "/forum/nothing/here"), map[string]string{"Accept": "application/json"}), 404, "not_found")
	page := do(t, "GET", r.url(ListenerPublic, "/forum/nothing/here"), browser)
	if page.status != 404 || page.header.Get("Content-Type") != site.MediaType || page.header.Get("Content-Security-Policy") != site.CSP ||
		!strings.Contains(string(page.body), "There is no page at this address.") || page.header.Get(RequestIDHeader) == "" {
		t.Fatalf("404 page: %d %v\n%s", page.status, page.header, page.body)
	}
	page = do(t, "DELETE", r.url(ListenerPublic, "/.well-known/svc"), browser)
	if page.status != 405 || page.header.Get("Content-Type") != site.MediaType {
		t.Fatalf("405 page: %d %v", page.status, page.header)
	}
	checkProblem(t, do(t, "DELETE", r.url(ListenerPublic, "/.well-known/svc"), nil), 405, "method_not_allowed")
}

// The agent plane's address is published nowhere (spec section 1.4): neither discovery, nor the
// documents it names, nor the front door names the agent channels' addresses.
func TestAgentPlaneAddressNotPublished(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.AgentEdgeURL = "https://agents.example.test"
	cfg.AgentPrivateURL = "http://10.9.8.7:8082"
	r := start(t, cfg, allModules(t))
	edge := r.listeners.Addr(ListenerAgentEdge)
	_, edgePort, _ := strings.Cut(edge, ":")
	paths := []string{"/", "/.well-known/svc", "/openapi.json", "/contracts/openapi/agent.json", "/developers/SKILL.md", "/contracts/examples"}
	for _, c := range contracts.SkillChapters() {
		paths = append(paths, "/developers/skill/"+c+".md")
	}
	for _, path := range paths {
		res := do(t, "GET", r.url(ListenerPublic, path), nil)
		if res.status != 200 {
			t.Fatalf("GET %s: %d", path, res.status)
		}
		for _, secret := range []string{"agents.example.test", "10.9.8.7", edge, ":" + edgePort} {
			if strings.Contains(string(res.body), secret) {
				t.Errorf("GET %s names the agent plane's address (%s)", path, secret)
			}
		}
	}
}

// A query string that is not valid URL encoding is 400 bad_request on every listener, before any handler
// (Go's parser would drop the pair, and a list would answer its first page for a garbled cursor): a
// page for a person, a problem for a program, and no signature is looked at.
func TestMalformedQueryRefused(t *testing.T) {
	r := start(t, testConfig(t, "sqlite"), allModules(t))
	for _, target := range []string{"/api/v1/categories/general/threads?cursor=%zz", "/forum?page=1;2", "/.well-known/svc?x=%"} {
		checkProblem(t, do(t, "GET", r.url(ListenerPublic, target), nil), 400, "bad_request")
	}
	page := do(t, "GET", r.url(ListenerPublic, "/forum/search?q=%zz"), browser)
	if page.status != 400 || page.header.Get("Content-Type") != site.MediaType || page.header.Get("Content-Security-Policy") != site.CSP {
		t.Fatalf("a person's garbled query: %d %v\n%s", page.status, page.header, page.body)
	}
	checkProblem(t, do(t, "POST", r.url(ListenerAgentEdge, "/agent-api/v1/conformance?x=%zz"), nil), 400, "bad_request")
	// The probes read no parameter, and answer as their contract says.
	if res := do(t, "GET", r.url(ListenerPublic, "/health/live?x=%zz"), nil); res.status != 200 {
		t.Fatalf("a probe with a garbled query: %d", res.status)
	}
	// Well-formed escapes are untouched.
	if res := do(t, "GET", r.url(ListenerPublic, "/forum/search?q=lentil%20soup"), browser); res.status != 200 {
		t.Fatalf("a well-formed query: %d", res.status)
	}
}

// A tool bootstrapping from discovery (an OpenAPI loader, an MCP server) reads every location the
// document names, and every example its index lists, at once from one address: with the default
// budgets none of it is refused, although it is more than the pages' burst, and it takes nothing from
// the forum's pages and API, which are still refused past their own burst.
func TestDiscoveryWalkFitsItsBudget(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.BaseURL = discoveryBase
	cfg.Settings = settings{testSettings(), map[string]any{"releases-dir": "testdata/releases"}}
	d := DefaultConfig()
	// The default bursts, and hardly any refill, so that the walk's pace plays no part.
	cfg.PublicRate, cfg.PublicBurst = 0.001, d.PublicBurst
	cfg.PublicDocumentsRate, cfg.PublicDocumentsBurst = 0.001, d.PublicDocumentsBurst
	r := start(t, cfg, allModules(t))
	client := baseClient(t, r.listeners.Addr(ListenerPublic))

	walked := 0
	get := func(url string) response {
		t.Helper()
		walked++
		res := fetch(t, client, http.MethodGet, url, nil)
		if res.status != http.StatusOK {
			t.Fatalf("request %d of the walk, GET %s: %d %.300s", walked, url, res.status, res.body)
		}
		return res
	}
	var doc discoveryDocument
	if err := json.Unmarshal(get(discoveryBase+"/.well-known/svc").body, &doc); err != nil {
		t.Fatal(err)
	}
	named := doc.named(t)
	for _, url := range named {
		get(url)
	}
	var index struct {
		Shapes []struct {
			Schema         string
			Valid, Invalid []string
		}
	}
	if err := json.Unmarshal(get(named["examples"]).body, &index); err != nil || len(index.Shapes) == 0 {
		t.Fatalf("examples index: %v", err)
	}
	for _, s := range index.Shapes {
		for _, u := range append(append([]string{s.Schema}, s.Valid...), s.Invalid...) {
			get(u)
		}
	}
	if len(named) <= cfg.PublicBurst {
		t.Fatalf("discovery names %d locations, no more than the pages' burst %d: the test proves nothing", len(named), cfg.PublicBurst)
	}
	t.Logf("the walk: %d requests (%d locations), within the documents' burst of %d", walked, len(named), cfg.PublicDocumentsBurst)

	for i := range cfg.PublicBurst {
		if res := do(t, http.MethodGet, r.url(ListenerPublic, "/api/v1/categories"), nil); res.status != http.StatusOK {
			t.Fatalf("request %d of the forum's API after the walk: %d %s", i+1, res.status, res.body)
		}
	}
	checkProblem(t, do(t, http.MethodGet, r.url(ListenerPublic, "/api/v1/categories"), nil), http.StatusTooManyRequests, "rate_limited")
	if page := do(t, http.MethodGet, r.url(ListenerPublic, "/forum"), browser); page.status != http.StatusTooManyRequests {
		t.Fatalf("the forum's page past the pages' burst: %d", page.status)
	}
	if res := get(discoveryBase + "/.well-known/svc"); len(res.body) == 0 {
		t.Fatal("the discovery document, with the pages' budget spent: empty")
	}
}

// An IPv6 client counts as its /64: its hosts may take any address in it, and a fresh address must
// not be a fresh burst. Another /64, and an IPv4 client, have buckets of their own.
func TestPublicRateLimitPerIPv6Network(t *testing.T) {
	e := gin.New()
	e.Use(limitAddresses(budgets{pages: newAddressLimiter(0.01, 1)}, nil))
	e.GET("/x", func(c *gin.Context) { c.Status(http.StatusOK) })
	get := func(remote string) int {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)
		return rec.Code
	}
	for _, tc := range []struct {
		remote string
		want   int
	}{
		{"[2001:db8:1:2::1]:4000", http.StatusOK},
		{"[2001:db8:1:2:abcd::9]:4001", http.StatusTooManyRequests}, // the same /64
		{"[2001:db8:1:3::1]:4002", http.StatusOK},                   // another /64
		{"203.0.113.7:4003", http.StatusOK},
		{"203.0.113.8:4004", http.StatusOK},
	} {
		if got := get(tc.remote); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.remote, got, tc.want)
		}
	}
}

// Behind a trusted proxy the client address is its X-Forwarded-For, never X-Real-IP, which a proxy
// may pass along from the client as it came.
func TestTrustedProxiesBelieveForwardedForOnly(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.TrustedProxies = []string{"127.0.0.1", "::1"}
	cfg.PublicRate, cfg.PublicBurst = 0.01, 1
	r := start(t, cfg, discoveryOnly(t))
	get := func(header, addr string) int {
		return do(t, "GET", r.url(ListenerPublic, "/"), map[string]string{header: addr}).status
	}
	for _, tc := range []struct {
		header, addr string
		want         int
	}{
		{"X-Forwarded-For", "203.0.113.1", http.StatusOK},
		{"X-Forwarded-For", "203.0.113.2", http.StatusOK}, // another client
		{"X-Real-IP", "203.0.113.3", http.StatusOK},       // the proxy's own address
		{"X-Real-IP", "203.0.113.4", http.StatusTooManyRequests},
	} {
		if got := get(tc.header, tc.addr); got != tc.want {
			t.Errorf("%s: %s: %d, want %d", tc.header, tc.addr, got, tc.want)
		}
	}
}
