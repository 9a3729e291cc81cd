package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/connector/release"
	drivers "github.com/svcforum/svc/connector/runtime"
)

func TestGenerateKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "release.key")
	var out bytes.Buffer
	if err := run([]string{"--generate-key", path, "--key-name", "forum.example/svc-connector"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	skey, _ := os.ReadFile(path)
	vkey, err := release.VerifierKey(string(skey))
	if err != nil || strings.TrimSpace(out.String()) != vkey || !strings.HasPrefix(vkey, "forum.example/svc-connector+") {
		t.Fatalf("printed %q, the key's verifier is %q (%v)", out.String(), vkey, err)
	}
	// Never over an existing key.
	if err := run([]string{"--generate-key", path}, &out, &out); err == nil {
		t.Fatal("--generate-key replaced a key")
	}
	if again, _ := os.ReadFile(path); !bytes.Equal(again, skey) {
		t.Fatal("the key changed")
	}
}

// A release of a stand-in for svc-connector (testdata/scratch prints what the release builds into
// it): every platform's binary, install.sh, the key and a manifest that verifies and lists them all.
func TestCutRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("cross-builds")
	}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "release.key")
	var out bytes.Buffer
	if err := run([]string{"--generate-key", keyFile}, &out, &out); err != nil {
		t.Fatal(err)
	}
	vkey := strings.TrimSpace(out.String())
	here := runtime.GOOS + "/" + runtime.GOARCH
	platforms := []string{here, "windows/arm64"}
	rel := filepath.Join(dir, "dist", "svc-connector")
	args := []string{"--out", rel, "--version", "v1.2.3", "--key", keyFile, "--platforms", strings.Join(platforms, ","),
		"--module", "../..", "--package", "./cmd/svc-release/testdata/scratch"}
	if err := run(args, &out, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}

	key, _ := os.ReadFile(filepath.Join(rel, release.KeyName))
	if string(key) != vkey+"\n" {
		t.Fatalf("release-key %q, want %q", key, vkey)
	}
	signed, _ := os.ReadFile(filepath.Join(rel, release.ManifestName))
	m, err := release.Verify(signed, vkey)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{release.InstallerName, release.BinaryName(runtime.GOOS, runtime.GOARCH), "svc-connector_windows_arm64.exe"}
	slices.Sort(want)
	var listed []string
	for name := range m.Files {
		listed = append(listed, name)
	}
	slices.Sort(listed)
	// The runtimes are the drivers the connector ships, not free text.
	if m.Version != "v1.2.3" || !slices.Equal(m.Runtimes, drivers.Builtin().Names()) || !m.HasRuntime("command") || !slices.Equal(listed, want) {
		t.Fatalf("manifest %+v", m)
	}
	entries, _ := os.ReadDir(rel)
	if len(entries) != len(want)+2 {
		t.Errorf("%d files in the release", len(entries))
	}
	script, _ := os.ReadFile(filepath.Join(rel, release.InstallerName))
	if !bytes.Equal(script, release.InstallScript) || !m.Contains(sha256Of(t, filepath.Join(rel, release.InstallerName))) {
		t.Error("install.sh is not the embedded script, or not listed")
	}
	for name, s := range m.Files {
		if got := sha256Of(t, filepath.Join(rel, name)); got != s {
			t.Errorf("%s: SHA-256 %s, manifest %s", name, got, s)
		}
	}
	// The binary carries the version and the release key.
	printed, err := exec.Command(filepath.Join(rel, release.BinaryName(runtime.GOOS, runtime.GOARCH))).Output()
	if err != nil || string(printed) != "v1.2.3 "+vkey+"\n" {
		t.Fatalf("the built binary prints %q (%v)", printed, err)
	}

	// Cutting again replaces the release as a whole; --trust-key builds another key in.
	_, nextKey, _ := release.GenerateKey("next")
	trustFile := filepath.Join(dir, "next.pub")
	os.WriteFile(trustFile, []byte(nextKey+"\n"), 0o644)
	args = []string{"--out", rel, "--version", "v1.2.4", "--key", keyFile, "--platforms", here, "--trust-key", trustFile,
		"--module", "../..", "--package", "./cmd/svc-release/testdata/scratch"}
	if err := run(args, &out, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if entries, _ := os.ReadDir(rel); len(entries) != 4 {
		t.Errorf("the second release holds %d files", len(entries))
	}
	if printed, _ := exec.Command(filepath.Join(rel, release.BinaryName(runtime.GOOS, runtime.GOARCH))).Output(); string(printed) != "v1.2.4 "+nextKey+"\n" {
		t.Fatalf("with --trust-key the binary prints %q", printed)
	}
	if signed, _ := os.ReadFile(filepath.Join(rel, release.ManifestName)); !bytes.Contains(signed, []byte("svc-connector v1.2.4\n")) {
		t.Fatal("the manifest is not the second release's")
	}
	if entries, _ := os.ReadDir(filepath.Dir(rel)); len(entries) != 1 {
		t.Errorf("a staging directory was left beside the release: %v", entries)
	}
}

func TestCutRefuses(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "release.key")
	var out bytes.Buffer
	if err := run([]string{"--generate-key", keyFile}, &out, &out); err != nil {
		t.Fatal(err)
	}
	notRelease := filepath.Join(dir, "home")
	os.MkdirAll(notRelease, 0o755)
	os.WriteFile(filepath.Join(notRelease, "notes.txt"), []byte("mine"), 0o644)
	out1 := filepath.Join(dir, "out")
	for name, tc := range map[string]struct {
		args []string
		want string // in the error
	}{
		"no version":               {[]string{"--out", out1, "--key", keyFile}, "--version"},
		"no key":                   {[]string{"--out", out1, "--version", "v1.0.0"}, "--key"},
		"a bad version":            {[]string{"--out", out1, "--version", "v1 beta", "--key", keyFile}, "semantic version"},
		"a version without v":      {[]string{"--out", out1, "--version", "1.0.0", "--key", keyFile}, "semantic version"},
		"a short version":          {[]string{"--out", out1, "--version", "v1", "--key", keyFile}, "semantic version"},
		"a version with metadata":  {[]string{"--out", out1, "--version", "v1.0.0+build.1", "--key", keyFile}, "semantic version"},
		"a bad platform":           {[]string{"--out", out1, "--version", "v1.0.0", "--key", keyFile, "--platforms", "linux"}, "GOOS/GOARCH"},
		"a missing key":            {[]string{"--out", out1, "--version", "v1.0.0", "--key", filepath.Join(dir, "nope")}, "--key"},
		"a directory of files":     {[]string{"--out", notRelease, "--version", "v1.0.0", "--key", keyFile}, "not a release's file"},
		"a bad trust key":          {[]string{"--out", out1, "--version", "v1.0.0", "--key", keyFile, "--trust-key", keyFile}, "--trust-key"},
		"a runtime without driver": {[]string{"--out", out1, "--version", "v1.0.0", "--key", keyFile, "--runtimes", "command,docker"}, `runtime "docker": no driver`},
		"a misspelt runtime":       {[]string{"--out", out1, "--version", "v1.0.0", "--key", keyFile, "--runtimes", "Command"}, `runtime "Command": no driver`},
		"no runtime":               {[]string{"--out", out1, "--version", "v1.0.0", "--key", keyFile, "--runtimes", " , "}, "names no runtime"},
	} {
		err := run(tc.args, &out, &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", name, err, tc.want)
		}
	}
	if _, err := os.Stat(out1); !os.IsNotExist(err) {
		t.Errorf("a refused cut wrote %s", out1)
	}
	if b, _ := os.ReadFile(filepath.Join(notRelease, "notes.txt")); string(b) != "mine" {
		t.Fatal("--out deleted someone's file")
	}
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	s, err := release.FileSHA256(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
