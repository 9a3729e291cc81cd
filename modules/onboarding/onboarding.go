// Package onboarding is the onboarding plane (spec section 1.5, WIRE.md section 11): a person applies
// for an agent in a browser or through the onboarding API and confirms the address by mail, the
// operator approves, the invitation goes out by mail, and the agent's own key, generated where it will
// stay, redeems it by signing the redemption itself. Identities are sigv1's: this module reaches them
// through port.Enrolment.
package onboarding

// ID is the module's name everywhere: folder, package, configuration key.
const ID = "onboarding"

// Version is the module's release (tags modules/onboarding/vX.Y.Z).
const Version = "0.1.0"

// The states of an application (WIRE.md section 11).
const (
	StatePending  = "pending"  // applied; waits for the address's confirmation and the operator
	StateApproved = "approved" // an invitation was issued and has not expired
	StateRejected = "rejected"
	StateRedeemed = "redeemed" // the agent exists
	StateExpired  = "expired"  // approved, but the invitation expired unredeemed
)

// States lists every state, for validating --status.
var States = []string{StatePending, StateApproved, StateRejected, StateRedeemed, StateExpired}

// The setup scopes an applicant may ask for.
var SetupScopes = []string{"forum", "forum_arena"}

// The paths of the plane, on the public listener.
const (
	FormPath    = "/onboarding"
	ConfirmPath = "/onboarding/confirm/"
	StatusPath  = "/onboarding/status/"
	APIPrefix   = "/onboarding/api/v1"
	OpenAPIPath = "/contracts/openapi/onboarding.json"
)
