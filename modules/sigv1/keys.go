package sigv1

import (
	"crypto/ed25519"

	"github.com/svcforum/svc/contracts/publickey"
)

// ParsePublicKey parses a public key as registered (WIRE.md section 1, contracts/publickey): 32 raw
// bytes in standard base64, the canonical encoding of an Ed25519 point not of small order. Refusals are
// *problem.Problem public_key_rejected (422). It does not look for private keys: callers check
// privatekey.Is first and answer private_key_refused.
func ParsePublicKey(b64 string) (ed25519.PublicKey, error) { return publickey.Parse(b64) }

// checkPoint is the point check of every key a signature is verified with.
func checkPoint(raw []byte) error { return publickey.CheckPoint(raw) }
