package host

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3filter"

	"github.com/svcforum/svc/connector/release"
	"github.com/svcforum/svc/contracts/schema"
)

// A release directory that does not verify stops `svc serve` with one line that names it; the served
// release itself is tested in TestDiscoveryOnTheAssembledService (testdata/releases, a copy of
// connector/release/testdata/golden) and in modules/releases.
func TestTamperedReleaseStopsStartUpWithOneLine(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"manifest", "release-key", "install.sh", "svc-connector_linux_amd64"} {
		b, err := os.ReadFile(filepath.Join("testdata", "releases", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "svc-connector_linux_amd64" {
			b = append(b, "tampered"...)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env := sqliteEnv(t)
	for k, v := range map[string]string{"SVC_RELEASES_DIR": dir, "SVC_CURSOR_KEY": testCursorKey,
		"SVC_PUBLIC_ADDR": "127.0.0.1:0", "SVC_AGENT_EDGE_ADDR": "127.0.0.1:0", "SVC_ADMIN_ADDR": "127.0.0.1:0"} {
		env[k] = v
	}
	code, _, stderr := runMain(t, env, "serve")
	// Before it, the log of start-up so far (the database, the migrations).
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	last := lines[len(lines)-1]
	if code == 0 || !strings.HasPrefix(last, "svc: --releases-dir "+dir+": svc-connector_linux_amd64 has SHA-256 ") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

// kin-openapi decodes the installer's media type as the text it is (libopenapi-validator needs nothing).
func init() {
	openapi3filter.RegisterBodyDecoder("text/x-shellscript", openapi3filter.PlainBodyDecoder)
}

// The release the service publishes (testdata/releases, the vector of connector/release/testdata/golden)
// is described by release.json, which the discovery document names as connector_release: made from the
// verified manifest, matching its schema and the served OpenAPI document, as are the release's files.
func TestReleaseDescriptionOnTheAssembledService(t *testing.T) {
	cfg := testConfig(t, "sqlite")
	cfg.BaseURL = discoveryBase
	cfg.Settings = settings{testSettings(), map[string]any{"releases-dir": "testdata/releases"}}
	r := start(t, cfg, allModules(t))
	public := "http://" + r.listeners.Addr(ListenerPublic)
	client := baseClient(t, r.listeners.Addr(ListenerPublic))

	var doc discoveryDocument
	if err := json.Unmarshal(fetch(t, client, http.MethodGet, discoveryBase+"/.well-known/svc", nil).body, &doc); err != nil {
		t.Fatal(err)
	}
	named := doc.named(t)
	if named["connector_release"] != discoveryBase+"/releases/svc-connector/release.json" ||
		named["schemas/connector-release"] != discoveryBase+"/contracts/schemas/connector-release.schema.json" {
		t.Fatalf("the discovery document names %v", named)
	}
	res := fetch(t, client, http.MethodGet, named["connector_release"], nil)
	if res.status != http.StatusOK || res.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET release.json: %d %v\n%s", res.status, res.header, res.body)
	}
	if err := schema.Published().Validate("connector-release", res.body); err != nil {
		t.Fatalf("release.json does not match its schema: %v\n%s", err, res.body)
	}
	var info release.Info
	dec := json.NewDecoder(bytes.NewReader(res.body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&info); err != nil {
		t.Fatal(err)
	}
	want := release.Info{Version: "v0.1.0", Runtimes: []string{"command"},
		Files:    []release.PlatformFile{{Name: "svc-connector_linux_amd64", OS: "linux", Arch: "amd64", SHA256: "099787b2b8b9dcdeece73d4fcf85f10f4f5dfa532a77f8c94a8d0b28fd5cb247"}},
		Manifest: named["connector_release_manifest"], ReleaseKey: named["connector_release_key"], InstallScript: named["connector_install_script"]}
	if !reflect.DeepEqual(info, want) {
		t.Fatalf("release.json\n%+v\nwant\n%+v", info, want)
	}

	// The answers match the served OpenAPI document.
	publicDoc := loadServed(t, public+"/openapi.json")
	for _, c := range []struct {
		path   string
		header map[string]string
		status int
	}{
		{"/releases/svc-connector/release.json", nil, 200},
		{"/releases/svc-connector/release.json", map[string]string{"Accept": "application/svc+json; version=1"}, 200},
		{"/releases/svc-connector/release.json", map[string]string{"If-None-Match": res.header.Get("ETag")}, 304},
		{"/releases/svc-connector/manifest", nil, 200},
		{"/releases/svc-connector/release-key", nil, 200},
		{"/releases/svc-connector/install.sh", nil, 200},
		{"/releases/svc-connector/svc-connector_linux_amd64", nil, 200},
		{"/releases/svc-connector/svc-connector_linux_amd64", map[string]string{"Range": "bytes=0-3"}, 206},
		{"/releases/svc-connector/notes.txt", nil, 404},
	} {
		req, err := http.NewRequest(http.MethodGet, public+c.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range c.header {
			req.Header.Set(k, v)
		}
		req, b, got := exchange(t, req, nil)
		if got.status != c.status {
			t.Fatalf("GET %s %v: %d, want %d: %s", c.path, c.header, got.status, c.status, got.body)
		}
		publicDoc.check(t, req, b, got)
	}
	// Both libraries notice a description that lost its runtimes.
	req, _ := http.NewRequest(http.MethodGet, public+"/releases/svc-connector/release.json", nil)
	req, b, got := exchange(t, req, nil)
	got.body = bytes.Replace(got.body, []byte(`"runtimes"`), []byte(`"drivers"`), 1)
	if n := len(publicDoc.mismatches(req, b, got)); n != 2 {
		t.Errorf("a description against the schema: %d libraries noticed, want 2", n)
	}
}
