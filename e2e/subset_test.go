package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The schemas each optional module publishes (the publications.go of billing, forum, media, reports and
// onboarding),
// which the discovery document names only when the module is enabled.
var (
	billingSchemas = []string{"billing-declaration", "pricing-file", "pricing-response", "wallet-response", "usage-response"}
	forumSchemas   = []string{
		"reference-input", "thread-attachment-input", "reply-attachment-input", "recipe-input",
		"create-thread-request", "create-reply-request", "cast-vote-request", "clear-vote-request", "tombstone-request",
		"catch-up-request", "catch-up-response", "charge", "created-thread-response", "created-reply-response", "vote-response",
		"tombstone-response", "manage-thread-attachments-request", "manage-reply-attachments-request",
		"managed-attachments-response", "attachment", "category", "thread", "reply", "category-list", "thread-list", "reply-list", "search-result",
	}
	mediaSchemas      = []string{"media-upload-request", "media-upload-accepted", "media-upload-status"}
	reportsSchemas    = []string{"create-report-request", "created-report-response"}
	onboardingSchemas = []string{"onboarding", "application-request", "application-created", "application-status", "redemption-request", "redemption-response",
		"owner-link-request", "owner-link-requested", "personality-draft", "personality-draft-response", "draft-reference", "discard-request", "personality-draft-outcome"}
	arenaSchemas = []string{"grant-request", "grant-ticket", "runner-poll", "start-intent", "start-intent-list", "claim-request", "claim-response", "status-request", "status-response"}
	// sigv1Schemas are some of what sigv1 publishes, named in every deployment below.
	sigv1Schemas = []string{"signed-envelope", "conformance-request", "conformance-response"}
)

// discoveryDocument is the part of svc-discovery-v1 (modules/discovery) the tests read.
type discoveryDocument struct {
	Modules   []string       `json:"modules"`
	Locations map[string]any `json:"locations"`
	raw       []byte
}

// schemas returns the names of locations.schemas.
func (d discoveryDocument) schemas(t *testing.T) []string {
	t.Helper()
	m, ok := d.Locations["schemas"].(map[string]any)
	if !ok {
		t.Fatalf("discovery: locations.schemas is not an object: %s", d.raw)
	}
	var names []string
	for name := range m {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func fetchDiscovery(t *testing.T, ctx context.Context, svc *service) discoveryDocument {
	t.Helper()
	x := mustFetch(t, ctx, svc.URL+"/.well-known/svc")
	if x.Status != 200 {
		t.Fatalf("GET /.well-known/svc: %s", x)
	}
	var doc discoveryDocument
	if err := json.Unmarshal(x.Body, &doc); err != nil {
		t.Fatalf("GET /.well-known/svc: %v: %s", err, x.Body)
	}
	doc.raw = x.Body
	return doc
}

// TestSubsetDeployments: a deployment of discovery and sigv1 alone serves neither billing's nor the
// forum's routes (404 problems) and its discovery document names none of their contracts, while signed
// conformance works; a deployment of every module serves those routes and names those contracts; and
// every module spelled out is the same deployment as every module by default. Each
// deployment has a database of its own in one PostgreSQL container.
func TestSubsetDeployments(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	pg := startPostgres(t, ctx, nw)
	everyURL := createDatabase(t, ctx, pg, "every_module")
	explicitURL := createDatabase(t, ctx, pg, "explicit_list")

	subsetEnv := map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": baseURL, "SVC_MODULES": "discovery,sigv1"}
	subset := startService(t, ctx, nw, subsetEnv)
	every := startService(t, ctx, nw, map[string]string{"SVC_DATABASE_URL": everyURL, "SVC_BASE_URL": baseURL})
	explicit := startService(t, ctx, nw, map[string]string{"SVC_DATABASE_URL": explicitURL, "SVC_BASE_URL": baseURL,
		"SVC_MODULES": "discovery,sigv1,billing,forum,media,onboarding,releases,reports,arena"})

	optional := slices.Concat(billingSchemas, forumSchemas, mediaSchemas, reportsSchemas, onboardingSchemas, arenaSchemas)
	t.Run("discovery,sigv1", func(t *testing.T) {
		doc := fetchDiscovery(t, ctx, subset)
		if !slices.Equal(doc.Modules, []string{"discovery", "sigv1"}) {
			t.Errorf("discovery modules %q, want [discovery sigv1]", doc.Modules)
		}
		names := doc.schemas(t)
		for _, s := range optional {
			if slices.Contains(names, s) || bytes.Contains(doc.raw, []byte("/"+s+".schema.json")) {
				t.Errorf("the discovery document names %s, a contract of a disabled module", s)
			}
		}
		for _, s := range sigv1Schemas {
			if !slices.Contains(names, s) {
				t.Errorf("the discovery document does not name %s (sigv1 is enabled): %v", s, names)
			}
		}

		// The API documents it names hold only the enabled modules' paths, and its examples index only
		// their shapes.
		for _, p := range []string{"/openapi.json", "/contracts/openapi/agent.json", "/contracts/examples"} {
			body := mustFetch(t, ctx, subset.URL+p).Body
			for _, gone := range []string{"/api/v1/pricing", "/api/v1/categories", "/agent-api/v1/threads", "/agent-api/v1/wallet", "create-thread-request", "billing-declaration"} {
				if bytes.Contains(body, []byte(`"`+gone)) {
					t.Errorf("GET %s names %s, of a disabled module", p, gone)
				}
			}
		}

		// The disabled modules' routes, public and signed, answer 404 problems.
		if _, ok := doc.Locations["onboarding_api"]; ok {
			t.Errorf("the discovery document names onboarding_api, of a disabled module: %s", doc.raw)
		}
		for _, path := range []string{"/api/v1/pricing", "/api/v1/categories", "/api/v1/search?q=dal", "/forum", "/onboarding/api/v1/status/x"} {
			wantProblem(t, "GET "+path, mustFetch(t, ctx, subset.URL+path), 404, "not_found")
		}
		edge, err := subset.PortEndpoint(ctx, agentEdgePort, "http")
		if err != nil {
			t.Fatal(err)
		}
		wantProblem(t, "POST /agent-api/v1/threads unsigned", fetch(t, ctx, http.MethodPost, edge+agentPrefix+"/threads", `{}`), 404, "not_found")

		// An agent, provisioned by the operator on this deployment, passes conformance; the forum's and
		// billing's signed routes are not found for it either.
		run := func(cmd ...string) result { return runOnce(t, ctx, nw, subsetEnv, cmd...) }
		org, _ := admin(t, ctx, run, "org", "create", "--name", "Subset")["org_id"].(string)
		id := addAgent(t, ctx, run, org, "subset-agent")
		conf := jsonBody(t, "conformance", signedSend(t, ctx, id, http.MethodPost, edge, "/conformance", "conf-1", `{"echo":"subset"}`), 200)
		if conf["agent_id"] != id.AgentID || conf["org_id"] != org || conf["echo"] != "subset" {
			t.Errorf("conformance: %v", conf)
		}
		wantProblem(t, "POST /agent-api/v1/threads signed",
			signedSend(t, ctx, id, http.MethodPost, edge, "/threads", "thread-1", `{"category_id":"0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b","title":"x","body_markdown":"x"}`), 404, "not_found")
		wantProblem(t, "GET /agent-api/v1/wallet signed", signedSend(t, ctx, id, http.MethodGet, edge, "/wallet", "", ""), 404, "not_found")
	})

	t.Run("every module", func(t *testing.T) {
		everyDoc := fetchDiscovery(t, ctx, every)
		if want := []string{"arena", "billing", "discovery", "forum", "media", "onboarding", "releases", "reports", "sigv1"}; !slices.Equal(everyDoc.Modules, want) {
			t.Errorf("discovery modules %q, want %q", everyDoc.Modules, want)
		}
		names := everyDoc.schemas(t)
		for _, s := range append(slices.Clone(optional), sigv1Schemas...) {
			if !slices.Contains(names, s) {
				t.Errorf("the discovery document does not name %s: %v", s, names)
			}
		}

		pricing := jsonBody(t, "GET /api/v1/pricing", mustFetch(t, ctx, every.URL+"/api/v1/pricing"), 200)
		if _, ok := pricing["versions"].([]any); !ok {
			t.Errorf("GET /api/v1/pricing: %v", pricing)
		}
		categories := jsonBody(t, "GET /api/v1/categories", mustFetch(t, ctx, every.URL+"/api/v1/categories"), 200)
		if _, ok := categories["categories"]; !ok {
			t.Errorf("GET /api/v1/categories: %v", categories)
		}
		if x := mustFetch(t, ctx, every.URL+"/forum"); x.Status != 200 || !strings.HasPrefix(x.Header.Get("Content-Type"), "text/html") {
			t.Errorf("GET /forum: %d %s, want 200 text/html", x.Status, x.Header.Get("Content-Type"))
		}
		edge, err := every.PortEndpoint(ctx, agentEdgePort, "http")
		if err != nil {
			t.Fatal(err)
		}
		// The route exists: an unsigned request reaches the guard, which refuses it as unauthenticated.
		x := fetch(t, ctx, http.MethodPost, edge+agentPrefix+"/threads", `{}`)
		if (x.Status != 400 && x.Status != 401) || !strings.HasPrefix(x.Header.Get("Content-Type"), "application/problem+json") {
			t.Errorf("POST /agent-api/v1/threads unsigned: %s, want a 400 or 401 problem from the guard", x)
		}
	})

	t.Run("discovery,sigv1,billing,forum,media,onboarding,releases,reports,arena", func(t *testing.T) {
		if x := mustFetch(t, ctx, explicit.URL+"/api/v1/categories"); x.Status != 200 {
			t.Errorf("GET /api/v1/categories: %s, want 200", x)
		}
		doc, everyDoc := fetchDiscovery(t, ctx, explicit), fetchDiscovery(t, ctx, every)
		if !bytes.Equal(doc.raw, everyDoc.raw) {
			t.Errorf("the discovery document of the explicit list differs from every module's:\n%s\nevery module:\n%s", doc.raw, everyDoc.raw)
		}
	})
}
