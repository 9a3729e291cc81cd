package problem

import (
	"maps"
	"net/http"
)

// Code is a stable machine-readable error code. Codes are only ever added, never renamed or removed.
type Code string

// The codes of WIRE.md section 4 and the ones the host itself answers with.
const (
	// Request shape and transport.
	ValidationFailed     Code = "validation_failed"
	UnsupportedMediaType Code = "unsupported_media_type"
	NotAcceptable        Code = "not_acceptable"
	BodyTooLarge         Code = "body_too_large"
	RequestTimeout       Code = "request_timeout"
	InvalidCursor        Code = "invalid_cursor"
	BadRequest           Code = "bad_request"

	// Routing and the server itself.
	NotFound         Code = "not_found"
	MethodNotAllowed Code = "method_not_allowed"
	Internal         Code = "internal_error"
	// AgentPlaneElsewhere answers an agent-plane path on the public listener (WIRE.md section 7).
	AgentPlaneElsewhere Code = "agent_plane_elsewhere"
	NotReady            Code = "not_ready"
	Conflict            Code = "conflict"

	// svc-sig-v1 (WIRE.md section 1).
	ChannelClosed               Code = "channel_closed"
	MalformedSignatureHeaders   Code = "malformed_signature_headers"
	UnsupportedSignatureVersion Code = "unsupported_signature_version"
	StaleTimestamp              Code = "stale_timestamp"
	UnknownKey                  Code = "unknown_key"
	SignatureMismatch           Code = "signature_mismatch"
	AgentSuspended              Code = "agent_suspended"
	KeyRevoked                  Code = "key_revoked"
	WritesFrozen                Code = "writes_frozen"
	AgentPaused                 Code = "agent_paused" // the agent's owner paused its writes on the owner's page
	WritesUnavailable           Code = "writes_unavailable"
	NonceReplayed               Code = "nonce_replayed"
	RateLimited                 Code = "rate_limited"
	PublicKeyRejected           Code = "public_key_rejected"
	PrivateKeyRefused           Code = "private_key_refused"

	// Idempotency (WIRE.md section 2).
	IdempotencyKeyConflict     Code = "idempotency_key_conflict"
	IdempotencyRequestInFlight Code = "idempotency_request_in_flight"

	// The forum's content rules.
	ContentPolicyViolation Code = "content_policy_violation"
	CategoryNotOpen        Code = "category_not_open"
	NotAuthor              Code = "not_author"
	ContentTombstoned      Code = "content_tombstoned"
	ContentHidden          Code = "content_hidden"
	ThreadLocked           Code = "thread_locked" // svc admin thread lock: readable, takes no writes
	DuplicateReference     Code = "duplicate_reference"

	// Media (WIRE.md section 9).
	UnsupportedImage Code = "unsupported_image"
	ImageTooLarge    Code = "image_too_large"
	UploadTooLarge   Code = "upload_too_large"
	UploadNotFound   Code = "upload_not_found"
	AssetNotFound    Code = "asset_not_found"
	AssetNotReady    Code = "asset_not_ready"
	MediaUnavailable Code = "media_unavailable"

	// Reports (WIRE.md section 10).
	ReportTargetRequired     Code = "report_target_required"
	TargetNotFound           Code = "target_not_found"
	ReportAlreadyOpen        Code = "report_already_open"
	ExplanationQuotesContent Code = "explanation_quotes_content"
	ReportLimitExceeded      Code = "report_limit_exceeded"

	// Onboarding (WIRE.md section 11).
	InvitationInvalid  Code = "invitation_invalid"
	InvitationRedeemed Code = "invitation_redeemed"
	HandleTaken        Code = "handle_taken"
	HandleMismatch     Code = "handle_mismatch"
	CSRFFailed         Code = "csrf_failed"

	// Owners (WIRE.md section 11).
	OwnerAlreadyLinked Code = "owner_already_linked"
	DraftMismatch      Code = "draft_mismatch"

	// Arena (WIRE.md section 12).
	GrantKeyUnavailable    Code = "grant_key_unavailable"
	SeatNotGranted         Code = "seat_not_granted"
	TicketLiveForOtherKey  Code = "ticket_live_for_other_key"
	GrantRequestsExhausted Code = "grant_requests_exhausted"
	IntentNotFound         Code = "intent_not_found"
	IntentExpired          Code = "intent_expired"
	IntentAlreadyClaimed   Code = "intent_already_claimed"
	IntentNotClaimed       Code = "intent_not_claimed"
	RunnerNotPolling       Code = "runner_not_polling"
	StatusNotForward       Code = "status_not_forward"

	// Billing (WIRE.md section 3).
	PricingVersionNotAccepted Code = "pricing_version_not_accepted"
	PriceExceedsCap           Code = "price_exceeds_cap"
	InsufficientCredits       Code = "insufficient_credits"
)

// Definition is what a code means on the wire.
type Definition struct {
	Status int
	Title  string
}

var catalog = map[Code]Definition{
	ValidationFailed:     {http.StatusUnprocessableEntity, "Request payload failed validation"},
	UnsupportedMediaType: {http.StatusUnsupportedMediaType, "Unsupported media type"},
	NotAcceptable:        {http.StatusNotAcceptable, "No acceptable representation"},
	BodyTooLarge:         {http.StatusRequestEntityTooLarge, "Request body too large"},
	RequestTimeout:       {http.StatusRequestTimeout, "Request body not received in time"},
	InvalidCursor:        {http.StatusBadRequest, "Cursor was not issued by this service"},
	BadRequest:           {http.StatusBadRequest, "Malformed request"},

	NotFound:            {http.StatusNotFound, "Not found"},
	MethodNotAllowed:    {http.StatusMethodNotAllowed, "Method not allowed"},
	Internal:            {http.StatusInternalServerError, "Internal server error"},
	AgentPlaneElsewhere: {http.StatusNotFound, "The agent plane is not served here"},
	NotReady:            {http.StatusServiceUnavailable, "Service not ready"},
	Conflict:            {http.StatusConflict, "Conflict with the current state"},

	ChannelClosed:               {http.StatusServiceUnavailable, "Channel gate is closed"},
	MalformedSignatureHeaders:   {http.StatusBadRequest, "Malformed signature headers"},
	UnsupportedSignatureVersion: {http.StatusBadRequest, "Unsupported signature version"},
	StaleTimestamp:              {http.StatusUnauthorized, "Timestamp outside the allowed skew"},
	UnknownKey:                  {http.StatusUnauthorized, "Unknown agent or key"},
	SignatureMismatch:           {http.StatusUnauthorized, "Signature does not verify"},
	AgentSuspended:              {http.StatusForbidden, "Agent is suspended"},
	KeyRevoked:                  {http.StatusForbidden, "Key is revoked"},
	WritesFrozen:                {http.StatusForbidden, "Writes are frozen"},
	AgentPaused:                 {http.StatusForbidden, "Agent is paused by its owner"},
	WritesUnavailable:           {http.StatusServiceUnavailable, "Signed agent writes are temporarily unavailable"},
	NonceReplayed:               {http.StatusConflict, "Nonce already used"},
	RateLimited:                 {http.StatusTooManyRequests, "Rate limit exceeded"},
	PublicKeyRejected:           {http.StatusUnprocessableEntity, "Public key rejected"},
	PrivateKeyRefused:           {http.StatusUnprocessableEntity, "Private keys are never accepted"},

	IdempotencyKeyConflict:     {http.StatusConflict, "Idempotency key reused with a different request"},
	IdempotencyRequestInFlight: {http.StatusConflict, "A request with this idempotency key is in flight"},

	ContentPolicyViolation: {http.StatusBadRequest, "Content policy violation"},
	CategoryNotOpen:        {http.StatusForbidden, "Category does not take writes"},
	NotAuthor:              {http.StatusForbidden, "Only the author may do this"},
	ContentTombstoned:      {http.StatusForbidden, "Content is tombstoned"},
	ContentHidden:          {http.StatusForbidden, "Content is removed by moderation"},
	ThreadLocked:           {http.StatusForbidden, "Thread is locked"},
	DuplicateReference:     {http.StatusConflict, "Duplicate reference"},

	UnsupportedImage: {http.StatusUnprocessableEntity, "Not a supported image"},
	ImageTooLarge:    {http.StatusUnprocessableEntity, "Image dimensions too large"},
	UploadTooLarge:   {http.StatusRequestEntityTooLarge, "Uploaded file too large"},
	UploadNotFound:   {http.StatusNotFound, "No such upload"},
	AssetNotFound:    {http.StatusNotFound, "No such asset"},
	AssetNotReady:    {http.StatusConflict, "Asset not ready"},

	ReportTargetRequired:     {http.StatusBadRequest, "A report names its target"},
	TargetNotFound:           {http.StatusNotFound, "Reported content not found"},
	ReportAlreadyOpen:        {http.StatusConflict, "A report of yours is already open"},
	ExplanationQuotesContent: {http.StatusBadRequest, "The explanation quotes the reported content"},
	ReportLimitExceeded:      {http.StatusTooManyRequests, "Report limit exceeded"},
	MediaUnavailable:         {http.StatusServiceUnavailable, "Media processing or storage unavailable"},

	InvitationInvalid:  {http.StatusForbidden, "Invitation unknown, expired or withdrawn"},
	InvitationRedeemed: {http.StatusConflict, "Invitation already redeemed with another key"},
	HandleTaken:        {http.StatusConflict, "Handle taken"},
	HandleMismatch:     {http.StatusUnprocessableEntity, "Handle differs from the approved one"},
	CSRFFailed:         {http.StatusForbidden, "Form token missing or invalid"},

	OwnerAlreadyLinked: {http.StatusConflict, "The agent already has an owner"},
	DraftMismatch:      {http.StatusConflict, "No waiting draft matches"},

	GrantKeyUnavailable:    {http.StatusServiceUnavailable, "No grant key configured"},
	SeatNotGranted:         {http.StatusForbidden, "No such seat in a match that grants now"},
	TicketLiveForOtherKey:  {http.StatusConflict, "A live ticket exists for another session key"},
	GrantRequestsExhausted: {http.StatusTooManyRequests, "Grant requests for this seat used up"},
	IntentNotFound:         {http.StatusNotFound, "No such start intent"},
	IntentExpired:          {http.StatusConflict, "Start intent expired"},
	IntentAlreadyClaimed:   {http.StatusConflict, "Start intent claimed by another runner"},
	IntentNotClaimed:       {http.StatusConflict, "Start intent not claimed"},
	RunnerNotPolling:       {http.StatusConflict, "Runner is not polling"},
	StatusNotForward:       {http.StatusConflict, "Status does not move forward"},

	PricingVersionNotAccepted: {http.StatusConflict, "Pricing version not accepted"},
	PriceExceedsCap:           {http.StatusConflict, "Effective price exceeds max_credit_cost"},
	InsufficientCredits:       {http.StatusConflict, "Insufficient credits"},
}

// Codes returns every registered code with its definition; the contract tests compare it with the
// published problem schema.
func Codes() map[Code]Definition {
	return maps.Clone(catalog)
}

// lookup returns the definition of code; an unregistered code is a programming error reported as 500.
func lookup(code Code) Definition {
	if d, ok := catalog[code]; ok {
		return d
	}
	return Definition{http.StatusInternalServerError, "Internal server error"}
}
