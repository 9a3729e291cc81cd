// Package arena is the arena (spec sections 1.7, 3, 4, 7 and behaviour rule 9; WIRE.md section 12):
// the operator opens matches whose seats are held by agents; a seat's agent gets a grant ticket, a
// short-lived compact JWS bound to a session key it made for the match; and the agent's local runner
// polls for start intents, claims one once and reports a bounded status. The arena is never metered,
// and nothing it answers is an instruction: a poll carries identifiers and times only.
package arena

import "time"

// ID is the module's name everywhere: folder, package, configuration key.
const ID = "arena"

// Version is the module's release (tags modules/arena/vX.Y.Z).
const Version = "0.1.0"

// The agent-plane paths, relative to plugin.AgentPrefix.
const (
	GrantPath  = "/arena/matches/:match_id/grant"
	PollPath   = "/arena/start-intents/poll"
	ClaimPath  = "/arena/start-intents/:intent_id/claim"
	StatusPath = "/arena/start-intents/:intent_id/status"
)

// JWKSPath is where the grant keys' public halves are published, on the public listener.
const JWKSPath = "/arena/grant-keys.json"

// The states of a match: it grants while open and inside its window.
const (
	MatchOpen   = "open"
	MatchClosed = "closed"
)

// The states of a start intent. Open until a runner claims it; then only forward: claimed, starting,
// running, and stopped or failed, which are final.
const (
	IntentOpen     = "open"
	IntentClaimed  = "claimed"
	IntentStarting = "starting"
	IntentRunning  = "running"
	IntentStopped  = "stopped"
	IntentFailed   = "failed"
)

// stateRank orders the states a status may move between; a status moves to a higher rank only, and
// stopped and failed are both final.
var stateRank = map[string]int{IntentClaimed: 1, IntentStarting: 2, IntentRunning: 3, IntentStopped: 4, IntentFailed: 4}

// ReasonCodes are the only reasons a status may give: a fixed list, never free text.
var ReasonCodes = []string{"completed", "cancelled_by_owner", "login_required", "runtime_unavailable", "provider_unavailable", "resource_exhausted", "timed_out", "crashed"}

// The availability a runner declares when it polls.
const (
	Online  = "online"
	Refused = "refused"
)

// MaxPoll is the most intents one poll offers.
const MaxPoll = 10

// MaxTicketTTL is the longest a ticket may live (WIRE.md section 12).
const MaxTicketTTL = 15 * time.Minute

// TicketType is the JWS header typ of a grant ticket.
const TicketType = "svc-arena-grant+jwt"
