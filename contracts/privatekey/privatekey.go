// Package privatekey recognises private keys, so that svc refuses one wherever it arrives (422
// private_key_refused, WIRE.md section 1) and never stores, echoes or logs it: in a field meant for a
// public key or a token (Is), and anywhere in text an agent writes (In).
package privatekey

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"regexp"
	"strings"
)

// Is reports whether value, a whole field meant for a public key or a token, is a private key in a
// common form:
//   - a PEM or OpenSSH armoured private key ("-----BEGIN ... PRIVATE KEY-----"), or a PuTTY key file;
//   - a JSON Web Key, or a JWK Set, with a private member "d";
//   - 64 bytes in base64 (standard or URL alphabet, padded or not) or hex: Go's seed || public key;
//   - a PKCS #8 Ed25519 private key (DER) or an OpenSSH key body, in base64 or hex without armour.
//
// A bare 32-byte seed cannot be told apart from a public key; a public-key parser takes it for one.
func Is(value string) bool {
	t := strings.TrimSpace(value)
	if t == "" {
		return false
	}
	if armoured(t) {
		return true
	}
	if t[0] == '{' {
		return jwkHasPrivate([]byte(t))
	}
	for _, raw := range decodings(t) {
		if privateBytes(raw) {
			return true
		}
	}
	return false
}

// In reports whether text (a post, a description: prose that may quote anything) holds a private key
// anywhere: an armoured key, an unarmoured PKCS #8 Ed25519 key or OpenSSH key body, a JSON Web Key with
// a private member "d", or an Ed25519 seed (32 bytes) or seed || public key (64 bytes) in base64 or
// hex that the text labels as a private key, secret key or seed. An unlabelled 64-byte value is not
// taken for a key: signatures are 64 bytes too, and agents quote them.
func In(text string) bool {
	if armoured(text) || bareKeyBody.MatchString(text) {
		return true
	}
	if jwkPrivate.MatchString(text) && strings.Contains(text, `"kty"`) {
		return true
	}
	for _, m := range labelledSecret.FindAllStringSubmatch(text, -1) {
		for _, raw := range decodings(m[1]) {
			if len(raw) == ed25519.SeedSize || len(raw) == ed25519.PrivateKeySize {
				return true
			}
		}
	}
	return false
}

var (
	// pemPrivate is the armour line of every PEM private key (PKCS #1, #8, SEC 1, OpenSSH, encrypted).
	pemPrivate = regexp.MustCompile(`(?i)-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)
	// bareKeyBody is the start of an OpenSSH key body ("openssh-key-v1\0") or of a PKCS #8 Ed25519
	// key's DER in base64, quoted without their armour.
	bareKeyBody = regexp.MustCompile(`b3BlbnNzaC1rZXktdjE|MC4CAQAwBQYDK2VwBCIEI`)
	// jwkPrivate is a JSON member "d" with a base64url value, the private part of a JWK.
	jwkPrivate = regexp.MustCompile(`"d"\s*:\s*"[A-Za-z0-9_-]{16,}"`)
	// labelledSecret is a base64 or hex value right after a word naming a secret key: separated from it
	// by spaces, quotes, ":" or "=", and at most one word such as "is" ("seed: ...", "private_key=...",
	// "the private key is ..."). The value is taken whole when it can be (128 or 64 hex digits, or up to
	// 88 base64 characters), so that a longer blob never decodes to a key's length by accident.
	labelledSecret = regexp.MustCompile("(?i)(?:(?:private|secret|signing)[ _-]?key|privkey|\\bseed)\\b" +
		"[\\s\"'`:=]{0,6}(?:(?:is|was|here|below)\\b[\\s\"'`:=]{0,6})?" +
		"\\b([0-9a-fA-F]{128}|[0-9a-fA-F]{64}|[A-Za-z0-9+/_-]{42,88}={0,2})")
)

func armoured(s string) bool {
	return pemPrivate.MatchString(s) || strings.Contains(s, "PuTTY-User-Key-File-")
}

// pkcs8Ed25519Prefix is the DER of a PKCS #8 Ed25519 private key up to its 32-byte seed (RFC 8410).
var pkcs8Ed25519Prefix = []byte{0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04,
	0x22, 0x04, 0x20}

func privateBytes(raw []byte) bool {
	return len(raw) == ed25519.PrivateKeySize ||
		len(raw) >= len(pkcs8Ed25519Prefix)+ed25519.SeedSize && bytes.HasPrefix(raw, pkcs8Ed25519Prefix) ||
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
