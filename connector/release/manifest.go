package release

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Manifest is a verified release manifest.
type Manifest struct {
	Version  string
	Runtimes []string
	Files    map[string]string // file name -> lowercase hex SHA-256
	// Key is the verifier key the manifest was verified under (set by Verify; Sign ignores it).
	Key string
}

// The names of a release directory's own files, which the manifest never lists.
const (
	ManifestName  = "manifest"
	KeyName       = "release-key"
	InstallerName = "install.sh"
	// InfoName is the release's description (Info), which the releases module makes from the verified
	// manifest and serves beside the release's files: never a file of a release either.
	InfoName       = "release.json"
	manifestHeader = "svc-connector "
	runtimesHeader = "runtimes"
)

// The stable errors. Every refusal of a release's content wraps ErrTampered.
var (
	// ErrUnpublished: the discovery document names no connector_release_manifest or connector_release_key.
	ErrUnpublished = errors.New("release: the service publishes no connector release (its discovery document names no connector_release_manifest or connector_release_key)")
	// ErrTampered is what every refusal of a release's content wraps.
	ErrTampered = errors.New("release: refused, the release does not verify")
	// ErrSignature: the manifest is not signed by exactly the release key (a changed byte, another key,
	// a second signature).
	ErrSignature = &refusal{"release: refused, the manifest is not signed by the release key", ErrTampered}
	// ErrMalformed: the manifest is not a signed note of the documented form.
	ErrMalformed = &refusal{"release: refused, the manifest is malformed", ErrTampered}
	// ErrChecksum: a downloaded file's SHA-256 is not the manifest's.
	ErrChecksum = &refusal{"release: refused, a file's SHA-256 differs from the manifest", ErrTampered}
	// ErrKeyMismatch: the service publishes a release key other than the one built into this connector.
	ErrKeyMismatch = errors.New("release: refused, the service publishes a release key other than the one this connector trusts")
	// ErrBadKey: a key is not a note key of the documented form.
	ErrBadKey = errors.New("release: malformed release key")
	// ErrDowngrade: the published release is not newer than this connector (Compare), and the caller did
	// not allow a downgrade (SelfUpdateOptions.AllowDowngrade). It is not a refusal of the release's
	// content: the release may verify.
	ErrDowngrade = errors.New("release: refused, the published release is not newer than this connector")
	// ErrNoPlatform: the release has no binary for this platform.
	ErrNoPlatform = errors.New("release: the release has no svc-connector for this platform")
)

// refusal is a stable error that is also one of a broader kind (errors.Is finds both).
type refusal struct {
	msg  string
	kind error
}

func (e *refusal) Error() string { return e.msg }
func (e *refusal) Unwrap() error { return e.kind }

var (
	versionRE = regexp.MustCompile(`^[0-9A-Za-z][0-9A-Za-z.+_-]{0,63}$`)
	runtimeRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	fileRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	sumRE     = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// keyNameRE is narrower than the note format's names, so that install.sh handles every key.
	keyNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._/-]{0,63}$`)
)

// GenerateKey makes a release key pair named name: the signer key, which signs manifests and stays
// secret (offline for real releases), and the verifier key, which is published and built into the
// connector.
func GenerateKey(name string) (signerKey, verifierKey string, err error) {
	if !keyNameRE.MatchString(name) {
		return "", "", fmt.Errorf("%w: key name %q: want 1 to 64 of [A-Za-z0-9._/-]", ErrBadKey, name)
	}
	return note.GenerateKey(rand.Reader, name)
}

// VerifierKey returns the verifier key of a signer key.
func VerifierKey(signerKey string) (string, error) {
	name, seed, err := parseSignerKey(signerKey)
	if err != nil {
		return "", err
	}
	return note.NewEd25519VerifierKey(name, ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey))
}

// parseSignerKey reads "PRIVATE+KEY+<name>+<hash>+<base64 of 0x01 and the 32-byte seed>".
func parseSignerKey(signerKey string) (name string, seed []byte, err error) {
	signerKey = strings.TrimSpace(signerKey)
	if _, err := note.NewSigner(signerKey); err != nil {
		return "", nil, fmt.Errorf("%w: not a note signer key (%v)", ErrBadKey, err)
	}
	// The base64 may hold "+" too: the fifth part is the rest.
	parts := strings.SplitN(signerKey, "+", 5)
	raw, err := base64.StdEncoding.DecodeString(parts[len(parts)-1])
	if len(parts) != 5 || err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", nil, fmt.Errorf("%w: not an Ed25519 note signer key", ErrBadKey)
	}
	if !keyNameRE.MatchString(parts[2]) {
		return "", nil, fmt.Errorf("%w: key name %q: want 1 to 64 of [A-Za-z0-9._/-]", ErrBadKey, parts[2])
	}
	return parts[2], raw[1:], nil
}

// newVerifier reads a verifier key, which must be an Ed25519 note key with a name install.sh handles.
func newVerifier(verifierKey string) (note.Verifier, error) {
	v, err := note.NewVerifier(verifierKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not a note verifier key (%v)", ErrBadKey, verifierKey, err)
	}
	parts := strings.SplitN(verifierKey, "+", 3)
	raw, err := base64.StdEncoding.Strict().DecodeString(parts[len(parts)-1])
	if err != nil {
		return nil, fmt.Errorf("%w: %q is not in canonical base64", ErrBadKey, verifierKey)
	}
	if len(parts) != 3 || len(raw) != 1+ed25519.PublicKeySize || !keyNameRE.MatchString(v.Name()) {
		return nil, fmt.Errorf("%w: %q is not an Ed25519 note verifier key named with [A-Za-z0-9._/-]", ErrBadKey, verifierKey)
	}
	return v, nil
}

// CheckVerifierKey checks that verifierKey is an Ed25519 note verifier key that releases can use.
func CheckVerifierKey(verifierKey string) error {
	_, err := newVerifier(strings.TrimSpace(verifierKey))
	return err
}

// text is the manifest's note text (see the package documentation), checked.
func (m Manifest) text() (string, error) {
	if !versionRE.MatchString(m.Version) {
		return "", fmt.Errorf("version %q: want 1 to 64 of [0-9A-Za-z.+_-], starting with a letter or digit", m.Version)
	}
	runtimes := slices.Clone(m.Runtimes)
	slices.Sort(runtimes)
	if len(runtimes) == 0 {
		return "", errors.New("a release names at least one runtime")
	}
	for i, r := range runtimes {
		if !runtimeRE.MatchString(r) {
			return "", fmt.Errorf("runtime %q: want [a-z][a-z0-9_-]*", r)
		}
		if i > 0 && runtimes[i-1] == r {
			return "", fmt.Errorf("runtime %q is named twice", r)
		}
	}
	if len(m.Files) == 0 {
		return "", errors.New("a release lists at least one file")
	}
	var b strings.Builder
	b.WriteString(manifestHeader + m.Version + "\n")
	b.WriteString(runtimesHeader + " " + strings.Join(runtimes, " ") + "\n")
	names := make([]string, 0, len(m.Files))
	for name := range m.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		sum := m.Files[name]
		if err := checkFile(name, sum); err != nil {
			return "", err
		}
		b.WriteString(sum + "  " + name + "\n")
	}
	return b.String(), nil
}

func checkFile(name, sum string) error {
	if !fileRE.MatchString(name) || name == ManifestName || name == KeyName || name == InfoName {
		return fmt.Errorf("file name %q: want [A-Za-z0-9][A-Za-z0-9._-]*, not %q, %q or %q", name, ManifestName, KeyName, InfoName)
	}
	if !sumRE.MatchString(sum) {
		return fmt.Errorf("file %s: %q is not a lowercase hex SHA-256", name, sum)
	}
	return nil
}

// Sign returns the manifest as a note signed with signerKey: the bytes to publish as "manifest".
func Sign(m Manifest, signerKey string) ([]byte, error) {
	text, err := m.text()
	if err != nil {
		return nil, fmt.Errorf("sign manifest: %w", err)
	}
	if _, _, err := parseSignerKey(signerKey); err != nil {
		return nil, err
	}
	s, err := note.NewSigner(strings.TrimSpace(signerKey))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	return note.Sign(&note.Note{Text: text}, s)
}

// Verify checks that manifest is a note signed by exactly verifierKey, and nothing else, whose text is
// a manifest of the documented form, and returns it. Every refusal of the manifest wraps ErrTampered
// (ErrSignature, ErrMalformed); a malformed verifierKey is ErrBadKey.
func Verify(manifest []byte, verifierKey string) (*Manifest, error) {
	verifierKey = strings.TrimSpace(verifierKey)
	v, err := newVerifier(verifierKey)
	if err != nil {
		return nil, err
	}
	n, err := note.Open(manifest, note.VerifierList(v))
	var unverified *note.UnverifiedNoteError
	var invalid *note.InvalidSignatureError
	switch {
	case errors.As(err, &unverified):
		names := []string{}
		for _, s := range unverified.Note.UnverifiedSigs {
			names = append(names, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
		}
		return nil, fmt.Errorf("%w: signed by %s, not by %s+%08x", ErrSignature, strings.Join(names, ", "), v.Name(), v.KeyHash())
	case errors.As(err, &invalid):
		return nil, fmt.Errorf("%w: the signature of %s+%08x does not match the text", ErrSignature, v.Name(), v.KeyHash())
	case err != nil:
		return nil, fmt.Errorf("%w: not a signed note (%v)", ErrMalformed, err)
	}
	// Exactly one signature, and the bytes exactly the text, a blank line and that signature's line:
	// no second signature (not even a repeat of this one), nothing else.
	if len(n.Sigs) != 1 || len(n.UnverifiedSigs) != 0 ||
		!bytes.Equal(manifest, []byte(n.Text+"\n— "+n.Sigs[0].Name+" "+n.Sigs[0].Base64+"\n")) {
		return nil, fmt.Errorf("%w: it must carry exactly one signature, by %s+%08x", ErrSignature, v.Name(), v.KeyHash())
	}
	// And that signature in the one base64 spelling of its bytes (the decoder ignores padding bits).
	if _, err := base64.StdEncoding.Strict().DecodeString(n.Sigs[0].Base64); err != nil {
		return nil, fmt.Errorf("%w: the signature is not canonical base64", ErrMalformed)
	}
	m, err := parse(n.Text)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	m.Key = verifierKey
	return m, nil
}

// parse reads a manifest's text strictly: each line in its place and form, names in byte order, each
// once.
func parse(text string) (*Manifest, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 3 {
		return nil, errors.New("it has fewer than 3 lines")
	}
	version, ok := strings.CutPrefix(lines[0], manifestHeader)
	if !ok || !versionRE.MatchString(version) {
		return nil, fmt.Errorf("line 1 is not %q", "svc-connector <version>")
	}
	m := &Manifest{Version: version, Files: map[string]string{}}
	rest, ok := strings.CutPrefix(lines[1], runtimesHeader+" ")
	if !ok {
		return nil, fmt.Errorf("line 2 is not %q", "runtimes <runtime> ...")
	}
	for i, r := range strings.Split(rest, " ") {
		if !runtimeRE.MatchString(r) {
			return nil, fmt.Errorf("line 2: runtime %q", r)
		}
		if i > 0 && m.Runtimes[i-1] >= r {
			return nil, fmt.Errorf("line 2: runtime %q is out of order or named twice", r)
		}
		m.Runtimes = append(m.Runtimes, r)
	}
	prev := ""
	for i, line := range lines[2:] {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			return nil, fmt.Errorf("line %d is not %q", i+3, "<sha256>  <file>")
		}
		if err := checkFile(name, sum); err != nil {
			return nil, fmt.Errorf("line %d: %v", i+3, err)
		}
		if _, dup := m.Files[name]; dup {
			return nil, fmt.Errorf("line %d: file %s is listed twice", i+3, name)
		}
		if name < prev {
			return nil, fmt.Errorf("line %d: file %s is out of order", i+3, name)
		}
		prev = name
		m.Files[name] = sum
	}
	return m, nil
}

// BinaryName is the name of the connector's file for a platform: svc-connector_<os>_<arch>, with
// ".exe" on windows.
func BinaryName(goos, goarch string) string {
	name := "svc-connector_" + goos + "_" + goarch
	if goos == "windows" {
		name += ".exe"
	}
	return name
}

// FileFor returns the name and SHA-256 of the connector's binary for a platform.
func (m *Manifest) FileFor(goos, goarch string) (name, sha256hex string, ok bool) {
	name = BinaryName(goos, goarch)
	sha256hex, ok = m.Files[name]
	if !ok {
		return "", "", false
	}
	return name, sha256hex, true
}

// Contains reports whether some file of the release has this SHA-256 (hex, either case).
func (m *Manifest) Contains(sha256hex string) bool {
	sha256hex = strings.ToLower(sha256hex)
	for _, s := range m.Files {
		if s == sha256hex {
			return true
		}
	}
	return false
}

// HasRuntime reports whether the release's connector drives the named runtime.
func (m *Manifest) HasRuntime(name string) bool { return slices.Contains(m.Runtimes, name) }

// FileSHA256 is the lowercase hex SHA-256 of the file at path: how a release names its files.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
