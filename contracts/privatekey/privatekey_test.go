package privatekey_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/privatekey"
)

var (
	seed = func() []byte {
		s := make([]byte, 32)
		for i := range s {
			s[i] = byte(i + 1)
		}
		return s
	}()
	priv  = ed25519.NewKeyFromSeed(seed)
	pub   = priv.Public().(ed25519.PublicKey)
	pkcs8 = append([]byte{0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20}, seed...)
	pem   = "-----BEGIN PRIVATE KEY-----\n" + base64.StdEncoding.EncodeToString(pkcs8) + "\n-----END PRIVATE KEY-----\n"
	jwk   = `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `","d":"` + base64.RawURLEncoding.EncodeToString(seed) + `"}`
	sig   = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte("hello")))
)

func TestIs(t *testing.T) {
	private := map[string]string{
		"PKCS8 PEM":              pem,
		"OpenSSH PEM":            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
		"encrypted PEM":          "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIB\n-----END ENCRYPTED PRIVATE KEY-----",
		"PEM with leading text":  "my key:\n-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----",
		"PuTTY":                  "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
		"JWK with d":             jwk,
		"JWK set with d":         `{"keys":[{"kty":"OKP","x":"a"},{"kty":"OKP","x":"b","d":"c"}]}`,
		"broken JSON with d":     `{"kty":"OKP","d":"abc",}`,
		"seed||pub std base64":   base64.StdEncoding.EncodeToString(priv),
		"seed||pub raw base64":   base64.RawStdEncoding.EncodeToString(priv),
		"seed||pub url base64":   base64.URLEncoding.EncodeToString(priv),
		"seed||pub raw url b64":  base64.RawURLEncoding.EncodeToString(priv),
		"seed||pub hex":          hex.EncodeToString(priv),
		"seed||pub upper hex":    strings.ToUpper(hex.EncodeToString(priv)),
		"seed||pub with spaces":  "  " + base64.StdEncoding.EncodeToString(priv) + "\n",
		"PKCS8 DER base64":       base64.StdEncoding.EncodeToString(pkcs8),
		"PKCS8 DER hex":          hex.EncodeToString(pkcs8),
		"OpenSSH body unarmored": base64.StdEncoding.EncodeToString([]byte("openssh-key-v1\x00\x00\x00\x00\x04none")),
	}
	for name, s := range private {
		if !privatekey.Is(s) {
			t.Errorf("%s: not recognised as private", name)
		}
	}
	public := map[string]string{
		"public key base64":  base64.StdEncoding.EncodeToString(pub),
		"public key hex":     hex.EncodeToString(pub),
		"public JWK":         `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`,
		"public JWK set":     `{"keys":[{"kty":"OKP","x":"a"}]}`,
		"PUBLIC KEY PEM":     "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----",
		"empty":              "",
		"spaces":             "   ",
		"text":               "hello",
		"signature 64 bytes": "svc-sig-v1 " + sig,
	}
	for name, s := range public {
		if privatekey.Is(s) {
			t.Errorf("%s: taken for a private key", name)
		}
	}
}

// A private key quoted anywhere in a post is found; prose about keys, public keys, signatures, hashes
// and code are not taken for one.
func TestIn(t *testing.T) {
	private := map[string]string{
		"PKCS8 PEM in prose":     "Here is my key, please help:\n\n```\n" + pem + "```\nThanks!",
		"lower-case armour":      "-----begin private key-----\nMC4CAQAwBQYDK2VwBCIEIA==",
		"RSA PEM":                "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----",
		"OpenSSH PEM":            "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
		"OpenSSH body unarmored": "paste: " + base64.StdEncoding.EncodeToString([]byte("openssh-key-v1\x00\x00\x00\x00\x04none")),
		"PKCS8 DER unarmored":    "my key is " + base64.StdEncoding.EncodeToString(pkcs8) + " ok",
		"JWK with d":             "config:\n" + jwk + "\n",
		"JWK pretty":             "{\n  \"kty\": \"OKP\",\n  \"d\": \"" + base64.RawURLEncoding.EncodeToString(seed) + "\"\n}",
		"labelled seed base64":   "My ed25519 seed: " + base64.StdEncoding.EncodeToString(seed),
		"labelled seed hex":      "seed = " + hex.EncodeToString(seed),
		"private_key =":          `private_key = "` + base64.StdEncoding.EncodeToString(priv) + `"`,
		"private key is":         "The private key is " + base64.RawURLEncoding.EncodeToString(seed) + ".",
		"secret key hex 64B":     "SECRET KEY:\n" + hex.EncodeToString(priv),
		"PuTTY":                  "PuTTY-User-Key-File-3: ssh-ed25519",
	}
	for name, s := range private {
		if !privatekey.In(s) {
			t.Errorf("%s: private key not found in %q", name, s)
		}
	}
	public := map[string]string{
		"prose about keys":     "Never paste your private key anywhere; keep the seed where it was made.",
		"public key":           "My public key is " + base64.StdEncoding.EncodeToString(pub) + " and it is registered.",
		"signature":            "Svc-Signature: svc-sig-v1 " + sig,
		"unlabelled 64 bytes":  "the bytes " + base64.StdEncoding.EncodeToString(priv) + " appeared in a log", // could be a signature
		"sha-256 hash":         "body_sha256 " + strings.Repeat("ab", 32),
		"PUBLIC KEY PEM":       "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----",
		"public JWK":           `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`,
		"JSON d not a JWK":     `{"d": "` + base64.RawURLEncoding.EncodeToString(seed) + `"}`,
		"seed word, short":     "Use seed 42 for the test.",
		"seed, long blob":      "seed: " + strings.Repeat("QUJD", 40),
		"recipe":               "Soak the seeds overnight, then toast them.",
		"public after private": "Never paste a private key. My public key is " + base64.StdEncoding.EncodeToString(pub),
		"label far away":       "private key handling, as described in the RFC that I read yesterday evening: " + base64.StdEncoding.EncodeToString(seed),
	}
	for name, s := range public {
		if privatekey.In(s) {
			t.Errorf("%s: taken for a private key: %q", name, s)
		}
	}
}

func FuzzIn(f *testing.F) {
	f.Add(pem)
	f.Add("seed: " + hex.EncodeToString(seed))
	f.Fuzz(func(t *testing.T, s string) {
		privatekey.In(s) // never panics
		privatekey.Is(s)
	})
}
