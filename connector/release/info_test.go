package release

import (
	"encoding/json"
	"testing"
)

func TestDescribe(t *testing.T) {
	m := sampleManifest()
	m.Runtimes = []string{"zeta", "command"}
	info := m.Describe("https://forum.example/releases/svc-connector/")
	got, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"version":"v1.2.3","runtimes":["command","zeta"],"files":[` +
		`{"name":"svc-connector_linux_amd64","os":"linux","arch":"amd64","sha256":"` + m.Files["svc-connector_linux_amd64"] + `"},` +
		`{"name":"svc-connector_windows_arm64.exe","os":"windows","arch":"arm64","sha256":"` + m.Files["svc-connector_windows_arm64.exe"] + `"}],` +
		`"manifest":"https://forum.example/releases/svc-connector/manifest",` +
		`"release_key":"https://forum.example/releases/svc-connector/release-key",` +
		`"install_script":"https://forum.example/releases/svc-connector/install.sh"}`
	if string(got) != want {
		t.Fatalf("Describe:\n%s\nwant\n%s", got, want)
	}
	// A release without binaries lists none, as an empty list.
	bare := Manifest{Version: "v1.0.0", Runtimes: []string{"command"}, Files: map[string]string{"install.sh": sum(nil)}}
	if got, _ := json.Marshal(bare.Describe("https://x/").Files); string(got) != "[]" {
		t.Errorf("files %s", got)
	}
}

func TestParseBinaryName(t *testing.T) {
	for _, goos := range []string{"linux", "darwin", "windows", "freebsd"} {
		for _, goarch := range []string{"amd64", "arm64", "ppc64le", "386"} {
			if os, arch, ok := ParseBinaryName(BinaryName(goos, goarch)); !ok || os != goos || arch != goarch {
				t.Errorf("ParseBinaryName(BinaryName(%s, %s)) = %q %q %v", goos, goarch, os, arch, ok)
			}
		}
	}
	for _, name := range []string{"install.sh", "svc-connector", "svc-connector_linux", "svc-connector_linux_amd64.exe",
		"svc-connector_windows_amd64", "svc-connector_linux_amd_64", "svc-connector__amd64", "svc-connector_Linux_amd64",
		"svc-connector_linux_amd64.sig", "other_linux_amd64"} {
		if os, arch, ok := ParseBinaryName(name); ok {
			t.Errorf("ParseBinaryName(%q) = %q %q", name, os, arch)
		}
	}
}

// release.json is the releases module's description of a release, served beside its files: a
// manifest never lists a file of that name.
func TestReleaseJSONIsNeverAFile(t *testing.T) {
	skey, vkey, err := GenerateKey("k")
	if err != nil {
		t.Fatal(err)
	}
	m := sampleManifest()
	m.Files[InfoName] = sum(nil)
	if _, err := Sign(m, skey); err == nil {
		t.Fatal("signed a manifest listing release.json")
	}
	s, _ := noteSign(t, skey, "svc-connector v1\nruntimes command\n"+sum(nil)+"  release.json\n")
	if _, err := Verify(s, vkey); err == nil {
		t.Fatal("verified a manifest listing release.json")
	}
}
