package release

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/svcforum/svc/connector"
)

// testRelease is a release directory served the way the releases module serves one: the files under
// /releases/svc-connector/, and a discovery document at /.well-known/svc that names them.
type testRelease struct {
	dir       string
	signerKey string
	key       string // verifier key
	binary    []byte // this platform's binary
	srv       *httptest.Server
}

// newRelease writes a release of version with a binary for this platform (and one for another) into
// a new directory, signed by a new key, and serves it.
func newRelease(t *testing.T, version string) *testRelease {
	t.Helper()
	skey, vkey, err := GenerateKey("svc-connector-release")
	if err != nil {
		t.Fatal(err)
	}
	r := &testRelease{dir: t.TempDir(), signerKey: skey, key: vkey, binary: []byte("#!/bin/sh\necho svc-connector " + version + "\n")}
	files := map[string][]byte{
		BinaryName(runtime.GOOS, runtime.GOARCH): r.binary,
		BinaryName("plan9", "mips"):              []byte("another platform"),
		InstallerName:                            InstallScript,
	}
	m := Manifest{Version: version, Runtimes: []string{"command"}, Files: map[string]string{}}
	for name, body := range files {
		r.write(t, name, body)
		m.Files[name] = sum(body)
	}
	signed, err := Sign(m, skey)
	if err != nil {
		t.Fatal(err)
	}
	r.write(t, ManifestName, signed)
	r.write(t, KeyName, []byte(vkey+"\n"))

	mux := http.NewServeMux()
	mux.Handle("GET /releases/svc-connector/", http.StripPrefix("/releases/svc-connector/", http.FileServer(http.Dir(r.dir))))
	mux.HandleFunc("GET /.well-known/svc", func(w http.ResponseWriter, _ *http.Request) {
		doc := map[string]any{"protocol": "svc-discovery-v1", "base_url": r.srv.URL, "locations": r.locations()}
		w.Header().Set("Content-Type", "application/json")
		body, _ := json.MarshalIndent(doc, "", "  ")
		w.Write(body)
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *testRelease) write(t *testing.T, name string, body []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), body, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *testRelease) read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (r *testRelease) locations() map[string]string {
	base := r.srv.URL + "/releases/svc-connector/"
	return map[string]string{
		"discovery":      r.srv.URL + "/.well-known/svc",
		LocationManifest: base + ManifestName,
		LocationKey:      base + KeyName,
		LocationInstall:  base + InstallerName,
	}
}

// pin sets connector.ReleaseKey (and Version) for the test.
func pin(t *testing.T, key, version string) {
	t.Helper()
	oldKey, oldVersion := connector.ReleaseKey, connector.Version
	connector.ReleaseKey, connector.Version = key, version
	t.Cleanup(func() { connector.ReleaseKey, connector.Version = oldKey, oldVersion })
}

func TestFetch(t *testing.T) {
	r := newRelease(t, "v1.0.0")
	ctx := context.Background()
	for _, key := range []string{"", r.key} {
		pin(t, key, "dev")
		m, err := Fetch(ctx, r.srv.Client(), r.locations())
		if err != nil {
			t.Fatalf("pinned %q: %v", key, err)
		}
		if m.Version != "v1.0.0" || m.Key != r.key || !m.HasRuntime("command") {
			t.Fatalf("manifest %+v", m)
		}
		if _, s, ok := m.FileFor(runtime.GOOS, runtime.GOARCH); !ok || s != sum(r.binary) {
			t.Fatalf("FileFor this platform: %q %v", s, ok)
		}
	}

	// A connector built with another key refuses the release, however well signed.
	_, otherKey, _ := GenerateKey("svc-connector-release")
	pin(t, otherKey, "dev")
	if _, err := Fetch(ctx, r.srv.Client(), r.locations()); !errors.Is(err, ErrKeyMismatch) || !strings.Contains(err.Error(), otherKey) {
		t.Fatalf("a published key that is not connector.ReleaseKey: %v", err)
	}
	pin(t, "", "dev")

	// Discovery names no release.
	for _, drop := range []string{LocationManifest, LocationKey} {
		loc := r.locations()
		delete(loc, drop)
		if _, err := Fetch(ctx, r.srv.Client(), loc); !errors.Is(err, ErrUnpublished) {
			t.Errorf("without %s: %v", drop, err)
		}
	}
	if _, err := Fetch(ctx, r.srv.Client(), nil); !errors.Is(err, ErrUnpublished) {
		t.Errorf("no locations: %v", err)
	}
	loc := r.locations()
	loc[LocationManifest] = "/releases/svc-connector/manifest"
	if _, err := Fetch(ctx, r.srv.Client(), loc); err == nil || errors.Is(err, ErrUnpublished) {
		t.Errorf("a relative location: %v", err)
	}
	loc = r.locations()
	loc[LocationManifest] = r.srv.URL + "/releases/svc-connector/nothing"
	if _, err := Fetch(ctx, r.srv.Client(), loc); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a missing manifest: %v", err)
	}

	// A manifest changed on the server, or signed by another key that the server also publishes while
	// the connector trusts the first.
	signed := r.read(t, ManifestName)
	r.write(t, ManifestName, bytes.Replace(signed, []byte("v1.0.0"), []byte("v1.0.1"), 1))
	if _, err := Fetch(ctx, r.srv.Client(), r.locations()); !errors.Is(err, ErrSignature) {
		t.Errorf("a changed manifest: %v", err)
	}
	r.write(t, ManifestName, signed)
	otherSkey, otherVkey, _ := GenerateKey("svc-connector-release")
	resigned, _ := Sign(Manifest{Version: "v9", Runtimes: []string{"command"}, Files: map[string]string{"x": sum(nil)}}, otherSkey)
	r.write(t, ManifestName, resigned)
	if _, err := Fetch(ctx, r.srv.Client(), r.locations()); !errors.Is(err, ErrSignature) {
		t.Errorf("a manifest by another key: %v", err)
	}
	r.write(t, KeyName, []byte(otherVkey+"\n"))
	pin(t, r.key, "dev")
	if _, err := Fetch(ctx, r.srv.Client(), r.locations()); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("a replaced key and manifest: %v", err)
	}
	pin(t, "", "dev")
	r.write(t, KeyName, []byte(r.key+"\n"+otherVkey+"\n"))
	if _, err := Fetch(ctx, r.srv.Client(), r.locations()); !errors.Is(err, ErrBadKey) {
		t.Errorf("a key file of two lines: %v", err)
	}
}

func TestSelfUpdate(t *testing.T) {
	ctx := context.Background()
	newExe := func(t *testing.T) string {
		exe := filepath.Join(t.TempDir(), "svc-connector")
		if err := os.WriteFile(exe, []byte("the old connector"), 0o700); err != nil {
			t.Fatal(err)
		}
		return exe
	}
	// only checks that dir holds exactly the named files, so that no download is left behind.
	only := func(t *testing.T, dir string, names ...string) {
		t.Helper()
		entries, _ := os.ReadDir(dir)
		var got []string
		for _, e := range entries {
			got = append(got, e.Name())
		}
		if strings.Join(got, ",") != strings.Join(names, ",") {
			t.Errorf("%s holds %v, want %v", dir, got, names)
		}
	}

	t.Run("valid", func(t *testing.T) {
		r := newRelease(t, "v1.0.0")
		pin(t, r.key, "v0.9.0")
		exe := newExe(t)
		// Through a symbolic link, as a package manager might install it: the file is replaced.
		link := filepath.Join(t.TempDir(), "svc-connector")
		if err := os.Symlink(exe, link); err != nil {
			t.Fatal(err)
		}
		v, updated, err := SelfUpdate(ctx, r.srv.Client(), r.locations(), link)
		if err != nil || !updated || v != "v1.0.0" {
			t.Fatalf("SelfUpdate = %q, %v, %v", v, updated, err)
		}
		got, _ := os.ReadFile(exe)
		if !bytes.Equal(got, r.binary) {
			t.Fatalf("the connector is now %q", got)
		}
		if fi, _ := os.Stat(exe); fi.Mode().Perm() != 0o755 {
			t.Errorf("mode %v", fi.Mode())
		}
		only(t, filepath.Dir(exe), "svc-connector")

		// Already the release's version: nothing to do.
		pin(t, r.key, "v1.0.0")
		os.WriteFile(exe, []byte("current"), 0o755)
		if v, updated, err := SelfUpdate(ctx, r.srv.Client(), r.locations(), exe); err != nil || updated || v != "v1.0.0" {
			t.Fatalf("same version: %q, %v, %v", v, updated, err)
		}
		if got, _ := os.ReadFile(exe); string(got) != "current" {
			t.Fatal("the connector was replaced by its own version")
		}
	})

	refused := map[string]struct {
		tamper func(t *testing.T, r *testRelease)
		key    func(r *testRelease) string
		want   error
	}{
		"a binary whose SHA-256 differs": {
			tamper: func(t *testing.T, r *testRelease) {
				r.write(t, BinaryName(runtime.GOOS, runtime.GOARCH), []byte("#!/bin/sh\necho evil\n"))
			},
			want: ErrChecksum,
		},
		"a changed manifest": {
			tamper: func(t *testing.T, r *testRelease) {
				evil := sum([]byte("#!/bin/sh\necho evil\n"))
				signed := r.read(t, ManifestName)
				m, _ := Verify(signed, r.key)
				r.write(t, BinaryName(runtime.GOOS, runtime.GOARCH), []byte("#!/bin/sh\necho evil\n"))
				r.write(t, ManifestName, bytes.Replace(signed, []byte(m.Files[BinaryName(runtime.GOOS, runtime.GOARCH)]), []byte(evil), 1))
			},
			want: ErrSignature,
		},
		"a release signed and published with another key": {
			tamper: func(t *testing.T, r *testRelease) {
				skey, vkey, _ := GenerateKey("svc-connector-release")
				evil := []byte("#!/bin/sh\necho evil\n")
				signed, _ := Sign(Manifest{Version: "v6.6.6", Runtimes: []string{"command"},
					Files: map[string]string{BinaryName(runtime.GOOS, runtime.GOARCH): sum(evil)}}, skey)
				r.write(t, BinaryName(runtime.GOOS, runtime.GOARCH), evil)
				r.write(t, ManifestName, signed)
				r.write(t, KeyName, []byte(vkey+"\n"))
			},
			want: ErrKeyMismatch,
		},
		"no binary for this platform": {
			tamper: func(t *testing.T, r *testRelease) {
				signed, _ := Sign(Manifest{Version: "v1.0.0", Runtimes: []string{"command"},
					Files: map[string]string{BinaryName("plan9", "mips"): sum([]byte("another platform"))}}, r.signerKey)
				r.write(t, ManifestName, signed)
			},
			want: ErrNoPlatform,
		},
		"a missing binary": {
			tamper: func(t *testing.T, r *testRelease) {
				os.Remove(filepath.Join(r.dir, BinaryName(runtime.GOOS, runtime.GOARCH)))
			},
		},
	}
	for name, tc := range refused {
		t.Run(name, func(t *testing.T) {
			r := newRelease(t, "v1.0.0")
			pin(t, r.key, "v0.9.0")
			tc.tamper(t, r)
			exe := newExe(t)
			v, updated, err := SelfUpdate(ctx, r.srv.Client(), r.locations(), exe)
			if err == nil || updated || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("SelfUpdate = %q, %v, %v; want %v", v, updated, err, tc.want)
			}
			if errors.Is(tc.want, ErrTampered) != errors.Is(err, ErrTampered) {
				t.Errorf("%v: wraps ErrTampered %v", err, errors.Is(err, ErrTampered))
			}
			if got, _ := os.ReadFile(exe); string(got) != "the old connector" {
				t.Fatalf("the connector was changed to %q", got)
			}
			if fi, _ := os.Stat(exe); fi.Mode().Perm() != 0o700 {
				t.Errorf("mode %v", fi.Mode())
			}
			only(t, filepath.Dir(exe), "svc-connector")
		})
	}
}

// SelfUpdate installs only a newer release (golang.org/x/mod/semver): an older one, or one whose
// version cannot be ordered, is refused with ErrDowngrade before anything is downloaded, unless the
// caller allows it with SelfUpdateWith.
func TestSelfUpdateRefusesADowngrade(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		running, published string
		updated            bool // without AllowDowngrade
		refused            bool // ErrDowngrade without AllowDowngrade
		allowed            bool // installed with AllowDowngrade
	}{
		{running: "v1.1.0", published: "v1.0.0", refused: true, allowed: true},
		{running: "v1.10.0", published: "v1.9.0", refused: true, allowed: true}, // not a string comparison
		{running: "v1.0.0", published: "v1.0.0-rc.1", refused: true, allowed: true},
		{running: "v1.0.0", published: "2026-01", refused: true, allowed: true}, // not a semantic version: cannot be ordered
		{running: "v1.9.0", published: "v1.10.0", updated: true, allowed: true},
		{running: "v1.0.0-rc.1", published: "v1.0.0", updated: true, allowed: true},
		{running: "dev", published: "v0.1.0", updated: true, allowed: true}, // a development build takes any release
		{running: "dev", published: "2026-01", updated: true, allowed: true},
		{running: "v1.0.0+build.7", published: "v1.0.0", allowed: true}, // the same release, other build metadata
		{running: "v1.0.0", published: "v1.0.0"},
	}
	for _, tc := range cases {
		for _, allow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s to %s, allow %v", tc.running, tc.published, allow), func(t *testing.T) {
				r := newRelease(t, tc.published)
				pin(t, r.key, tc.running)
				exe := filepath.Join(t.TempDir(), "svc-connector")
				if err := os.WriteFile(exe, []byte("the old connector"), 0o700); err != nil {
					t.Fatal(err)
				}
				var (
					v       string
					updated bool
					err     error
				)
				if allow {
					v, updated, err = SelfUpdateWith(ctx, r.srv.Client(), r.locations(), exe, SelfUpdateOptions{AllowDowngrade: true})
				} else {
					v, updated, err = SelfUpdate(ctx, r.srv.Client(), r.locations(), exe)
				}
				want := tc.updated || (allow && tc.allowed)
				if v != tc.published || updated != want {
					t.Fatalf("= %q, %v, %v; want updated %v", v, updated, err, want)
				}
				refused := tc.refused && !allow
				if refused != errors.Is(err, ErrDowngrade) || (!refused && err != nil) || errors.Is(err, ErrTampered) {
					t.Fatalf("error %v; want ErrDowngrade %v", err, refused)
				}
				if refused && (!strings.Contains(err.Error(), tc.published) || !strings.Contains(err.Error(), tc.running) || !strings.Contains(err.Error(), "--allow-downgrade")) {
					t.Errorf("the refusal does not say what: %v", err)
				}
				got, _ := os.ReadFile(exe)
				if want != bytes.Equal(got, r.binary) || (!want && string(got) != "the old connector") {
					t.Fatalf("the connector is now %q", got)
				}
				if entries, _ := os.ReadDir(filepath.Dir(exe)); len(entries) != 1 {
					t.Errorf("%d files beside the connector", len(entries))
				}
			})
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		running, published string
		want               int
	}{
		{"v1.0.0", "v1.0.1", 1}, {"v1.0.1", "v1.0.0", -1}, {"v1.0.0", "v1.0.0", 0},
		{"v1.2.0", "v1.10.0", 1}, {"v2.0.0", "v10.0.0", 1}, {"v1.0.0-rc.2", "v1.0.0-rc.10", 1},
		{"v1.0.0", "v1.0.0-rc.1", -1}, {"v1.0.0+a", "v1.0.0+b", 0}, {"v1.0.0", "v1.0.0+b", 0},
		{"dev", "v0.0.1", 1}, {"dev", "anything", 1}, {"", "v1.0.0", 1},
		{"v1.0.0", "dev", -1}, {"v1.0.0", "1.0.1", -1}, {"v1.0.0", "20260101", -1},
	} {
		if got := Compare(tc.running, tc.published); got != tc.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", tc.running, tc.published, got, tc.want)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, v := range []string{"v0.3.1", "v1.0.0", "v1.0.0-rc.1", "v0.0.0-dev.abc1234", "v1.2.3-5-gdeadbee"} {
		if err := CheckVersion(v); err != nil {
			t.Errorf("%q: %v", v, err)
		}
	}
	for _, v := range []string{"", "dev", "1.2.3", "v1", "v1.2", "v1.2.3+build", "v01.2.3", "v1.2.3-01", "v1.2.3 beta"} {
		if err := CheckVersion(v); err == nil {
			t.Errorf("%q is accepted", v)
		}
	}
}

// A download that gets no answer names its URL once.
func TestFetchErrorNamesTheURLOnce(t *testing.T) {
	r := newRelease(t, "v1.0.0")
	pin(t, "", "dev")
	loc := r.locations()
	r.srv.Close()
	_, err := Fetch(context.Background(), r.srv.Client(), loc)
	if err == nil || strings.Count(err.Error(), loc[LocationKey]) != 1 || !strings.HasPrefix(err.Error(), "release: GET "+loc[LocationKey]+": ") {
		t.Fatalf("Fetch from a closed server: %v", err)
	}
}
