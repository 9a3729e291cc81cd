package release

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// seededKey is a signer key made from a fixed seed, so that its signatures are the same on every run.
func seededKey(t testing.TB, name string, seedByte byte) (signerKey, verifierKey string) {
	t.Helper()
	seed := bytes.Repeat([]byte{seedByte}, ed25519.SeedSize)
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	enc := append([]byte{1}, pub...)
	sum := sha256.Sum256(append([]byte(name+"\n"), enc...))
	signerKey = fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", name, binary.BigEndian.Uint32(sum[:4]),
		base64.StdEncoding.EncodeToString(append([]byte{1}, seed...)))
	verifierKey, err := VerifierKey(signerKey)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := note.NewSigner(signerKey); err != nil {
		t.Fatal(err)
	}
	return signerKey, verifierKey
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func sampleManifest() Manifest {
	return Manifest{Version: "v1.2.3", Runtimes: []string{"command"}, Files: map[string]string{
		"install.sh":                      sum([]byte("install")),
		"svc-connector_linux_amd64":       sum([]byte("linux amd64")),
		"svc-connector_windows_arm64.exe": sum([]byte("windows arm64")),
	}}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	skey, vkey, err := GenerateKey("svc-connector-release")
	if err != nil {
		t.Fatal(err)
	}
	if derived, err := VerifierKey(skey); err != nil || derived != vkey {
		t.Fatalf("VerifierKey = %q, %v; GenerateKey made %q", derived, err, vkey)
	}
	m := sampleManifest()
	signed, err := Sign(m, skey)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Verify(signed, vkey)
	if err != nil {
		t.Fatalf("Verify: %v\n%s", err, signed)
	}
	m.Key = vkey
	if !reflect.DeepEqual(*got, m) {
		t.Fatalf("Verify = %+v, want %+v", *got, m)
	}
	name, s, ok := got.FileFor("windows", "arm64")
	if !ok || name != "svc-connector_windows_arm64.exe" || s != m.Files[name] {
		t.Errorf("FileFor(windows, arm64) = %q %q %v", name, s, ok)
	}
	if _, _, ok := got.FileFor("darwin", "arm64"); ok {
		t.Error("FileFor finds a platform the release does not have")
	}
	if !got.Contains(strings.ToUpper(m.Files["svc-connector_linux_amd64"])) || got.Contains(sum([]byte("other"))) {
		t.Error("Contains")
	}
	if !got.HasRuntime("command") || got.HasRuntime("docker") {
		t.Error("HasRuntime")
	}
	// The text is the documented form, byte for byte, in sha256sum's format.
	want := "svc-connector v1.2.3\nruntimes command\n" +
		m.Files["install.sh"] + "  install.sh\n" +
		m.Files["svc-connector_linux_amd64"] + "  svc-connector_linux_amd64\n" +
		m.Files["svc-connector_windows_arm64.exe"] + "  svc-connector_windows_arm64.exe\n\n— svc-connector-release "
	if !strings.HasPrefix(string(signed), want) || strings.Count(string(signed), "\n") != 7 {
		t.Errorf("signed manifest:\n%s", signed)
	}
}

// The release directory in testdata/golden is signed by a fixed key; the releases module's tests hold
// the same bytes, so the two parsers cannot drift apart unnoticed. UPDATE_GOLDEN=1 rewrites it.
func TestGoldenManifest(t *testing.T) {
	skey, vkey := seededKey(t, "svc-connector-release", 7)
	m := Manifest{Version: "v0.1.0", Runtimes: []string{"command"}, Files: map[string]string{
		"install.sh":                sum([]byte("#!/bin/sh\necho install\n")),
		"svc-connector_linux_amd64": sum([]byte("linux amd64 binary\n")),
	}}
	signed, err := Sign(m, skey)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", "golden")
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, body := range map[string]string{"manifest": string(signed), "release-key": vkey + "\n",
			"install.sh": "#!/bin/sh\necho install\n", "svc-connector_linux_amd64": "linux amd64 binary\n"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	golden, err := os.ReadFile(filepath.Join(dir, "manifest"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(golden, signed) {
		t.Fatalf("Sign no longer makes the golden manifest:\n%s\nwant\n%s", signed, golden)
	}
	key, err := os.ReadFile(filepath.Join(dir, "release-key"))
	if err != nil || string(key) != vkey+"\n" {
		t.Fatalf("golden release-key %q, %v", key, err)
	}
	got, err := Verify(golden, string(key))
	if err != nil || got.Version != "v0.1.0" || len(got.Files) != 2 {
		t.Fatalf("Verify(golden) = %+v, %v", got, err)
	}
}

func TestVerifyRefuses(t *testing.T) {
	skey, vkey, err := GenerateKey("svc-connector-release")
	if err != nil {
		t.Fatal(err)
	}
	otherSkey, otherVkey, err := GenerateKey("svc-connector-release")
	if err != nil {
		t.Fatal(err)
	}
	signed, err := Sign(sampleManifest(), skey)
	if err != nil {
		t.Fatal(err)
	}
	signer, _ := note.NewSigner(skey)
	otherSigner, _ := note.NewSigner(otherSkey)
	// signText signs an arbitrary text with the release key, for bodies Sign would never write.
	signText := func(text string, signers ...note.Signer) []byte {
		b, err := note.Sign(&note.Note{Text: text}, signers...)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	a, b := sum([]byte("a")), sum([]byte("b"))
	textOf := func(lines ...string) string { return strings.Join(lines, "\n") + "\n" }
	byOther, _ := Sign(sampleManifest(), otherSkey)

	cases := map[string]struct {
		manifest []byte
		want     error
	}{
		"signed by another key":          {byOther, ErrSignature},
		"a second signature":             {signText(textOf("svc-connector v1", "runtimes command", a+"  x"), signer, otherSigner), ErrSignature},
		"the same signature twice":       {append(bytes.Clone(signed), signed[bytes.LastIndex(signed, []byte("\n—"))+1:]...), ErrSignature},
		"no signature":                   {[]byte(textOf("svc-connector v1", "runtimes command", a+"  x")), ErrMalformed},
		"a duplicate name":               {signText(textOf("svc-connector v1", "runtimes command", a+"  x", b+"  x"), signer), ErrMalformed},
		"names out of order":             {signText(textOf("svc-connector v1", "runtimes command", a+"  y", b+"  x"), signer), ErrMalformed},
		"an uppercase checksum":          {signText(textOf("svc-connector v1", "runtimes command", strings.ToUpper(a)+"  x"), signer), ErrMalformed},
		"a short checksum":               {signText(textOf("svc-connector v1", "runtimes command", a[:62]+"  x"), signer), ErrMalformed},
		"one space":                      {signText(textOf("svc-connector v1", "runtimes command", a+" x"), signer), ErrMalformed},
		"a path":                         {signText(textOf("svc-connector v1", "runtimes command", a+"  ../x"), signer), ErrMalformed},
		"the manifest listed":            {signText(textOf("svc-connector v1", "runtimes command", a+"  manifest"), signer), ErrMalformed},
		"no file":                        {signText(textOf("svc-connector v1", "runtimes command"), signer), ErrMalformed},
		"no runtimes line":               {signText(textOf("svc-connector v1", a+"  x"), signer), ErrMalformed},
		"an empty runtime":               {signText(textOf("svc-connector v1", "runtimes command ", a+"  x"), signer), ErrMalformed},
		"a runtime twice":                {signText(textOf("svc-connector v1", "runtimes command command", a+"  x"), signer), ErrMalformed},
		"another header":                 {signText(textOf("svc-agent v1", "runtimes command", a+"  x"), signer), ErrMalformed},
		"a version with a space":         {signText(textOf("svc-connector v1 beta", "runtimes command", a+"  x"), signer), ErrMalformed},
		"an empty line in the text":      {signText(textOf("svc-connector v1", "runtimes command", "", a+"  x"), signer), ErrMalformed},
		"a trailing line":                {signText(textOf("svc-connector v1", "runtimes command", a+"  x", "# comment"), signer), ErrMalformed},
		"text after the signature":       {append(bytes.Clone(signed), "x\n"...), ErrMalformed},
		"a carriage return":              {bytes.ReplaceAll(signed, []byte("\n"), []byte("\r\n")), ErrMalformed},
		"empty":                          {nil, ErrMalformed},
		"a signature line without a key": {bytes.Replace(signed, []byte("— svc-connector-release "), []byte("— "), 1), ErrMalformed},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := Verify(tc.manifest, vkey)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrTampered) || m != nil {
				t.Fatalf("Verify = %v, %v; want %v\n%s", m, err, tc.want, tc.manifest)
			}
		})
	}

	// Any one byte changed, anywhere in the manifest, is refused.
	for i := range signed {
		changed := bytes.Clone(signed)
		changed[i] ^= 0x01
		if m, err := Verify(changed, vkey); !errors.Is(err, ErrTampered) {
			t.Fatalf("byte %d changed (%q): Verify = %+v, %v", i, changed[i], m, err)
		}
	}
	// So is a manifest verified under a key of another name, or no key at all.
	_, renamed := seededKey(t, "other-name", 1)
	for _, key := range []string{otherVkey, renamed} {
		if _, err := Verify(signed, key); !errors.Is(err, ErrSignature) {
			t.Errorf("under %s: %v", key, err)
		}
	}
	for _, key := range []string{"", "svc-connector-release", skey, "x+00000000+AQ=="} {
		if _, err := Verify(signed, key); !errors.Is(err, ErrBadKey) {
			t.Errorf("under the malformed key %q: %v", key, err)
		}
	}
}

func TestSignRefusesWhatVerifyWould(t *testing.T) {
	skey, _, err := GenerateKey("k")
	if err != nil {
		t.Fatal(err)
	}
	good := sampleManifest()
	for name, change := range map[string]func(m *Manifest){
		"no version":    func(m *Manifest) { m.Version = "" },
		"a bad version": func(m *Manifest) { m.Version = "v1 beta" },
		"no runtime":    func(m *Manifest) { m.Runtimes = nil },
		"a runtime twice": func(m *Manifest) {
			m.Runtimes = []string{"command", "command"}
		},
		"a bad runtime": func(m *Manifest) { m.Runtimes = []string{"Command"} },
		"no file":       func(m *Manifest) { m.Files = nil },
		"a bad name":    func(m *Manifest) { m.Files = map[string]string{"a/b": sum(nil)} },
		"a reserved name": func(m *Manifest) {
			m.Files = map[string]string{"release-key": sum(nil)}
		},
		"a bad checksum": func(m *Manifest) { m.Files = map[string]string{"x": "abc"} },
	} {
		m := good
		m.Files = map[string]string{}
		for k, v := range good.Files {
			m.Files[k] = v
		}
		change(&m)
		if _, err := Sign(m, skey); err == nil {
			t.Errorf("%s: signed", name)
		}
	}
	if _, err := Sign(good, "PRIVATE+KEY+nope"); !errors.Is(err, ErrBadKey) {
		t.Errorf("a bad signer key: %v", err)
	}
	for _, name := range []string{"", "a b", "a+b", "ünïcode"} {
		if _, _, err := GenerateKey(name); !errors.Is(err, ErrBadKey) {
			t.Errorf("GenerateKey(%q): %v", name, err)
		}
	}
}

// noteSign signs text as a note with signerKey, for manifests Sign would never write.
func noteSign(t *testing.T, signerKey, text string) ([]byte, error) {
	t.Helper()
	s, err := note.NewSigner(signerKey)
	if err != nil {
		t.Fatal(err)
	}
	return note.Sign(&note.Note{Text: text}, s)
}
