package release

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// needInstallTools skips where install.sh cannot run: no sh, or no openssl (which CI must have: `make
// tools` installs it, so under CI=true its absence fails).
func needInstallTools(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skipf("install.sh runs on linux and darwin; this is %s", runtime.GOOS)
	}
	for _, tool := range []string{"sh", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is needed to test install.sh (make tools installs it): %v", tool, err)
			}
			t.Skipf("%s is not installed (make tools installs it)", tool)
		}
	}
}

// install runs install.sh with args; the script comes on stdin (as `curl ... | sh -s --`) when piped.
func install(t *testing.T, piped bool, binDir string, args ...string) (ok bool, output string) {
	t.Helper()
	return installWith(t, "sh", piped, binDir, args...)
}

// installWith is install with another shell than sh.
func installWith(t *testing.T, shell string, piped bool, binDir string, args ...string) (ok bool, output string) {
	t.Helper()
	var cmd *exec.Cmd
	if piped {
		cmd = exec.Command(shell, append([]string{"-s", "--"}, args...)...)
		cmd.Stdin = bytes.NewReader(InstallScript)
	} else {
		script := filepath.Join(t.TempDir(), "install.sh")
		if err := os.WriteFile(script, InstallScript, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd = exec.Command(shell, append([]string{script}, args...)...)
	}
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "SVC_CONNECTOR_BIN_DIR="+binDir, "SVC_BASE_URL=", "SVC_RELEASE_KEY=")
	out, err := cmd.CombinedOutput()
	return err == nil, string(out)
}

func TestInstallScriptInstallsAVerifiedRelease(t *testing.T) {
	needInstallTools(t)
	r := newRelease(t, "v1.0.0")
	cases := map[string]struct {
		shell string
		piped bool
		args  []string
	}{
		"piped":                  {"sh", true, []string{"--base-url", r.srv.URL}},
		"downloaded":             {"sh", false, []string{"--base-url=" + r.srv.URL + "/"}},
		"with the pinned key":    {"sh", true, []string{"--base-url", r.srv.URL, "--release-key", r.key}},
		"with --bin-dir instead": {"sh", false, []string{"--base-url", r.srv.URL, "--bin-dir", "BIN"}},
	}
	// sh is dash on Debian; bash, where there is one, runs it too (as macOS's sh is bash).
	if _, err := exec.LookPath("bash"); err == nil {
		cases["with bash"] = struct {
			shell string
			piped bool
			args  []string
		}{"bash", true, []string{"--base-url", r.srv.URL, "--release-key=" + r.key}}
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "a", "bin")
			env := bin
			for i, a := range tc.args {
				if a == "BIN" {
					tc.args[i], env = bin, filepath.Join(t.TempDir(), "unused")
				}
			}
			ok, out := installWith(t, tc.shell, tc.piped, env, tc.args...)
			if !ok {
				t.Fatalf("install.sh failed:\n%s", out)
			}
			got, err := os.ReadFile(filepath.Join(bin, "svc-connector"))
			if err != nil || !bytes.Equal(got, r.binary) {
				t.Fatalf("installed %q (%v)\n%s", got, err, out)
			}
			if fi, _ := os.Stat(filepath.Join(bin, "svc-connector")); fi.Mode().Perm() != 0o755 {
				t.Errorf("mode %v", fi.Mode())
			}
			if entries, _ := os.ReadDir(bin); len(entries) != 1 {
				t.Errorf("%s holds %d files", bin, len(entries))
			}
			if !strings.Contains(out, "installed svc-connector v1.0.0 at "+bin) {
				t.Errorf("output:\n%s", out)
			}
		})
	}
}

func TestInstallScriptRefuses(t *testing.T) {
	needInstallTools(t)
	evil := []byte("#!/bin/sh\necho evil\n")
	platform := BinaryName(runtime.GOOS, runtime.GOARCH)
	cases := map[string]struct {
		tamper func(t *testing.T, r *testRelease) (args []string)
		want   string // in the output
	}{
		"a binary whose SHA-256 differs": {func(t *testing.T, r *testRelease) []string {
			r.write(t, platform, evil)
			return nil
		}, "it was changed"},
		"a changed version": {func(t *testing.T, r *testRelease) []string {
			r.write(t, ManifestName, bytes.Replace(r.read(t, ManifestName), []byte("v1.0.0"), []byte("v1.0.1"), 1))
			return nil
		}, "does not verify"},
		"a changed checksum": {func(t *testing.T, r *testRelease) []string {
			m, _ := Verify(r.read(t, ManifestName), r.key)
			r.write(t, platform, evil)
			r.write(t, ManifestName, bytes.Replace(r.read(t, ManifestName), []byte(m.Files[platform]), []byte(sum(evil)), 1))
			return nil
		}, "does not verify"},
		"a changed signature": {func(t *testing.T, r *testRelease) []string {
			signed := r.read(t, ManifestName)
			i := len(signed) - 10
			signed[i] = map[bool]byte{true: 'B', false: 'A'}[signed[i] == 'A']
			r.write(t, ManifestName, signed)
			return nil
		}, "does not verify"},
		"a signature in another base64 spelling": {func(t *testing.T, r *testRelease) []string {
			signed := r.read(t, ManifestName)
			i := bytes.LastIndexByte(signed, '=') - 1 // its last two bits are padding, which decoders ignore
			signed[i] ^= 0x01
			r.write(t, ManifestName, signed)
			return nil
		}, "signature is malformed"},
		"a manifest signed by another key of the same name": {func(t *testing.T, r *testRelease) []string {
			skey, _, _ := GenerateKey("svc-connector-release")
			m, _ := Verify(r.read(t, ManifestName), r.key)
			r.write(t, platform, evil)
			m.Files[platform] = sum(evil)
			signed, _ := Sign(*m, skey)
			r.write(t, ManifestName, signed)
			return nil
		}, "not signed by the release key"},
		"a second signature": {func(t *testing.T, r *testRelease) []string {
			m, _ := Verify(r.read(t, ManifestName), r.key)
			a, _ := note.NewSigner(r.signerKey)
			otherSkey, _, _ := GenerateKey("other")
			b, _ := note.NewSigner(otherSkey)
			text, _ := m.text()
			signed, _ := note.Sign(&note.Note{Text: text}, a, b)
			r.write(t, ManifestName, signed)
			return nil
		}, "exactly one signature"},
		"a key and manifest replaced, against --release-key": {func(t *testing.T, r *testRelease) []string {
			skey, vkey, _ := GenerateKey("svc-connector-release")
			m, _ := Verify(r.read(t, ManifestName), r.key)
			r.write(t, platform, evil)
			m.Files[platform] = sum(evil)
			signed, _ := Sign(*m, skey)
			r.write(t, ManifestName, signed)
			r.write(t, KeyName, []byte(vkey+"\n"))
			return []string{"--release-key", r.key}
		}, "not the key given with --release-key"},
		"a key whose hash is not its own": {func(t *testing.T, r *testRelease) []string {
			name, rest, _ := strings.Cut(r.key, "+")
			_, b64, _ := strings.Cut(rest, "+")
			r.write(t, KeyName, []byte(name+"+00000000+"+b64+"\n"))
			return nil
		}, "does not match its own hash"},
		"no release published": {func(t *testing.T, r *testRelease) []string {
			os.Remove(filepath.Join(r.dir, ManifestName))
			return []string{"--base-url", r.srv.URL + "/nothing-here"}
		}, "cannot read the discovery document"},
		"a manifest missing": {func(t *testing.T, r *testRelease) []string {
			os.Remove(filepath.Join(r.dir, ManifestName))
			return nil
		}, "cannot download the manifest"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRelease(t, "v1.0.0")
			args := tc.tamper(t, r)
			if len(args) == 0 || args[0] != "--base-url" {
				args = append([]string{"--base-url", r.srv.URL}, args...)
			}
			bin := filepath.Join(t.TempDir(), "bin")
			// An installed connector stays as it was.
			if err := os.MkdirAll(bin, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(bin, "svc-connector"), []byte("the old connector"), 0o755); err != nil {
				t.Fatal(err)
			}
			ok, out := install(t, true, bin, args...)
			if ok {
				t.Fatalf("install.sh succeeded:\n%s", out)
			}
			if !strings.Contains(out, "refused: ") || !strings.Contains(out, tc.want) {
				t.Errorf("output does not say %q:\n%s", tc.want, out)
			}
			if got, _ := os.ReadFile(filepath.Join(bin, "svc-connector")); string(got) != "the old connector" {
				t.Fatalf("the connector was replaced with %q", got)
			}
			if entries, _ := os.ReadDir(bin); len(entries) != 1 {
				t.Errorf("%s holds %d files", bin, len(entries))
			}
		})
	}

	// A manifest without the release published in discovery at all.
	t.Run("discovery names no release", func(t *testing.T) {
		r := newRelease(t, "v1.0.0")
		srv := r.srv.URL
		bin := filepath.Join(t.TempDir(), "bin")
		// The discovery document of a service without the releases module: a file server of a document.
		doc := filepath.Join(t.TempDir(), ".well-known")
		os.MkdirAll(doc, 0o755)
		os.WriteFile(filepath.Join(doc, "svc"), []byte(`{"protocol":"svc-discovery-v1","locations":{"discovery":"`+srv+`/.well-known/svc","schemas":{}}}`), 0o644)
		other := newFileServer(t, filepath.Dir(doc))
		ok, out := install(t, true, bin, "--base-url", other)
		if ok || !strings.Contains(out, "publishes no connector release") {
			t.Fatalf("install.sh: %v\n%s", ok, out)
		}
		if _, err := os.Stat(bin); !os.IsNotExist(err) {
			t.Errorf("%s was created", bin)
		}
	})
}

// An application's status link, the page's or its API's, in any case, is refused like the SDK refuses
// it (sdk.ErrStatusLink), before anything is fetched, and the secret is never echoed.
func TestInstallScriptRefusesAStatusLink(t *testing.T) {
	needInstallTools(t)
	r := newRelease(t, "v1.0.0")
	const token = "c2VjcmV0LXRva2VuLW9mLWFuLWFwcGxpY2F0aW9u"
	for _, path := range []string{
		"/onboarding/status/" + token,
		"/ONBOARDING/Status/" + token,
		"/onboarding/api/v1/status/" + token,
		"/Onboarding/API/v1/STATUS/" + token + "?x=1",
		"/onboarding/api/v1/status",
	} {
		for _, args := range [][]string{{"--base-url", r.srv.URL + path}, {"--base-url=" + r.srv.URL + path}} {
			bin := filepath.Join(t.TempDir(), "bin")
			ok, out := install(t, true, bin, args...)
			if ok || !strings.Contains(out, "refused: --base-url is an application's secret status link") || strings.Contains(out, token) {
				t.Errorf("%s: install.sh %v:\n%s", args, ok, out)
			}
			if _, err := os.Stat(bin); !os.IsNotExist(err) {
				t.Errorf("%s: %s was created", args, bin)
			}
		}
	}
	// Through the environment too.
	cmd := exec.Command("sh", "-s", "--")
	cmd.Stdin = bytes.NewReader(InstallScript)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "SVC_BASE_URL="+r.srv.URL+"/Onboarding/Status/"+token)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "secret status link") || strings.Contains(string(out), token) {
		t.Errorf("SVC_BASE_URL: %v\n%s", err, out)
	}
}

// newFileServer serves dir and returns its URL.
func newFileServer(t *testing.T, dir string) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	return srv.URL
}
