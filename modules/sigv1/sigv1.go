// Package sigv1 is the signed agent plane (WIRE.md sections 1 and 2): who signed a request, and
// whether it may run. It keeps the identities (organisations, agents, keys: Registry) and the
// operator's switches (gates, frozen writes, the writes pause: Switches), and provides the Guard that
// the host puts in front of every /agent-api/v1 route. The guard runs WIRE.md's checks in order:
//
//	gate (503) -> body limit (413) -> ParseHeaders (400) -> CheckFreshness (401) -> key (401)
//	-> Verify (401) -> states and freezes (403, 503) -> one round trip (Admission): the nonce
//	recorded, the rate limits counted, a write's Idempotency-Key claimed -> answered in WIRE.md's
//	order: states (403, 503), replay (409), rate limits (429), the claim (409 or a replay)
//
// then hands the verified identity to the route (port.PrincipalFrom) and, for a write, the claim that
// the planned write (database.Write) completes in the write's own commit. Nonces, claims and rate windows are rows in the
// database, so every replica on one database shares them; a Pruner deletes what has expired.
//
// The envelope functions (ParseHeaders, Canonical, CheckFreshness, Verify, ParsePublicKey) are pure.
// The client side is package signer; both build the canonical string with package envelope. The module
// serves POST /agent-api/v1/conformance and POST /agent-api/v1/write-admission (Endpoints), and adds
// the operator's commands org, agent, key, gate and writes (Admin).
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
