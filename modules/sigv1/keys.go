package sigv1

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"filippo.io/edwards25519"
	"github.com/svcforum/svc/contracts/problem"
)

// publicKeyB64Len is the length of 32 bytes in standard base64 with padding.
const publicKeyB64Len = 44

var (
	errNotCanonical = errors.New("public key is not the canonical encoding of an Ed25519 curve point")
	errSmallOrder   = errors.New("public key is a point of small order, which anyone can sign for")
)

// ParsePublicKey parses a public key as registered (WIRE.md section 1): 32 raw bytes in standard base64
// with padding (44 characters, canonical: the unused bits of the last character are zero), that are the
// canonical encoding of an Ed25519 point not of small order. crypto/ed25519 accepts non-canonical and
// small-order keys, and with the identity key 01 00..00 the signature 01 00..00 || 00..00 verifies for
// any message, so such keys must never be registered. Refusals are *problem.Problem
// public_key_rejected (422); the detail never echoes the input.
//
// ParsePublicKey does not look for private keys: callers check LooksPrivate first and answer
// private_key_refused.
func ParsePublicKey(b64 string) (ed25519.PublicKey, error) {
	const shape = "public key must be 32 bytes in standard base64 with padding (44 characters)"
	if len(b64) != publicKeyB64Len || !isStdBase64(b64) {
		return nil, problem.New(problem.PublicKeyRejected, shape)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, problem.New(problem.PublicKeyRejected, shape)
	}
	if err := checkPoint(raw); err != nil {
		return nil, problem.New(problem.PublicKeyRejected, err.Error())
	}
	return ed25519.PublicKey(raw), nil
}

// checkPoint returns nil when raw (32 bytes) is the canonical encoding of a point that is not of small
// order: edwards25519 decodes it, re-encoding gives the same bytes, and multiplying by the cofactor 8
// does not give the identity.
func checkPoint(raw []byte) error {
	p, err := new(edwards25519.Point).SetBytes(raw)
	if err != nil || !bytes.Equal(p.Bytes(), raw) {
		return errNotCanonical
	}
	if new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1 {
		return errSmallOrder
	}
	return nil
}

func isStdBase64(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isStdBase64Char(c) && c != '=' {
			return false
		}
	}
	return true
}

func isStdBase64Char(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '+' || c == '/'
}

// LooksPrivate reports whether s looks like a private key in any common form, so that the caller can
// refuse it (422 private_key_refused) and make sure it is never logged or stored:
//   - a PEM or OpenSSH armoured private key ("-----BEGIN ... PRIVATE KEY-----"), or a PuTTY key file;
//   - a JSON Web Key, or a JWK Set, with a private member "d";
//   - 64 bytes in base64 (standard or URL alphabet, padded or not) or hex: Go's seed || public key form;
//   - a PKCS #8 Ed25519 private key (DER, 48 bytes) or an OpenSSH key body, in base64 or hex without
//     armour.
//
// A bare 32-byte seed cannot be told apart from a public key; ParsePublicKey takes it for one.
func LooksPrivate(s string) bool {
	t := strings.TrimSpace(s)
	if t == "" {
		return false
	}
	upper := strings.ToUpper(t)
	if strings.Contains(upper, "PRIVATE KEY") && strings.Contains(t, "-----") ||
		strings.HasPrefix(t, "PuTTY-User-Key-File-") {
		return true
	}
	if t[0] == '{' {
		return jwkHasPrivate([]byte(t))
	}
	for _, raw := range decodings(t) {
		if looksPrivateBytes(raw) {
			return true
		}
	}
	return false
}

// pkcs8Ed25519Prefix is the DER of a PKCS #8 Ed25519 private key up to its 32-byte seed (RFC 8410).
var pkcs8Ed25519Prefix = []byte{0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04,
	0x22, 0x04, 0x20}

func looksPrivateBytes(raw []byte) bool {
	return len(raw) == ed25519.PrivateKeySize ||
		len(raw) >= len(pkcs8Ed25519Prefix)+32 && bytes.HasPrefix(raw, pkcs8Ed25519Prefix) ||
		bytes.HasPrefix(raw, []byte("openssh-key-v1\x00"))
}

// decodings returns what s decodes to as hex and in each base64 variant.
func decodings(s string) [][]byte {
	var out [][]byte
	if raw, err := hex.DecodeString(s); err == nil {
		out = append(out, raw)
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding,
		base64.RawURLEncoding} {
		if raw, err := enc.DecodeString(s); err == nil {
			out = append(out, raw)
		}
	}
	return out
}

// jwkHasPrivate reports whether b is a JWK with a "d" member, or a JWK Set one of whose keys has one. A
// document that does not parse but names a "d" member is taken as private too: it is no public key.
func jwkHasPrivate(b []byte) bool {
	var key struct {
		D    json.RawMessage   `json:"d"`
		Keys []json.RawMessage `json:"keys"`
	}
	if err := json.Unmarshal(b, &key); err != nil {
		return bytes.Contains(b, []byte(`"d"`))
	}
	if key.D != nil {
		return true
	}
	for _, k := range key.Keys {
		if jwkHasPrivate(k) {
			return true
		}
	}
	return false
}
