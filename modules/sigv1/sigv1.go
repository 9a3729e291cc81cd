// Package sigv1 is the server side of svc-sig-v1 request signing (WIRE.md section 1): it parses the
// signature headers into an Envelope, rebuilds the canonical string, checks the timestamp's freshness,
// checks public keys at registration and verifies Ed25519 signatures. It is pure: no database and no
// HTTP server; the host's middleware calls it in the order of WIRE.md's verification table:
//
//	env, err := sigv1.ParseHeaders(r.Method, r.RequestURI, r.Header) // 400
//	env.BodySHA256 = sigv1.BodySHA256(body)
//	err = env.CheckFreshness(now)                                   // 401 stale_timestamp
//	pub := lookup(env.AgentID, env.KeyID)                           // 401 unknown_key
//	if !sigv1.Verify(pub, env) { ... }                              // 401 signature_mismatch
//
// The client side is package signer; both build the canonical string with package envelope.
package sigv1

import "time"

// ID is the module's name: folder, package and configuration key.
const ID = "sigv1"

// Version is the module's release version (tags modules/sigv1/vX.Y.Z).
const Version = "0.1.0"

// MaxSkew is how far Svc-Timestamp may be from the server's clock, either way (spec section 5.4).
const MaxSkew = 300 * time.Second

// NonceWindow is how long a nonce is remembered for an agent (spec section 5.4).
const NonceWindow = 1800 * time.Second
