package discovery_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/modules/discovery"
)

const base = "https://forum.example"

// engine mounts the discovery routes of a publisher for deployment d on a bare gin engine, configured
// as the host configures its listeners, with a stand-in for the host's negotiation middleware.
func engine(t testing.TB, d *plugin.Deployment, pubs []plugin.Publication) *gin.Engine {
	t.Helper()
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	e.Use(func(c *gin.Context) {
		mt, ok := render.Negotiate(c.GetHeader("Accept"))
		if !ok {
			render.Abort(c, problem.New(problem.NotAcceptable, "not acceptable"))
			return
		}
		render.SetMediaType(c, mt)
		c.Next()
	})
	routes, err := discovery.Routes(discovery.New(d, pubs))
	if err != nil {
		t.Fatal(err)
	}
	routes.Mount(e)
	return e
}

// allModules is a deployment of every module whose contracts are embedded.
var allModules = []string{"arena", "billing", "discovery", "forum", "media", "onboarding", "releases", "reports", "sigv1"}

// defaultEngine serves a deployment of every module: discovery's own publications plus a schema
// publication for every other embedded schema, as the modules contribute them.
func defaultEngine(t testing.TB) *gin.Engine {
	return engine(t, &plugin.Deployment{BaseURL: base, Modules: allModules}, allPublications())
}

func allPublications() []plugin.Publication {
	pubs := discovery.Publications()
	for _, n := range schema.Published().Names() {
		if !slices.ContainsFunc(pubs, func(p plugin.Publication) bool { return p.Schema && p.Name == n }) {
			pubs = append(pubs, plugin.Publication{Module: "test", Name: n, Path: discovery.SchemaPath(n), Schema: true})
		}
	}
	return pubs
}

type response struct {
	status int
	header http.Header
	body   []byte
}

// serve runs one request; target is the request-target exactly as a client would send it.
func serve(t testing.TB, e http.Handler, method, target string, header map[string]string) response {
	t.Helper()
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return response{rec.Code, rec.Result().Header, rec.Body.Bytes()}
}

func checkProblem(t *testing.T, r response, status int, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("Content-Type %q, want %q", ct, problem.ContentType)
	}
	if err := schema.Published().Validate("problem", r.body); err != nil {
		t.Fatalf("problem does not match its schema: %v\n%s", err, r.body)
	}
	var p map[string]any
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatal(err)
	}
	if p["code"] != code || p["type"] != problem.TypePrefix+code || p["status"] != float64(status) {
		t.Fatalf("problem %v, want code %s", p, code)
	}
}

// document fetches and decodes /.well-known/svc, failing unless it is a 200 that matches the schema.
func document(t *testing.T, e http.Handler, header map[string]string) (response, map[string]any) {
	t.Helper()
	r := serve(t, e, http.MethodGet, discovery.DocumentPath, header)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", discovery.DocumentPath, r.status, r.body)
	}
	if err := schema.Published().Validate("discovery", r.body); err != nil {
		t.Fatalf("the document does not match the discovery schema: %v\n%s", err, r.body)
	}
	var doc map[string]any
	if err := json.Unmarshal(r.body, &doc); err != nil {
		t.Fatal(err)
	}
	return r, doc
}

// urls returns every URL the document names: its locations and its schemas, by name ("schemas/<name>"
// for a schema).
func urls(t *testing.T, doc map[string]any) map[string]string {
	t.Helper()
	locs, ok := doc["locations"].(map[string]any)
	if !ok {
		t.Fatalf("locations: %v", doc["locations"])
	}
	out := map[string]string{}
	for name, v := range locs {
		if name == "schemas" {
			schemas, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("locations.schemas: %v", v)
			}
			for s, u := range schemas {
				out["schemas/"+s] = u.(string)
			}
			continue
		}
		s, ok := v.(string)
		if !ok {
			t.Fatalf("locations.%s: %v", name, v)
		}
		out[name] = s
	}
	return out
}

// pathOf returns the path of a URL the document names, failing unless it is absolute under base.
func pathOf(t *testing.T, url string) string {
	t.Helper()
	p, ok := strings.CutPrefix(url, base+"/")
	if !ok {
		t.Fatalf("%q is not an absolute URL under %s", url, base)
	}
	return "/" + p
}

func TestDocument(t *testing.T) {
	r, doc := document(t, engine(t, &plugin.Deployment{BaseURL: base, Modules: []string{"discovery"}}, discovery.Publications()), nil)

	if doc["protocol"] != "svc-discovery-v1" || doc["media_type"] != "application/svc+json; version=1" ||
		doc["signature_scheme"] != "svc-sig-v1" || doc["base_url"] != base {
		t.Errorf("document: %s", r.body)
	}
	if svc, _ := doc["service"].(map[string]any); svc["name"] != "svc-public-api" || svc["version"] != "0.1.0" {
		t.Errorf("service: %v", doc["service"])
	}
	if mods, _ := doc["modules"].([]any); len(mods) != 1 || mods[0] != "discovery" {
		t.Errorf("modules: %v", doc["modules"])
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if v := r.header.Get("Vary"); v != "Accept" {
		t.Errorf("Vary %q", v)
	}

	// Exactly the publications, each an absolute URL from the base URL; schemas under locations.schemas.
	want := map[string]string{}
	for _, p := range discovery.Publications() {
		key := p.Name
		if p.Schema {
			key = "schemas/" + p.Name
		}
		want[key] = base + p.Path
	}
	got := urls(t, doc)
	if !maps.Equal(got, want) {
		t.Errorf("locations:\n got %v\nwant %v", got, want)
	}
	// The spec's fixed locations, spelled out, so a change of path in Publications is caught here too.
	for name, url := range map[string]string{
		"discovery":         base + "/.well-known/svc",
		"public_api":        base + "/openapi.json",
		"examples":          base + "/contracts/examples",
		"skill":             base + "/developers/SKILL.md",
		"skill_arena":       base + "/developers/skill/arena.md",
		"skill_signing":     base + "/developers/skill/signing.md",
		"schemas/discovery": base + "/contracts/schemas/discovery.schema.json",
		"schemas/problem":   base + "/contracts/schemas/problem.schema.json",
	} {
		if got[name] != url {
			t.Errorf("%s = %q, want %q", name, got[name], url)
		}
	}
	// Every chapter of the agent guide is named, beside the core its relative links start from.
	chapters := contracts.SkillChapters()
	if len(chapters) == 0 {
		t.Fatal("the agent guide has no chapters")
	}
	for _, c := range chapters {
		if want := base + "/developers/skill/" + c + ".md"; got["skill_"+c] != want {
			t.Errorf("skill_%s = %q, want %q", c, got["skill_"+c], want)
		}
	}
	// The agent plane is invitation-only, and its address is not in the document.
	plane, _ := doc["agent_plane"].(map[string]any)
	if plane["access"] != "invitation_only" || !strings.Contains(fmt.Sprint(plane["description"]), "agent_api") {
		t.Errorf("agent_plane: %v", doc["agent_plane"])
	}
	if strings.Contains(string(r.body), "/agent-api/v1\"") || strings.Contains(string(r.body), "agent-api/v1/") {
		t.Errorf("the document names an agent plane address: %s", r.body)
	}
}

// Each chapter of the agent guide is served at the path SKILL.md's relative link to it resolves to,
// and nowhere else under /developers.
func TestSkillChaptersAreServed(t *testing.T) {
	e := defaultEngine(t)
	core := checkServed(t, e, discovery.SkillPath)
	for _, c := range contracts.SkillChapters() {
		link := "](skill/" + c + ".md)"
		if !strings.Contains(string(core), link) {
			t.Errorf("SKILL.md has no link %s", link)
		}
		resolved := path.Join(path.Dir(discovery.SkillPath), "skill", c+".md")
		if resolved != discovery.SkillChapterPath(c) {
			t.Errorf("skill/%s.md resolves to %s, served at %s", c, resolved, discovery.SkillChapterPath(c))
		}
		checkServed(t, e, resolved)
	}
	for _, target := range []string{"/developers/skill/nope.md", "/developers/skill/", "/developers/skill/../SKILL.md",
		"/developers/skill/arena", "/developers/Skill/arena.md", "/contracts/skill/arena.md"} {
		if r := serve(t, e, http.MethodGet, target, nil); r.status != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", target, r.status)
		}
	}
}

// Deployment.Modules left nil (a publisher built without the host) still gives a document that matches
// its schema: modules is a list, never null.
func TestDocumentWithoutModules(t *testing.T) {
	_, doc := document(t, engine(t, &plugin.Deployment{BaseURL: base}, discovery.Publications()), nil)
	if mods, ok := doc["modules"].([]any); !ok || len(mods) != 0 {
		t.Fatalf("modules = %#v, want []", doc["modules"])
	}
}

func TestDocumentMethodsAPI(t *testing.T) {
	d := &plugin.Deployment{BaseURL: base, Modules: []string{"discovery", "sigv1"}}
	p := discovery.New(d, discovery.Publications())
	doc, err := p.Document()
	if err != nil {
		t.Fatal(err)
	}
	if doc.BaseURL != base || !slices.Equal(doc.Modules, d.Modules) || doc.Locations["skill"] != base+discovery.SkillPath {
		t.Fatalf("Document() = %+v", doc)
	}
	// The document does not alias the deployment's slice.
	doc.Modules[0] = "changed"
	if d.Modules[0] != "discovery" {
		t.Fatal("Document() shares the deployment's module slice")
	}
}

// The svc media type is negotiated, and each media type is its own representation with its own ETag,
// so that a cache holding both variants (Vary: Accept) never serves one for the other.
func TestDocumentMediaTypes(t *testing.T) {
	e := defaultEngine(t)
	plain, _ := document(t, e, nil)
	svc, _ := document(t, e, map[string]string{"Accept": "application/svc+json; version=1"})
	if ct := svc.header.Get("Content-Type"); ct != contracts.MediaType {
		t.Fatalf("Content-Type %q, want %q", ct, contracts.MediaType)
	}
	if svc.header.Get("Vary") != "Accept" {
		t.Fatalf("Vary %q", svc.header.Get("Vary"))
	}
	if !bytes.Equal(plain.body, svc.body) {
		t.Fatal("the two media types carry different documents")
	}
	pe, se := plain.header.Get("ETag"), svc.header.Get("ETag")
	if pe == "" || se == "" || pe == se {
		t.Fatalf("ETags application/json %q, svc+json %q: want two distinct ETags", pe, se)
	}
	for _, tc := range []struct {
		accept, etag string
		status       int
	}{
		{"", pe, http.StatusNotModified},
		{"application/svc+json; version=1", se, http.StatusNotModified},
		{"", se, http.StatusOK},
		{"application/svc+json; version=1", pe, http.StatusOK},
	} {
		r := serve(t, e, http.MethodGet, discovery.DocumentPath, map[string]string{"Accept": tc.accept, "If-None-Match": tc.etag})
		if r.status != tc.status {
			t.Errorf("Accept %q, If-None-Match %s: %d, want %d", tc.accept, tc.etag, r.status, tc.status)
		}
		if r.header.Get("Vary") != "Accept" {
			t.Errorf("Accept %q, If-None-Match %s: Vary %q", tc.accept, tc.etag, r.header.Get("Vary"))
		}
	}
	checkProblem(t, serve(t, e, http.MethodGet, discovery.DocumentPath, map[string]string{"Accept": "application/svc+json; version=2"}), http.StatusNotAcceptable, "not_acceptable")
}

// Group order is random: the document does not depend on the order of the publications, and its ETag
// changes with its content.
func TestDocumentIsDeterministic(t *testing.T) {
	pubs := append(discovery.Publications(), plugin.Publication{Module: "sigv1", Name: "agent_api", Path: "/contracts/openapi/agent.json"})
	reversed := slices.Clone(pubs)
	slices.Reverse(reversed)
	d := &plugin.Deployment{BaseURL: base, Modules: []string{"discovery", "sigv1"}}
	a, _ := document(t, engine(t, d, pubs), nil)
	b, _ := document(t, engine(t, d, reversed), nil)
	if !bytes.Equal(a.body, b.body) || a.header.Get("ETag") != b.header.Get("ETag") {
		t.Fatalf("publication order changes the document:\n%s\n%s", a.body, b.body)
	}
	other, _ := document(t, engine(t, &plugin.Deployment{BaseURL: "https://other.example", Modules: d.Modules}, pubs), nil)
	if other.header.Get("ETag") == a.header.Get("ETag") {
		t.Fatal("a different document has the same ETag")
	}
}

func TestContributedPublications(t *testing.T) {
	pubs := append(discovery.Publications(),
		plugin.Publication{Module: "sigv1", Name: "agent_api", Path: "/contracts/openapi/agent.json"},
		plugin.Publication{Module: "sigv1", Name: "signing_vectors", Path: "/contracts/signing/svc-sig-v1-vectors.json"},
		plugin.Publication{Module: "sigv1", Name: "signed-envelope", Path: discovery.SchemaPath("signed-envelope"), Schema: true},
	)
	_, doc := document(t, engine(t, &plugin.Deployment{BaseURL: base, Modules: []string{"discovery", "sigv1"}}, pubs), nil)
	got := urls(t, doc)
	for name, url := range map[string]string{
		"agent_api":               base + "/contracts/openapi/agent.json",
		"signing_vectors":         base + "/contracts/signing/svc-sig-v1-vectors.json",
		"schemas/signed-envelope": base + "/contracts/schemas/signed-envelope.schema.json",
		"skill":                   base + "/developers/SKILL.md",
	} {
		if got[name] != url {
			t.Errorf("%s = %q, want %q", name, got[name], url)
		}
	}
	if len(got) != len(pubs) {
		t.Errorf("%d URLs for %d publications: %v", len(got), len(pubs), got)
	}
	if mods, _ := doc["modules"].([]any); len(mods) != 2 || mods[1] != "sigv1" {
		t.Errorf("modules %v", doc["modules"])
	}
}

// A location or schema named twice is a deployment error: the document is a 500 problem that says
// nothing of the cause, never a panic and never one of the two URLs picked at random.
func TestDuplicatePublications(t *testing.T) {
	for name, extra := range map[string]plugin.Publication{
		"location":        {Module: "sigv1", Name: "skill", Path: "/contracts/other/SKILL.md"},
		"schema":          {Module: "sigv1", Name: "problem", Path: discovery.SchemaPath("problem-v2"), Schema: true},
		"schemas member":  {Module: "sigv1", Name: "schemas", Path: "/contracts/schemas"},
		"same path twice": {Module: "discovery", Name: "public_api", Path: discovery.PublicAPI},
	} {
		t.Run(name, func(t *testing.T) {
			pubs := append(discovery.Publications(), extra)
			d := &plugin.Deployment{BaseURL: base, Modules: []string{"discovery", "sigv1"}}
			if _, err := discovery.New(d, pubs).Document(); err == nil {
				t.Fatal("Document() accepts the duplicate")
			}
			// Start-up fails: the routes are never mounted.
			if _, err := discovery.Routes(discovery.New(d, pubs)); err == nil {
				t.Fatal("Routes accepts the duplicate")
			}
		})
	}
}

var strongETag = regexp.MustCompile(`^"[!#-~]+"$`)

// embedded returns the file of contracts.FS served at a path, or nil for a generated representation.
func embedded(t *testing.T, p string) []byte {
	t.Helper()
	var name string
	switch {
	case p == discovery.DocumentPath || p == discovery.ExamplesPath:
		return nil
	case p == discovery.PublicAPI:
		name = "openapi.json"
	case p == discovery.SkillPath:
		name = contracts.SkillFile
	case strings.HasPrefix(p, discovery.SkillDir+"/"):
		name = "skill/" + strings.TrimPrefix(p, discovery.SkillDir+"/")
	case strings.HasPrefix(p, discovery.ContractsDir+"/"):
		name = strings.TrimPrefix(p, discovery.ContractsDir+"/")
	default:
		t.Fatalf("no file is published at %s", p)
	}
	body, err := fs.ReadFile(contracts.FS(), name)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	return body
}

func wantContentType(p string) string {
	switch {
	case strings.HasSuffix(p, ".schema.json"):
		return "application/schema+json"
	case strings.HasSuffix(p, ".md"):
		return "text/markdown; charset=utf-8"
	}
	return "application/json"
}

// checkServed fetches p and checks its representation, validators and conditional requests; it returns
// the body.
func checkServed(t *testing.T, e http.Handler, p string) []byte {
	t.Helper()
	r := serve(t, e, http.MethodGet, p, nil)
	if r.status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", p, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != wantContentType(p) {
		t.Errorf("GET %s: Content-Type %q, want %q", p, ct, wantContentType(p))
	}
	if r.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET %s: X-Content-Type-Options %q", p, r.header.Get("X-Content-Type-Options"))
	}
	if len(r.body) == 0 {
		t.Errorf("GET %s: empty body", p)
	}
	if isOpenAPI(p) {
		checkBundled(t, p, r.body)
	} else if want := embedded(t, p); want != nil && !bytes.Equal(r.body, want) {
		t.Errorf("GET %s: the body differs from the embedded file", p)
	}
	etag := r.header.Get("ETag")
	if !strongETag.MatchString(etag) {
		t.Fatalf("GET %s: ETag %q is not a strong entity tag", p, etag)
	}
	for _, inm := range []string{etag, `"x", ` + etag, `"x",` + etag + `, "y"`, "*", "W/" + etag} {
		nm := serve(t, e, http.MethodGet, p, map[string]string{"If-None-Match": inm})
		if nm.status != http.StatusNotModified || len(nm.body) != 0 {
			t.Errorf("GET %s, If-None-Match %s: %d (%d bytes), want 304 without body", p, inm, nm.status, len(nm.body))
		}
		if nm.header.Get("ETag") != etag {
			t.Errorf("GET %s, If-None-Match %s: 304 with ETag %q", p, inm, nm.header.Get("ETag"))
		}
	}
	for _, inm := range []string{`"x"`, `"x", "y"`, strings.TrimSuffix(etag, `"`) + `0"`} {
		ok := serve(t, e, http.MethodGet, p, map[string]string{"If-None-Match": inm})
		if ok.status != http.StatusOK || !bytes.Equal(ok.body, r.body) || ok.header.Get("ETag") != etag {
			t.Errorf("GET %s, If-None-Match %s: %d, want 200 with the full body", p, inm, ok.status)
		}
	}
	head := serve(t, e, http.MethodHead, p, nil)
	if head.status != http.StatusOK || len(head.body) != 0 {
		t.Errorf("HEAD %s: %d with %d bytes, want 200 without body", p, head.status, len(head.body))
	}
	if head.header.Get("ETag") != etag || head.header.Get("Content-Type") != r.header.Get("Content-Type") {
		t.Errorf("HEAD %s: headers %v differ from GET %v", p, head.header, r.header)
	}
	if cl := head.header.Get("Content-Length"); cl != strconv.Itoa(len(r.body)) {
		t.Errorf("HEAD %s: Content-Length %q, want %d", p, cl, len(r.body))
	}
	if nm := serve(t, e, http.MethodHead, p, map[string]string{"If-None-Match": etag}); nm.status != http.StatusNotModified {
		t.Errorf("HEAD %s, If-None-Match: %d", p, nm.status)
	}
	return r.body
}

func TestEveryLocationIsServed(t *testing.T) {
	e := defaultEngine(t)
	_, doc := document(t, e, nil)
	named := urls(t, doc)
	if len(named) == 0 {
		t.Fatal("the document names nothing")
	}
	for name, url := range named {
		t.Run(name, func(t *testing.T) {
			p := pathOf(t, url)
			body := checkServed(t, e, p)
			if strings.HasPrefix(name, "schemas/") {
				// A schema location serves the very schema the server enforces under that name.
				s := strings.TrimPrefix(name, "schemas/")
				if !schema.Published().Has(s) {
					t.Fatalf("%s names no enforced schema", s)
				}
				var v map[string]any
				if err := json.Unmarshal(body, &v); err != nil || v["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
					t.Fatalf("%s is not a JSON Schema 2020-12 document (%v)", p, err)
				}
			}
		})
	}
	// Every enforced schema is both named and served.
	for _, s := range []string{"discovery", "problem", "liveness-response", "readiness-response"} {
		if named["schemas/"+s] != base+discovery.SchemaPath(s) {
			t.Errorf("schema %s is not named: %v", s, named)
		}
	}
}

// Every file of the published trees is served at /contracts/<its path>, with its ETag.
func TestEveryPublishedFileIsServed(t *testing.T) {
	e := defaultEngine(t)
	files := publishedFiles(t)
	if len(files) == 0 {
		t.Fatal("no published files")
	}
	for name := range files {
		checkServed(t, e, discovery.ContractsDir+"/"+name)
	}
}

type examplesIndex struct {
	Shapes []struct {
		Name    string   `json:"name"`
		Schema  string   `json:"schema"`
		Valid   []string `json:"valid"`
		Invalid []string `json:"invalid"`
	} `json:"shapes"`
}

func TestExamplesIndex(t *testing.T) {
	e := defaultEngine(t)
	body := checkServed(t, e, discovery.ExamplesPath)
	if r := serve(t, e, http.MethodGet, discovery.ExamplesPath+"/", nil); r.status != http.StatusOK || !bytes.Equal(r.body, body) {
		t.Errorf("GET %s/: %d", discovery.ExamplesPath, r.status)
	}
	var idx examplesIndex
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&idx); err != nil {
		t.Fatalf("examples index: %v\n%s", err, body)
	}

	entries, err := fs.ReadDir(contracts.FS(), "examples")
	if err != nil {
		t.Fatal(err)
	}
	var shapes []string
	for _, en := range entries {
		if en.IsDir() {
			shapes = append(shapes, en.Name())
		}
	}
	var listed []string
	for _, s := range idx.Shapes {
		listed = append(listed, s.Name)
	}
	if len(shapes) == 0 || !slices.Equal(listed, shapes) {
		t.Fatalf("index lists shapes %v, the embedded examples have %v", listed, shapes)
	}

	for _, s := range idx.Shapes {
		if s.Schema != base+discovery.SchemaPath(s.Name) {
			t.Errorf("%s: schema %q", s.Name, s.Schema)
		}
		checkServed(t, e, pathOf(t, s.Schema))
		for verdict, urls := range map[string][]string{"valid": s.Valid, "invalid": s.Invalid} {
			dir := path.Join("examples", s.Name, verdict)
			files, err := fs.ReadDir(contracts.FS(), dir)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, f := range files {
				want = append(want, base+path.Join(discovery.ExamplesPath, s.Name, verdict, f.Name()))
			}
			if len(want) == 0 || !slices.Equal(urls, want) {
				t.Errorf("%s %s:\n got %v\nwant %v", s.Name, verdict, urls, want)
			}
			for _, u := range urls {
				p := pathOf(t, u)
				served := checkServed(t, e, p) // compares with the embedded file
				// The schema the index names for the shape is the one its examples are judged by.
				err := schema.Published().Validate(s.Name, served)
				if (verdict == "valid") != (err == nil) {
					t.Errorf("%s is %s but Validate(%s) = %v", p, verdict, s.Name, err)
				}
			}
		}
	}
}

// Paths outside the published trees are 404 problems and never serve source, a directory or a file
// under another name.
func TestUnpublishedPathsAreNotFound(t *testing.T) {
	e := defaultEngine(t)
	for _, target := range []string{
		"/contracts/../go.mod",
		"/contracts/schemas/../../contracts.go",
		"/contracts/schemas/../../../go.mod",
		"/contracts/%2e%2e/x",
		"/contracts/%2e%2e/go.mod",
		"/contracts/schemas/%2e%2e/%2e%2e/contracts.go",
		"/contracts/schemas/..%2f..%2fcontracts.go",
		"/contracts/schemas/..%5c..%5ccontracts.go",
		"/contracts/contracts.go",
		"/contracts/contracts_test.go",
		"/contracts/version.go",
		"/contracts/go.mod",
		"/contracts/openapi.json",
		"/contracts/SKILL.md",
		"/contracts/schemas/nope.schema.json",
		"/contracts/schemas/problem",
		"/contracts/schemas",
		"/contracts/schemas/",
		"/contracts/examples/conformance-request",
		"/contracts/examples/conformance-request/",
		"/contracts/examples/conformance-request/valid",
		"/contracts/examples/conformance-request/valid/hello.json/",
		"/contracts/examples/conformance-request/valid/../../../schemas/problem.schema.json",
		"/contracts/schemas/./problem.schema.json",
		"/contracts/schemas//problem.schema.json",
		"/contracts//schemas/problem.schema.json",
		"/contracts/./schemas/problem.schema.json",
		"/contracts/schemas/problem.schema.json%00",
		"/contracts/Schemas/problem.schema.json",
		"/contracts/openapi/nope.json",
		"/contracts/openapi/",
		"/contracts/signing/nope.json",
		"/contracts/",
		"/contracts/examplesx",
	} {
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			r := serve(t, e, method, target, nil)
			if r.status != http.StatusNotFound {
				t.Errorf("%s %s: %d, want 404: %.200s", method, target, r.status, r.body)
				continue
			}
			if method == http.MethodGet {
				checkProblem(t, r, http.StatusNotFound, "not_found")
			}
			for _, leak := range []string{"package ", "module github.com", "go:embed"} {
				if bytes.Contains(r.body, []byte(leak)) {
					t.Errorf("%s %s leaks %q: %s", method, target, leak, r.body)
				}
			}
		}
	}
}

// The representations are built once, concurrently safe.
func TestConcurrentRequests(t *testing.T) {
	e := defaultEngine(t)
	paths := []string{discovery.DocumentPath, discovery.ExamplesPath, discovery.SkillPath, discovery.PublicAPI, discovery.SchemaPath("problem")}
	first := map[string][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			p := paths[i%len(paths)]
			r := serve(t, e, http.MethodGet, p, nil)
			if r.status != http.StatusOK {
				t.Errorf("GET %s: %d", p, r.status)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if prev, ok := first[p]; ok && !bytes.Equal(prev, r.body) {
				t.Errorf("GET %s: two different bodies", p)
			}
			first[p] = r.body
		})
	}
	wg.Wait()
}

// publishedFiles are the files /contracts/ may serve: those of the published trees.
func publishedFiles(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := fs.WalkDir(contracts.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, tree := range []string{"schemas/", "examples/", "openapi/", "signing/"} {
			if strings.HasPrefix(name, tree) {
				body, err := fs.ReadFile(contracts.FS(), name)
				if err != nil {
					return err
				}
				out[name] = body
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FuzzServeContracts fuzzes the path after /contracts/: whatever it is, the answer is a 200 with a file
// of the published trees (or the examples index), or a 404 problem; never a 5xx, never another file.
func FuzzServeContracts(f *testing.F) {
	for _, seed := range []string{
		"schemas/problem.schema.json", "examples", "examples/", "examples/conformance-request/valid/hello.json",
		"../go.mod", "schemas/../../contracts.go", "%2e%2e/x", "contracts.go", "schemas/nope.schema.json",
		"", "/", "schemas/", "schemas//problem.schema.json", "./schemas/problem.schema.json", "openapi/agent.json",
		"signing/svc-sig-v1-vectors.json", "SKILL.md", "openapi.json", "schemas/\x00", "examples/\xff",
		"schemas/..\\..\\contracts.go", "examples/conformance-request/valid/../invalid/wrong-type.json",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	e := defaultEngine(f)
	files := publishedFiles(f)
	index := serve(f, e, http.MethodGet, discovery.ExamplesPath, nil)
	if index.status != http.StatusOK {
		f.Fatalf("examples index: %d", index.status)
	}
	f.Fuzz(func(t *testing.T, rest string, head bool) {
		method := http.MethodGet
		if head {
			method = http.MethodHead
		}
		req := httptest.NewRequest(method, "/", nil)
		req.URL.Path = discovery.ContractsDir + "/" + rest
		req.URL.RawPath = ""
		req.RequestURI = ""
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, req)

		switch rec.Code {
		case http.StatusOK:
			var want []byte
			if rest == "examples" || rest == "examples/" {
				want = index.body
			} else if body, ok := files[rest]; ok {
				want = body
			} else {
				t.Fatalf("%s /contracts/%q serves a file outside the published trees: %.200q", method, rest, rec.Body.Bytes())
			}
			if head {
				if rec.Body.Len() != 0 {
					t.Fatalf("HEAD /contracts/%q has a body", rest)
				}
			} else if isOpenAPI(discovery.ContractsDir + "/" + rest) {
				checkBundled(t, discovery.ContractsDir+"/"+rest, rec.Body.Bytes())
			} else if !bytes.Equal(rec.Body.Bytes(), want) {
				t.Fatalf("GET /contracts/%q: the body is not the published file", rest)
			}
		case http.StatusNotFound:
			if ct := rec.Header().Get("Content-Type"); ct != problem.ContentType {
				t.Fatalf("%s /contracts/%q: 404 with Content-Type %q", method, rest, ct)
			}
			if _, ok := files[rest]; ok {
				t.Fatalf("%s /contracts/%q: a published file is not found", method, rest)
			}
		default:
			t.Fatalf("%s /contracts/%q: status %d", method, rest, rec.Code)
		}
	})
}

// A deployment without some modules names none of their contracts: the OpenAPI documents it serves
// hold only the paths of enabled modules (and the host's), and the examples index only the shapes
// whose schemas the enabled modules publish.
func TestSubsetDeploymentServesOnlyItsContracts(t *testing.T) {
	pubs := discovery.Publications()
	for _, n := range []string{"conformance-request", "write-admission-request"} {
		pubs = append(pubs, plugin.Publication{Module: "sigv1", Name: n, Path: discovery.SchemaPath(n), Schema: true})
	}
	e := engine(t, &plugin.Deployment{BaseURL: base, Modules: []string{"discovery", "sigv1"}}, pubs)
	for _, p := range []string{discovery.PublicAPI, discovery.ContractsDir + "/openapi/agent.json"} {
		r := serve(t, e, http.MethodGet, p, nil)
		var doc struct {
			Paths map[string]map[string]map[string]any `json:"paths"`
		}
		if r.status != http.StatusOK || json.Unmarshal(r.body, &doc) != nil || len(doc.Paths) == 0 {
			t.Fatalf("GET %s: %d %.200s", p, r.status, r.body)
		}
		for path, item := range doc.Paths {
			for _, op := range item {
				if owner := op["x-svc-module"]; owner != "host" && owner != "discovery" && owner != "sigv1" {
					t.Errorf("GET %s names %s of module %v, which is not enabled", p, path, owner)
				}
			}
		}
		if etag := r.header.Get("ETag"); etag == "" || serve(t, e, http.MethodGet, p, map[string]string{"If-None-Match": etag}).status != http.StatusNotModified {
			t.Errorf("GET %s: no working ETag", p)
		}
	}
	var idx examplesIndex
	if r := serve(t, e, http.MethodGet, discovery.ExamplesPath, nil); json.Unmarshal(r.body, &idx) != nil {
		t.Fatalf("examples index: %s", r.body)
	}
	var listed []string
	for _, s := range idx.Shapes {
		listed = append(listed, s.Name)
	}
	if !slices.Equal(listed, []string{"conformance-request", "write-admission-request"}) {
		t.Fatalf("examples index lists %v", listed)
	}
}
