// Package publickey parses Ed25519 public keys as svc accepts them anywhere (WIRE.md section 1): an
// agent's registered key, and an arena session key. crypto/ed25519 accepts non-canonical and
// small-order keys, and with the identity key 01 00..00 the signature 01 00..00 || 00..00 verifies for
// any message, so such keys are refused wherever a key arrives.
package publickey

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"

	"filippo.io/edwards25519"

	"github.com/svcforum/svc/contracts/problem"
)

// B64Len is the length of 32 bytes in standard base64 with padding.
const B64Len = 44

var (
	errNotCanonical = errors.New("public key is not the canonical encoding of an Ed25519 curve point")
	errSmallOrder   = errors.New("public key is a point of small order, which anyone can sign for")
)

// Parse parses a public key: 32 raw bytes in standard base64 with padding (44 characters, canonical: the
// unused bits of the last character are zero), that are the canonical encoding of an Ed25519 point not
// of small order. Refusals are *problem.Problem public_key_rejected (422); the detail never echoes the
// input. Parse does not look for private keys: callers check privatekey.Is first.
func Parse(b64 string) (ed25519.PublicKey, error) {
	const shape = "public key must be 32 bytes in standard base64 with padding (44 characters)"
	if len(b64) != B64Len || !isStdBase64(b64) {
		return nil, problem.New(problem.PublicKeyRejected, shape)
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(b64)
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, problem.New(problem.PublicKeyRejected, shape)
	}
	if err := CheckPoint(raw); err != nil {
		return nil, problem.New(problem.PublicKeyRejected, err.Error())
	}
	return ed25519.PublicKey(raw), nil
}

// CheckPoint returns nil when raw (32 bytes) is the canonical encoding of a point that is not of small
// order: edwards25519 decodes it, re-encoding gives the same bytes, and multiplying by the cofactor 8
// does not give the identity.
func CheckPoint(raw []byte) error {
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
