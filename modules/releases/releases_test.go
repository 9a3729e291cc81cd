package releases

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"golang.org/x/mod/sumdb/note"

	"github.com/svcforum/svc/connector/release"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
)

// testRelease writes a release directory signed by a new key, as svc-release would: install.sh and a
// binary listed in the manifest, the manifest and the release key.
type testRelease struct {
	dir       string
	signer    note.Signer
	signerKey string
	key       string
	files     map[string][]byte
	manifest  []byte
}

func newRelease(t *testing.T) *testRelease {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, "svc-connector-release")
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	r := &testRelease{dir: t.TempDir(), signer: signer, signerKey: skey, key: vkey, files: map[string][]byte{
		release.InstallerName:       []byte("#!/bin/sh\necho install\n"),
		"svc-connector_linux_amd64": bytes.Repeat([]byte("binary "), 10000),
	}}
	for name, body := range r.files {
		r.write(t, name, body)
	}
	r.manifest = r.sign(t, r.text("v1.0.0", r.files), signer)
	r.write(t, release.ManifestName, r.manifest)
	r.write(t, release.KeyName, []byte(vkey+"\n"))
	return r
}

// text is a manifest's text listing files.
func (r *testRelease) text(version string, files map[string][]byte) string {
	var names []string
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	text := "svc-connector " + version + "\nruntimes command\n"
	for _, name := range names {
		text += sha256Hex(files[name]) + "  " + name + "\n"
	}
	return text
}

func (r *testRelease) sign(t *testing.T, text string, signers ...note.Signer) []byte {
	t.Helper()
	b, err := note.Sign(&note.Note{Text: text}, signers...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *testRelease) write(t *testing.T, name string, body []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testBase is the deployment's base URL.
const testBase = "https://forum.example"

// settings are the module's settings with --releases-dir set.
type settings string

func (s settings) Int(string) int                { return 0 }
func (s settings) Duration(string) time.Duration { return 0 }
func (s settings) Bool(string) bool              { return false }
func (s settings) String(name string) string {
	if name == "releases-dir" {
		return string(s)
	}
	return ""
}

// app assembles the module as the host does, with dir as --releases-dir, and returns what it
// contributes.
func app(t *testing.T, dir string) (*fxtest.App, plugin.Routes, []plugin.Publication) {
	t.Helper()
	var routes []plugin.Routes
	var pubs []plugin.Publication
	a := fxtest.New(t,
		fx.NopLogger,
		fx.Supply(fx.Annotate(settings(dir), fx.As(new(plugin.Settings))), testLogger(t), &plugin.Deployment{BaseURL: testBase, Modules: []string{ID}}),
		Module(),
		fx.Invoke(fx.Annotate(func(r []plugin.Routes, p []plugin.Publication) { routes, pubs = r, p },
			fx.ParamTags(plugin.RoutesGroup, plugin.PublicationsGroup))),
	)
	if len(routes) != 1 || routes[0].Module != ID || routes[0].Plane != plugin.Public || routes[0].Mount == nil {
		t.Fatalf("routes %+v", routes)
	}
	return a, routes[0], pubs
}

// engine is a public listener as the host configures one, serving routes.
func engine(routes plugin.Routes) *gin.Engine {
	gin.SetMode(gin.ReleaseMode)
	e := gin.New()
	e.RedirectTrailingSlash, e.RedirectFixedPath = false, false
	e.Use(func(c *gin.Context) {
		render.SetRequestID(c, "test-request")
		// As the host's negotiation does.
		if mt, ok := render.Negotiate(c.GetHeader("Accept")); ok {
			render.SetMediaType(c, mt)
		}
		c.Next()
	})
	e.NoRoute(func(c *gin.Context) { render.Problem(c, problem.New(problem.NotFound, "none")) })
	routes.Mount(e)
	return e
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func serve(e http.Handler, method, target string, header map[string]string) response {
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
	if r.status != status || r.header.Get("Content-Type") != problem.ContentType {
		t.Fatalf("status %d %q, want %d: %s", r.status, r.header.Get("Content-Type"), status, r.body)
	}
	if err := schema.Published().Validate("problem", r.body); err != nil {
		t.Fatalf("problem does not match its schema: %v\n%s", err, r.body)
	}
	var p map[string]any
	if err := json.Unmarshal(r.body, &p); err != nil || p["code"] != code {
		t.Fatalf("problem %s, want %s", r.body, code)
	}
}

// The vector the connector's release package signs (connector/release/testdata/golden) is served here:
// the module verifies releases with that package, so the two sides cannot disagree on the format.
func TestGoldenManifest(t *testing.T) {
	r, err := load(filepath.Join("testdata", "golden"), testBase+Prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	m := r.manifest
	if m.Version != "v0.1.0" || !slices.Equal(m.Runtimes, []string{"command"}) || len(m.Files) != 2 ||
		m.Files["install.sh"] != "13d4c1b32aa575d6976348888a129080e01b25b0db6132f2386b48b9cb34ce07" ||
		m.Files["svc-connector_linux_amd64"] != "099787b2b8b9dcdeece73d4fcf85f10f4f5dfa532a77f8c94a8d0b28fd5cb247" {
		t.Fatalf("golden manifest %+v", m)
	}
	for _, name := range []string{release.ManifestName, release.KeyName, release.InstallerName, "svc-connector_linux_amd64"} {
		golden, err := os.ReadFile(filepath.Join("..", "..", "connector", "release", "testdata", "golden", name))
		if err != nil {
			t.Fatal(err)
		}
		if copied, _ := os.ReadFile(filepath.Join("testdata", "golden", name)); !bytes.Equal(copied, golden) {
			t.Errorf("testdata/golden/%s differs from connector/release/testdata/golden/%s", name, name)
		}
	}
}

func TestNothingPublishedWithoutADirectory(t *testing.T) {
	a, routes, pubs := app(t, "")
	a.RequireStart()
	defer a.RequireStop()
	if len(pubs) != 0 {
		t.Fatalf("publications %v", pubs)
	}
	for _, path := range []string{ManifestPath, ReleasePath} {
		checkProblem(t, serve(engine(routes), http.MethodGet, path, nil), http.StatusNotFound, "not_found")
	}
}

func TestServesTheVerifiedRelease(t *testing.T) {
	r := newRelease(t)
	a, routes, pubs := app(t, r.dir)
	a.RequireStart()
	defer a.RequireStop()

	// Group members come in any order.
	want := []plugin.Publication{
		{Module: ID, Name: "connector-release", Path: "/contracts/schemas/connector-release.schema.json", Schema: true},
		{Module: ID, Name: LocationInstall, Path: "/releases/svc-connector/install.sh"},
		{Module: ID, Name: LocationRelease, Path: "/releases/svc-connector/release.json"},
		{Module: ID, Name: LocationKey, Path: "/releases/svc-connector/release-key"},
		{Module: ID, Name: LocationManifest, Path: "/releases/svc-connector/manifest"},
	}
	slices.SortFunc(pubs, func(a, b plugin.Publication) int { return strings.Compare(a.Name, b.Name) })
	if !slices.Equal(pubs, want) {
		t.Fatalf("publications %v", pubs)
	}

	e := engine(routes)
	served := map[string][]byte{"manifest": r.manifest, "release-key": []byte(r.key + "\n")}
	for name, body := range r.files {
		served[name] = body
	}
	for name, body := range served {
		path := Prefix + name
		got := serve(e, http.MethodGet, path, nil)
		if got.status != http.StatusOK || !bytes.Equal(got.body, body) {
			t.Fatalf("GET %s: %d, %d bytes", path, got.status, len(got.body))
		}
		etag := got.header.Get("ETag")
		if len(etag) != 34 || got.header.Get("Cache-Control") != "no-cache" || got.header.Get("Content-Type") == "" {
			t.Errorf("GET %s: headers %v", path, got.header)
		}
		if name == "svc-connector_linux_amd64" && got.header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("GET %s: Content-Type %q", path, got.header.Get("Content-Type"))
		}
		for _, inm := range []string{etag, "*"} {
			if nm := serve(e, http.MethodGet, path, map[string]string{"If-None-Match": inm}); nm.status != http.StatusNotModified || len(nm.body) != 0 {
				t.Errorf("GET %s, If-None-Match %s: %d", path, inm, nm.status)
			}
		}
		if head := serve(e, http.MethodHead, path, nil); head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("ETag") != etag {
			t.Errorf("HEAD %s: %d", path, head.status)
		}
		if part := serve(e, http.MethodGet, path, map[string]string{"Range": "bytes=0-3"}); part.status != http.StatusPartialContent || !bytes.Equal(part.body, body[:4]) {
			t.Errorf("GET %s, Range: %d %q", path, part.status, part.body)
		}
	}

	// Only the release's names: not a file of the directory the manifest does not list, not a path.
	r.write(t, "notes.txt", []byte("private"))
	for _, path := range []string{Prefix + "notes.txt", Prefix + "..%2fetc%2fpasswd", Prefix + "", Prefix + "manifest/x", "/releases/svc-connector", Prefix + ".." + "/" + "manifest"} {
		got := serve(e, http.MethodGet, path, nil)
		if got.status != http.StatusNotFound {
			t.Errorf("GET %s: %d", path, got.status)
		}
	}
	checkProblem(t, serve(e, http.MethodGet, Prefix+"notes.txt", nil), http.StatusNotFound, "not_found")

	// A file renamed over after start-up: what was verified is still what is served.
	bin := filepath.Join(r.dir, "svc-connector_linux_amd64")
	os.WriteFile(bin+".new", []byte("evil"), 0o644)
	if err := os.Rename(bin+".new", bin); err != nil {
		t.Fatal(err)
	}
	if got := serve(e, http.MethodGet, Prefix+"svc-connector_linux_amd64", nil); got.status != http.StatusOK || !bytes.Equal(got.body, r.files["svc-connector_linux_amd64"]) {
		t.Fatalf("after a rename over it: %d %.20q", got.status, got.body)
	}
	// A file changed in place is not served at all.
	install := filepath.Join(r.dir, release.InstallerName)
	if err := os.WriteFile(install, []byte("#!/bin/sh\necho evil\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(install, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
	checkProblem(t, serve(e, http.MethodGet, InstallPath, nil), http.StatusInternalServerError, "internal_error")
}

// release.json describes the verified release from its manifest: the version, the runtime drivers its
// connector ships, each platform's binary with its SHA-256, and the absolute URLs of the manifest, the
// key and the installer; the answer matches its published schema.
func TestServesTheReleaseDescription(t *testing.T) {
	r := newRelease(t)
	r.files["svc-connector_windows_arm64.exe"] = []byte("windows arm64")
	r.write(t, "svc-connector_windows_arm64.exe", r.files["svc-connector_windows_arm64.exe"])
	r.write(t, release.ManifestName, r.sign(t, strings.Replace(r.text("v1.0.0", r.files), "runtimes command", "runtimes command tmux", 1), r.signer))
	a, routes, _ := app(t, r.dir)
	a.RequireStart()
	defer a.RequireStop()
	e := engine(routes)

	got := serve(e, http.MethodGet, ReleasePath, nil)
	if got.status != http.StatusOK || got.header.Get("Content-Type") != "application/json" || got.header.Get("Cache-Control") != "no-cache" ||
		got.header.Get("X-Content-Type-Options") != "nosniff" {
		t.Fatalf("GET %s: %d %v\n%s", ReleasePath, got.status, got.header, got.body)
	}
	if err := schema.Published().Validate(ReleaseSchema, got.body); err != nil {
		t.Fatalf("release.json does not match its schema: %v\n%s", err, got.body)
	}
	dec := json.NewDecoder(bytes.NewReader(got.body))
	dec.DisallowUnknownFields()
	var info release.Info
	if err := dec.Decode(&info); err != nil {
		t.Fatal(err)
	}
	want := release.Info{Version: "v1.0.0", Runtimes: []string{"command", "tmux"},
		Files: []release.PlatformFile{
			{Name: "svc-connector_linux_amd64", OS: "linux", Arch: "amd64", SHA256: sha256Hex(r.files["svc-connector_linux_amd64"])},
			{Name: "svc-connector_windows_arm64.exe", OS: "windows", Arch: "arm64", SHA256: sha256Hex(r.files["svc-connector_windows_arm64.exe"])},
		},
		Manifest: testBase + "/releases/svc-connector/manifest", ReleaseKey: testBase + "/releases/svc-connector/release-key",
		InstallScript: testBase + "/releases/svc-connector/install.sh"}
	if !reflect.DeepEqual(info, want) {
		t.Fatalf("release.json\n%+v\nwant\n%+v", info, want)
	}

	// Cached by its ETag, per media type; HEAD answers the headers alone.
	etag := got.header.Get("ETag")
	if nm := serve(e, http.MethodGet, ReleasePath, map[string]string{"If-None-Match": etag}); nm.status != http.StatusNotModified || len(nm.body) != 0 {
		t.Errorf("If-None-Match: %d", nm.status)
	}
	if head := serve(e, http.MethodHead, ReleasePath, nil); head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("ETag") != etag {
		t.Errorf("HEAD: %d %v", head.status, head.header)
	}
	svc := serve(e, http.MethodGet, ReleasePath, map[string]string{"Accept": "application/svc+json; version=1"})
	if svc.status != http.StatusOK || svc.header.Get("Content-Type") != "application/svc+json; version=1" || svc.header.Get("ETag") == etag ||
		!bytes.Equal(svc.body, got.body) {
		t.Errorf("as application/svc+json: %d %v", svc.status, svc.header)
	}

	// The schema refuses what the module never serves.
	for _, bad := range []string{
		strings.Replace(string(got.body), `"tmux"`, `"Tmux"`, 1),
		strings.Replace(string(got.body), `"runtimes": [`, `"runtimes": [], "x": [`, 1),
		strings.Replace(string(got.body), `"version"`, `"release"`, 1),
		strings.Replace(string(got.body), `"os": "linux"`, `"os": "linux", "url": "x"`, 1),
		strings.Replace(string(got.body), testBase+"/releases/svc-connector/manifest", "/releases/svc-connector/manifest", 1),
	} {
		if schema.Published().Validate(ReleaseSchema, []byte(bad)) == nil {
			t.Errorf("the schema accepts\n%s", bad)
		}
	}
}

func TestStartUpRefusesAReleaseThatDoesNotVerify(t *testing.T) {
	cases := map[string]struct {
		tamper func(t *testing.T, r *testRelease)
		want   string
	}{
		"a binary whose SHA-256 differs": {func(t *testing.T, r *testRelease) {
			r.write(t, "svc-connector_linux_amd64", []byte("evil"))
		}, "svc-connector_linux_amd64 has SHA-256"},
		"a manifest with one byte changed": {func(t *testing.T, r *testRelease) {
			r.write(t, release.ManifestName, bytes.Replace(r.manifest, []byte("v1.0.0"), []byte("v1.0.1"), 1))
		}, "manifest, under release-key: release: refused, the manifest is not signed by the release key"},
		"a manifest signed by another key": {func(t *testing.T, r *testRelease) {
			skey, _, _ := note.GenerateKey(rand.Reader, "svc-connector-release")
			other, _ := note.NewSigner(skey)
			r.write(t, release.ManifestName, r.sign(t, r.text("v1.0.0", r.files), other))
		}, "the manifest is not signed by the release key: signed by svc-connector-release+"},
		"a second signature": {func(t *testing.T, r *testRelease) {
			skey, _, _ := note.GenerateKey(rand.Reader, "other")
			other, _ := note.NewSigner(skey)
			r.write(t, release.ManifestName, r.sign(t, r.text("v1.0.0", r.files), r.signer, other))
		}, "exactly one signature"},
		"a listed file missing": {func(t *testing.T, r *testRelease) {
			os.Remove(filepath.Join(r.dir, "svc-connector_linux_amd64"))
		}, "the manifest lists svc-connector_linux_amd64"},
		"a directory where a file is listed": {func(t *testing.T, r *testRelease) {
			os.Remove(filepath.Join(r.dir, "svc-connector_linux_amd64"))
			os.Mkdir(filepath.Join(r.dir, "svc-connector_linux_amd64"), 0o755)
		}, "not a regular file"},
		"no install.sh listed": {func(t *testing.T, r *testRelease) {
			files := map[string][]byte{"svc-connector_linux_amd64": r.files["svc-connector_linux_amd64"]}
			r.write(t, release.ManifestName, r.sign(t, r.text("v1.0.0", files), r.signer))
		}, "lists no install.sh"},
		"a duplicate name": {func(t *testing.T, r *testRelease) {
			text := r.text("v1.0.0", r.files) + sha256Hex(nil) + "  svc-connector_linux_amd64\n"
			r.write(t, release.ManifestName, r.sign(t, text, r.signer))
		}, "listed twice"},
		"a malformed line": {func(t *testing.T, r *testRelease) {
			r.write(t, release.ManifestName, r.sign(t, r.text("v1.0.0", r.files)+"# a comment\n", r.signer))
		}, "the manifest is malformed: line 5"},
		"release.json listed": {func(t *testing.T, r *testRelease) {
			r.write(t, release.ManifestName, r.sign(t, r.text("v1.0.0", r.files)+sha256Hex(nil)+"  release.json\n", r.signer))
		}, "the manifest is malformed"},
		"no key": {func(t *testing.T, r *testRelease) {
			os.Remove(filepath.Join(r.dir, release.KeyName))
		}, "release-key"},
		"a key of two lines": {func(t *testing.T, r *testRelease) {
			r.write(t, release.KeyName, []byte(r.key+"\n"+r.key+"\n"))
		}, "not one line"},
		"a malformed key": {func(t *testing.T, r *testRelease) {
			r.write(t, release.KeyName, []byte("svc-connector-release\n"))
		}, "is not a note verifier key"},
		"no manifest": {func(t *testing.T, r *testRelease) {
			os.Remove(filepath.Join(r.dir, release.ManifestName))
		}, "manifest"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRelease(t)
			tc.tamper(t, r)
			a, _, _ := app(t, r.dir)
			err := a.Start(context.Background())
			if err == nil {
				a.RequireStop()
				t.Fatal("started")
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") || !strings.Contains(msg, "--releases-dir "+r.dir+": ") || !strings.Contains(msg, tc.want) {
				t.Fatalf("start-up error %q, want one line naming the directory and %q", msg, tc.want)
			}
		})
	}
	t.Run("a directory that is not there", func(t *testing.T) {
		a, _, _ := app(t, filepath.Join(t.TempDir(), "nothing"))
		if err := a.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "release-key") {
			t.Fatalf("start-up error %v", err)
		}
	})
}

func TestFlags(t *testing.T) {
	d := Descriptor()
	if d.ID != "releases" || len(d.Flags) != 1 || d.Flags[0].Names()[0] != "releases-dir" || len(d.Requires) != 0 {
		t.Fatalf("descriptor %+v", d)
	}
	if !strings.Contains(strings.Join(d.Flags[0].(interface{ GetEnvVars() []string }).GetEnvVars(), ","), "SVC_RELEASES_DIR") {
		t.Error("--releases-dir is not read from SVC_RELEASES_DIR")
	}
}
