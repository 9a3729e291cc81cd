package host

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
)

// discoveryBase is the public base URL of the service under test; baseClient resolves its host to the
// public listener, so the URLs the document names are fetched exactly as named.
const discoveryBase = "http://svc.test"

func baseClient(t *testing.T, publicAddr string) *http.Client {
	t.Helper()
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != "svc.test:80" {
			return nil, fmt.Errorf("the test resolves only svc.test:80, not %s", addr)
		}
		return d.DialContext(ctx, network, publicAddr)
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport: tr,
		// A published location answers itself; a redirect is a failure of the test, not something to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// discoveryDocument is the part of the svc-discovery-v1 document the test reads.
type discoveryDocument struct {
	Protocol  string            `json:"protocol"`
	BaseURL   string            `json:"base_url"`
	MediaType string            `json:"media_type"`
	Modules   []string          `json:"modules"`
	Locations map[string]any    `json:"locations"`
	Service   map[string]string `json:"service"`
}

// named returns every URL of the document: name -> URL, "schemas/<name>" for a schema.
func (d discoveryDocument) named(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for name, v := range d.Locations {
		if name == "schemas" {
			schemas, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("locations.schemas = %v", v)
			}
			for s, u := range schemas {
				out["schemas/"+s], _ = u.(string)
			}
			continue
		}
		out[name], _ = v.(string)
	}
	return out
}

// The live discovery document of the assembled service names exactly what the enabled modules publish,
// every URL it names answers on the public listener with validators, and the document itself is
// negotiated like every other response.
func TestDiscoveryOnTheAssembledService(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.BaseURL = discoveryBase
	// A signed release of svc-connector (the vector of connector/release/testdata/golden) is published too.
	cfg.Settings = settings{testSettings(), map[string]any{"releases-dir": "testdata/releases"}}
	mods := allModules(t)
	var pubs []plugin.Publication
	collect := fx.Invoke(fx.Annotate(func(p []plugin.Publication) { pubs = p }, fx.ParamTags(plugin.PublicationsGroup)))
	r := start(t, cfg, mods, collect)
	client := baseClient(t, r.listeners.Addr(ListenerPublic))

	res := fetch(t, client, http.MethodGet, discoveryBase+"/.well-known/svc", nil)
	if res.status != http.StatusOK {
		t.Fatalf("GET /.well-known/svc: %d %s", res.status, res.body)
	}
	if err := schema.Published().Validate("discovery", res.body); err != nil {
		t.Fatalf("the live document does not match the discovery schema: %v\n%s", err, res.body)
	}
	if ct := res.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if !slices.Contains(res.header.Values("Vary"), "Accept") {
		t.Errorf("Vary %q", res.header.Values("Vary"))
	}
	if res.header.Get(RequestIDHeader) == "" {
		t.Errorf("no %s", RequestIDHeader)
	}
	var doc discoveryDocument
	if err := json.Unmarshal(res.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Protocol != contracts.DiscoveryProtocol || doc.BaseURL != discoveryBase || doc.MediaType != contracts.MediaType ||
		doc.Service["name"] != contracts.ServiceName || doc.Service["version"] != contracts.ServiceVersion {
		t.Errorf("document: %s", res.body)
	}
	if want := IDs(mods); len(want) == 0 || !slices.Equal(doc.Modules, want) {
		t.Errorf("modules %v, want the enabled modules %v", doc.Modules, want)
	}

	// Exactly the publications of the enabled modules, as absolute URLs under the base URL.
	named := doc.named(t)
	want := map[string]string{}
	for _, p := range pubs {
		key := p.Name
		if p.Schema {
			key = "schemas/" + p.Name
		}
		want[key] = discoveryBase + p.Path
	}
	if len(want) == 0 || !maps.Equal(named, want) {
		t.Errorf("the document names\n %v\nthe modules publish\n %v", named, want)
	}
	for _, name := range []string{"discovery", "public_api", "examples", "skill", "schemas/discovery", "schemas/problem",
		"connector_release_manifest", "connector_release_key", "connector_install_script", "connector_release", "schemas/connector-release"} {
		if named[name] == "" {
			t.Errorf("the document does not name %s", name)
		}
	}
	if named["discovery"] != discoveryBase+"/.well-known/svc" {
		t.Errorf("locations.discovery = %q", named["discovery"])
	}

	// Every named URL answers on the public listener, with an ETag honoured by If-None-Match, and only
	// there: the agent channels do not serve the public plane.
	for name, url := range named {
		t.Run(name, func(t *testing.T) {
			path, ok := strings.CutPrefix(url, discoveryBase+"/")
			if !ok {
				t.Fatalf("%q is not under the base URL %s", url, discoveryBase)
			}
			path = "/" + path
			got := fetch(t, client, http.MethodGet, url, nil)
			if got.status != http.StatusOK || len(got.body) == 0 {
				t.Fatalf("GET %s: %d %.200s", url, got.status, got.body)
			}
			etag := got.header.Get("ETag")
			if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 3 {
				t.Fatalf("GET %s: ETag %q", url, etag)
			}
			if got.header.Get("Content-Type") == "" {
				t.Errorf("GET %s: no Content-Type", url)
			}
			if strings.HasPrefix(name, "schemas/") {
				if ct := got.header.Get("Content-Type"); ct != "application/schema+json" {
					t.Errorf("GET %s: Content-Type %q", url, ct)
				}
				if !schema.Published().Has(strings.TrimPrefix(name, "schemas/")) {
					t.Errorf("%s names a schema the server does not enforce", name)
				}
			}
			for _, inm := range []string{etag, `"x", ` + etag, "*"} {
				nm := fetch(t, client, http.MethodGet, url, map[string]string{"If-None-Match": inm})
				if nm.status != http.StatusNotModified || len(nm.body) != 0 {
					t.Errorf("GET %s, If-None-Match %s: %d (%d bytes), want 304", url, inm, nm.status, len(nm.body))
				}
			}
			if other := fetch(t, client, http.MethodGet, url, map[string]string{"If-None-Match": `"x"`}); other.status != http.StatusOK || string(other.body) != string(got.body) {
				t.Errorf("GET %s, If-None-Match \"x\": %d", url, other.status)
			}
			head := fetch(t, client, http.MethodHead, url, nil)
			if head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("ETag") != etag {
				t.Errorf("HEAD %s: %d, %d bytes, ETag %q", url, head.status, len(head.body), head.header.Get("ETag"))
			}
			// The same path through the test's own loopback URL: the base URL host plays no part in routing.
			if direct := do(t, http.MethodGet, r.url(ListenerPublic, path), nil); direct.status != http.StatusOK || string(direct.body) != string(got.body) {
				t.Errorf("GET %s on the public listener: %d", path, direct.status)
			}
			checkProblem(t, do(t, http.MethodGet, r.url(ListenerAgentEdge, path), nil), http.StatusNotFound, "not_found")
		})
	}

	// Every example the index lists is served too.
	idx := fetch(t, client, http.MethodGet, named["examples"], nil)
	var index struct {
		Shapes []struct {
			Name           string
			Schema         string
			Valid, Invalid []string
		}
	}
	if err := json.Unmarshal(idx.body, &index); err != nil || len(index.Shapes) == 0 {
		t.Fatalf("examples index (%v): %s", err, idx.body)
	}
	for _, s := range index.Shapes {
		if len(s.Valid) == 0 || len(s.Invalid) == 0 {
			t.Errorf("shape %s lists no valid or no invalid example", s.Name)
		}
		for _, u := range append(append([]string{s.Schema}, s.Valid...), s.Invalid...) {
			if !strings.HasPrefix(u, discoveryBase+"/") {
				t.Errorf("%s: %q is not under the base URL", s.Name, u)
				continue
			}
			if got := fetch(t, client, http.MethodGet, u, nil); got.status != http.StatusOK || got.header.Get("ETag") == "" {
				t.Errorf("GET %s: %d", u, got.status)
			}
		}
	}
}

// The document is served in the negotiated media type, varies on Accept, and refuses another version of
// the svc media type with a 406 problem.
func TestDiscoveryMediaTypes(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.BaseURL = discoveryBase
	r := start(t, cfg, allModules(t))
	url := r.url(ListenerPublic, "/.well-known/svc")

	plain := do(t, http.MethodGet, url, nil)
	svc := do(t, http.MethodGet, url, map[string]string{"Accept": "application/svc+json; version=1"})
	if svc.status != http.StatusOK || svc.header.Get("Content-Type") != "application/svc+json; version=1" {
		t.Fatalf("svc+json: %d %q", svc.status, svc.header.Get("Content-Type"))
	}
	if !slices.Contains(svc.header.Values("Vary"), "Accept") {
		t.Errorf("Vary %q", svc.header.Values("Vary"))
	}
	if err := schema.Published().Validate("discovery", svc.body); err != nil {
		t.Errorf("svc+json document: %v", err)
	}
	if plain.status != http.StatusOK || string(plain.body) != string(svc.body) {
		t.Fatalf("application/json: %d, or a different document", plain.status)
	}
	pe, se := plain.header.Get("ETag"), svc.header.Get("ETag")
	if pe == "" || pe == se {
		t.Fatalf("ETags %q and %q: each media type needs its own", pe, se)
	}
	if nm := do(t, http.MethodGet, url, map[string]string{"Accept": "application/svc+json; version=1", "If-None-Match": se}); nm.status != http.StatusNotModified {
		t.Errorf("svc+json, If-None-Match: %d", nm.status)
	}
	if nm := do(t, http.MethodGet, url, map[string]string{"Accept": "application/svc+json; version=1", "If-None-Match": pe}); nm.status != http.StatusOK {
		t.Errorf("svc+json, If-None-Match of the application/json variant: %d, want 200", nm.status)
	}

	checkProblem(t, do(t, http.MethodGet, url, map[string]string{"Accept": "application/svc+json; version=2"}), http.StatusNotAcceptable, "not_acceptable")
	if head := do(t, http.MethodHead, url, nil); head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("ETag") != pe {
		t.Errorf("HEAD: %d, %d bytes, ETag %q", head.status, len(head.body), head.header.Get("ETag"))
	}
}
