package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// elsewhere is an origin other than the service's.
const elsewhere = "https://elsewhere.example"

// The read plane's paths, and only they, are readable from other origins.
func TestReadPlanePath(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/categories": true, "/api/v1/search": true, "/api/v1/pricing": true, "/api/v1/nothing": true,
		"/forum/c/cooking/feed.atom": true, "/.well-known/svc": true, "/openapi.json": true,
		"/contracts/openapi/agent.json": true, "/contracts/schemas/thread.schema.json": true,
		"/": false, "/forum": false, "/forum/c/cooking": false, "/onboarding": false,
		"/onboarding/api/v1/applications": false, "/onboarding/api/v1/status/x": false, "/owner": false,
		"/owner/drafts": false, "/agent-api/v1/conformance": false, "/media/x/display": false, "/metrics": false,
		"/health/ready": false, "/releases/svc-connector/release.json": false, "/apiv1": false,
	} {
		if got := readPlanePath(path); got != want {
			t.Errorf("readPlanePath(%q) = %v, want %v", path, got, want)
		}
	}
}

// commaList splits a header's comma-separated values, lowercased.
func commaList(h http.Header, name string) []string {
	var out []string
	for _, v := range h.Values(name) {
		for p := range strings.SplitSeq(v, ",") {
			out = append(out, strings.ToLower(strings.TrimSpace(p)))
		}
	}
	return out
}

// The public read plane answers other origins (GET and HEAD, no credentials, preflights 204 with the
// methods, headers and a max-age, the headers a tool reads exposed) and a browser script on another
// origin reads it in Chromium; nothing else on any listener does.
func TestReadPlaneCORS(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	r := start(t, cfg, allModules(t)) // migrates, which the operator's commands below do not
	id := provision(t, env, "far-reader")
	publish(t, env, wirePricing)
	credit(t, env, id.orgID, 1000)
	catID := admin(t, env, "category", "create", "--slug", "cooking", "--name", "Cooking")["category_id"].(string)
	edge := "http://" + r.listeners.Addr(ListenerAgentEdge)
	for i := range 3 {
		body := fmt.Sprintf(`{"category_id":%q,"title":"Lentil soup %d","body_markdown":"Simmer.",%s}`, catID, i, billing10)
		decodeBody(t, forumPost(t, id, edge, "/threads", fmt.Sprintf("cors-%d", i), body), http.StatusOK, "created-thread-response")
	}
	threads := "/api/v1/categories/cooking/threads?limit=2"
	origin := map[string]string{"Origin": elsewhere}

	t.Run("reads", func(t *testing.T) {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			res := do(t, method, r.url(ListenerPublic, threads), origin)
			if res.status != http.StatusOK || res.header.Get("Access-Control-Allow-Origin") != "*" ||
				res.header.Get("Access-Control-Allow-Credentials") != "" || res.header.Get("Link") == "" {
				t.Fatalf("%s %s from %s: %d %v", method, threads, elsewhere, res.status, res.header)
			}
			exposed := commaList(res.header, "Access-Control-Expose-Headers")
			for _, h := range []string{"etag", "link", "ratelimit", "ratelimit-policy", "retry-after", "x-request-id"} {
				if !slices.Contains(exposed, h) {
					t.Fatalf("%s is not exposed: %v", h, exposed)
				}
			}
		}
		// A script reads the problems too.
		res := do(t, http.MethodGet, r.url(ListenerPublic, "/api/v1/categories/nothing"), origin)
		checkProblem(t, res, http.StatusNotFound, "not_found")
		if res.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("a problem of the read plane is not readable elsewhere: %v", res.header)
		}
		for _, path := range []string{"/api/v1/pricing", "/.well-known/svc", "/openapi.json", "/contracts/openapi/agent.json"} {
			if res := do(t, http.MethodGet, r.url(ListenerPublic, path), origin); res.status != http.StatusOK || res.header.Get("Access-Control-Allow-Origin") != "*" {
				t.Fatalf("GET %s from %s: %d %v", path, elsewhere, res.status, res.header)
			}
		}
	})

	t.Run("preflight", func(t *testing.T) {
		res := do(t, http.MethodOptions, r.url(ListenerPublic, threads), map[string]string{"Origin": elsewhere,
			"Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "if-none-match,x-request-id"})
		if res.status != http.StatusNoContent || len(res.body) != 0 || res.header.Get("Access-Control-Allow-Origin") != "*" ||
			res.header.Get("Access-Control-Allow-Credentials") != "" || res.header.Get("Access-Control-Max-Age") != "86400" {
			t.Fatalf("preflight: %d %v %q", res.status, res.header, res.body)
		}
		if m := commaList(res.header, "Access-Control-Allow-Methods"); !slices.Equal(m, []string{"get", "head"}) {
			t.Fatalf("Access-Control-Allow-Methods %v", m)
		}
		allowed := commaList(res.header, "Access-Control-Allow-Headers")
		for _, h := range []string{"accept", "if-none-match", "x-request-id"} {
			if !slices.Contains(allowed, h) {
				t.Fatalf("Access-Control-Allow-Headers %v lacks %s", allowed, h)
			}
		}
	})

	t.Run("nothing else", func(t *testing.T) {
		preflight := func(method string) map[string]string {
			return map[string]string{"Origin": elsewhere, "Access-Control-Request-Method": method}
		}
		for _, c := range []struct {
			listener, method, path string
			header                 map[string]string
		}{
			{ListenerPublic, http.MethodGet, "/forum", origin},
			{ListenerPublic, http.MethodGet, "/onboarding", origin},
			{ListenerPublic, http.MethodGet, "/owner", origin},
			{ListenerPublic, http.MethodGet, "/onboarding/api/v1/status/" + strings.Repeat("a", 43), origin},
			{ListenerPublic, http.MethodOptions, "/onboarding/api/v1/applications", preflight("POST")},
			{ListenerPublic, http.MethodOptions, "/owner/sign-in", preflight("POST")},
			{ListenerPublic, http.MethodOptions, "/forum", preflight("GET")},
			{ListenerAgentEdge, http.MethodOptions, "/agent-api/v1/conformance", preflight("POST")},
			{ListenerAgentEdge, http.MethodGet, "/agent-api/v1/wallet", origin},
			{ListenerAdmin, http.MethodGet, "/metrics", origin},
		} {
			res := do(t, c.method, r.url(c.listener, c.path), c.header)
			for name := range res.header {
				if strings.HasPrefix(strings.ToLower(name), "access-control-") {
					t.Errorf("%s %s on %s: %s: %v", c.method, c.path, c.listener, name, res.header.Values(name))
				}
			}
			if c.method == http.MethodOptions && res.status < 400 {
				t.Errorf("%s %s on %s: a preflight answered %d", c.method, c.path, c.listener, res.status)
			}
		}
	})

	t.Run("a script on another origin reads the JSON API in Chromium", func(t *testing.T) {
		page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, elsewherePage)
		}))
		defer page.Close()
		root := chromium(t, r.listeners.Addr(ListenerPublic))
		ctx, cancel := context.WithTimeout(root, time.Minute)
		defer cancel()
		if err := chromedp.Do(ctx, chromedp.Navigate(page.URL), chromedp.WaitVisible(chromedp.CSS(`#out[data-done]`))); err != nil {
			t.Fatalf("the page on %s: %v\n%s", page.URL, err, pageText(ctx))
		}
		text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#out`)))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Status, Threads, NextThreads, NextStatus int
			ETag, Link, RequestID, Error             string
			Onboarding, Unlisted                     string
		}
		if err = json.Unmarshal([]byte(text), &got); err != nil {
			t.Fatalf("%v: %q", err, text)
		}
		next, err := url.Parse(strings.TrimSuffix(strings.TrimPrefix(got.Link, "<"), `>; rel="next"`))
		if got.Error != "" || got.Status != http.StatusOK || got.Threads != 2 || got.ETag == "" || got.RequestID != "from-elsewhere" ||
			err != nil || next.Path != "/api/v1/categories/cooking/threads" || got.NextStatus != http.StatusOK || got.NextThreads != 1 {
			t.Fatalf("the script on %s read %+v", page.URL, got)
		}
		// The browser enforces the rest: an onboarding answer stays unreadable, and a header the
		// preflight does not allow is refused before the request is sent.
		if got.Onboarding != "refused" || got.Unlisted != "refused" {
			t.Fatalf("the script on %s read what it should not: %+v", page.URL, got)
		}
	})
}

// elsewherePage is a page of another origin whose script reads the read plane of the service under
// test (discoveryBase, which chromium resolves to its public listener): a page of threads with
// headers that need a preflight, then the next page through the Link header.
const elsewherePage = `<!doctype html>
<meta charset="utf-8"><title>elsewhere</title>
<pre id="out"></pre>
<script>
(async () => {
  const base = "` + discoveryBase + `";
  const out = {};
  try {
    const res = await fetch(base + "/api/v1/categories/cooking/threads?limit=2",
      {headers: {"If-None-Match": "\"none\"", "X-Request-Id": "from-elsewhere"}});
    const body = await res.json();
    out.Status = res.status;
    out.Threads = body.threads.length;
    out.ETag = res.headers.get("ETag") || "";
    out.Link = res.headers.get("Link") || "";
    out.RequestID = res.headers.get("X-Request-Id") || "";
    const target = out.Link.match(/^<([^>]+)>; rel="next"$/)[1];
    const next = await fetch(new URL(target, base));
    out.NextStatus = next.status;
    out.NextThreads = (await next.json()).threads.length;
  } catch (e) {
    out.Error = String(e);
  }
  try {
    await fetch(base + "/onboarding/api/v1/status/` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `");
    out.Onboarding = "read";
  } catch (e) {
    out.Onboarding = "refused";
  }
  try {
    await fetch(base + "/api/v1/categories", {headers: {"X-Unlisted": "1"}});
    out.Unlisted = "read";
  } catch (e) {
    out.Unlisted = "refused";
  }
  const el = document.getElementById("out");
  el.textContent = JSON.stringify(out);
  el.dataset.done = "1";
})();
</script>
`

// The public listener's 429 is readable from other origins on the read plane: a script learns to
// wait (Retry-After) instead of seeing a network error.
func TestReadPlaneCORSWhenLimited(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.PublicDocumentsRate, cfg.PublicDocumentsBurst = 0.01, 1
	r := start(t, cfg, discoveryOnly(t))
	origin := map[string]string{"Origin": elsewhere}
	do(t, http.MethodGet, r.url(ListenerPublic, "/.well-known/svc"), origin)
	res := do(t, http.MethodGet, r.url(ListenerPublic, "/.well-known/svc"), origin)
	checkProblem(t, res, http.StatusTooManyRequests, "rate_limited")
	if res.header.Get("Access-Control-Allow-Origin") != "*" || !slices.Contains(commaList(res.header, "Access-Control-Expose-Headers"), "retry-after") {
		t.Fatalf("a 429 of the read plane is not readable elsewhere: %v", res.header)
	}
}

// The read plane's refusals made before any route (406 for another version, 400 for a malformed query
// string) carry CORS too, so that a script on another origin reads the problem, not a network error.
func TestReadPlaneRefusalsCarryCORS(t *testing.T) {
	r := start(t, testConfig(t, "sqlite"), allModules(t))
	for _, c := range []struct {
		path   string
		header map[string]string
		status int
	}{
		{"/api/v1/categories", map[string]string{"Origin": elsewhere, "Accept": "application/svc+json; version=2"}, 406},
		{"/api/v1/search?q=100%", map[string]string{"Origin": elsewhere}, 400},
	} {
		res := do(t, "GET", r.url(ListenerPublic, c.path), c.header)
		if res.status != c.status || res.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: %d with Access-Control-Allow-Origin %q, want %d with *", c.path, res.status, res.header.Get("Access-Control-Allow-Origin"), c.status)
		}
	}
}
