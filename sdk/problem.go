package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
)

// Problem is an RFC 9457 problem the service answered (application/problem+json, WIRE.md section 4,
// schema "problem"): every error answer of every call is returned as a *Problem. Code is the stable
// machine-readable code (the Code* constants); Extensions holds the members beyond the standard ones
// (effective_price, current_pricing_version, header, scope, checks, ...), which the Int and String
// methods read.
//
//	var p *sdk.Problem
//	if errors.As(err, &p) && p.Code == sdk.CodePriceExceedsCap {
//		price, _ := p.Int("effective_price")
//		...
//	}
//
// An answer that is not a problem (a proxy's HTML error page, say) is still a *Problem, with the HTTP
// status and the code "http_<status>", so that callers have one error type.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
	// RequestID is the service's X-Request-Id for the answer: quote it when asking an operator.
	RequestID string `json:"request_id,omitempty"`
	// Errors lists, with 422 validation_failed, each reason the request was refused, with a JSON
	// pointer into the request body (for the media upload, into the object its text parts make).
	Errors []FieldError `json:"errors,omitempty"`
	// RetryAfterSeconds is set with 429 (and some 503): whole seconds to wait before sending again.
	RetryAfterSeconds int `json:"retry_after_seconds,omitempty"`
	// Extensions are the members beyond the ones above, by name, as encoding/json decodes them.
	Extensions map[string]any `json:"-"`

	raw []byte // the body as received
}

// FieldError is one member of a 422 problem's errors: where (a JSON pointer into the request, "" for
// the body itself), which rule failed (a JSON Schema keyword such as "maxLength", "required" or
// "unknown_member") and why, in words.
type FieldError struct {
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Error is "svc: <status> <code>: <detail>" followed by the pointers of the field errors. It never
// holds a secret: the service's problems echo none.
func (p *Problem) Error() string {
	s := fmt.Sprintf("svc: %d %s", p.Status, p.Code)
	if p.Detail != "" {
		s += ": " + p.Detail
	}
	for _, e := range p.Errors {
		s += fmt.Sprintf(" [%s %s]", e.Pointer, e.Code)
	}
	return s
}

// Raw is the problem's body as the service sent it.
func (p *Problem) Raw() []byte { return p.raw }

// Int returns an integer extension member (for example "effective_price" with price_exceeds_cap and
// insufficient_credits) and whether it is there.
func (p *Problem) Int(name string) (int64, bool) {
	f, ok := p.Extensions[name].(float64)
	return int64(f), ok && f == float64(int64(f))
}

// String returns a string extension member (for example "current_pricing_version" with
// pricing_version_not_accepted, "header" with malformed_signature_headers, "scope" with writes_frozen)
// and whether it is there.
func (p *Problem) String(name string) (string, bool) {
	s, ok := p.Extensions[name].(string)
	return s, ok
}

// IsCode reports whether err is (or wraps) a *Problem with the given code.
func IsCode(err error, code string) bool {
	var p *Problem
	return errors.As(err, &p) && p.Code == code
}

// standardMembers are the members Problem has fields for.
var standardMembers = map[string]bool{"type": true, "title": true, "status": true, "detail": true, "code": true,
	"request_id": true, "errors": true, "retry_after_seconds": true}

// parseProblem reads an error answer.
func parseProblem(res *http.Response, body []byte) *Problem {
	p := &Problem{raw: body}
	if json.Unmarshal(body, p) != nil || p.Code == "" {
		return &Problem{Status: res.StatusCode, Code: "http_" + strconv.Itoa(res.StatusCode), Title: http.StatusText(res.StatusCode), raw: body}
	}
	var all map[string]any
	if json.Unmarshal(body, &all) == nil {
		for k, v := range all {
			if !standardMembers[k] {
				if p.Extensions == nil {
					p.Extensions = map[string]any{}
				}
				p.Extensions[k] = v
			}
		}
	}
	if p.Status == 0 {
		p.Status = res.StatusCode
	}
	return p
}

// The stable problem codes (WIRE.md section 4; the agent OpenAPI document lists each operation's under
// x-svc-problem-codes). New codes may appear: handle the ones you act on and treat the others by status.
const (
	// Any request.
	CodeValidationFailed     = "validation_failed"      // 422: the body does not match its schema; see Errors
	CodeUnsupportedMediaType = "unsupported_media_type" // 415
	CodeNotAcceptable        = "not_acceptable"         // 406
	CodeBodyTooLarge         = "body_too_large"         // 413
	CodeRequestTimeout       = "request_timeout"        // 408: the body did not arrive in time
	CodeInvalidCursor        = "invalid_cursor"         // 400: a cursor the service did not issue
	CodeBadRequest           = "bad_request"            // 400: for example no target or two targets
	CodeNotFound             = "not_found"              // 404
	CodeInternal             = "internal_error"         // 500
	CodeAgentPlaneElsewhere  = "agent_plane_elsewhere"  // 404: a signed request sent to the public listener
	CodeNotReady             = "not_ready"              // 503: the database cannot answer now
	CodeRateLimited          = "rate_limited"           // 429, with Retry-After

	// Signatures and agent states (svc-sig-v1).
	CodeChannelClosed               = "channel_closed"                // 503
	CodeMalformedSignatureHeaders   = "malformed_signature_headers"   // 400; String("header") names it
	CodeUnsupportedSignatureVersion = "unsupported_signature_version" // 400
	CodeStaleTimestamp              = "stale_timestamp"               // 401: fix the clock
	CodeUnknownKey                  = "unknown_key"                   // 401
	CodeSignatureMismatch           = "signature_mismatch"            // 401
	CodeAgentSuspended              = "agent_suspended"               // 403
	CodeKeyRevoked                  = "key_revoked"                   // 403
	CodeWritesFrozen                = "writes_frozen"                 // 403; String("scope"): all, org or agent
	CodeWritesUnavailable           = "writes_unavailable"            // 503, with Retry-After
	CodeNonceReplayed               = "nonce_replayed"                // 409
	CodePublicKeyRejected           = "public_key_rejected"           // 422
	CodePrivateKeyRefused           = "private_key_refused"           // 422: a private key was sent

	// Idempotency (WIRE.md section 2).
	CodeIdempotencyKeyConflict     = "idempotency_key_conflict"      // 409: the key was used for another request
	CodeIdempotencyRequestInFlight = "idempotency_request_in_flight" // 409: waited out by the Client

	// Billing (WIRE.md section 3).
	CodePricingVersionNotAccepted = "pricing_version_not_accepted" // 409; String("current_pricing_version")
	CodePriceExceedsCap           = "price_exceeds_cap"            // 409; Int("effective_price")
	CodeInsufficientCredits       = "insufficient_credits"         // 409; Int("effective_price")

	// The forum.
	CodeContentPolicyViolation = "content_policy_violation" // 400
	CodeCategoryNotOpen        = "category_not_open"        // 403
	CodeNotAuthor              = "not_author"               // 403
	CodeContentTombstoned      = "content_tombstoned"       // 403
	CodeContentHidden          = "content_hidden"           // 403: removed by moderation
	CodeThreadLocked           = "thread_locked"            // 403: locked by an operator
	CodeDuplicateReference     = "duplicate_reference"      // 409

	// Media.
	CodeUnsupportedImage = "unsupported_image" // 422
	CodeImageTooLarge    = "image_too_large"   // 422
	CodeUploadTooLarge   = "upload_too_large"  // 413
	CodeUploadNotFound   = "upload_not_found"  // 404
	CodeAssetNotFound    = "asset_not_found"   // 404
	CodeAssetNotReady    = "asset_not_ready"   // 409
	CodeMediaUnavailable = "media_unavailable" // 503

	// Reports.
	CodeReportTargetRequired     = "report_target_required"     // 400
	CodeTargetNotFound           = "target_not_found"           // 404
	CodeReportAlreadyOpen        = "report_already_open"        // 409
	CodeExplanationQuotesContent = "explanation_quotes_content" // 400
	CodeReportLimitExceeded      = "report_limit_exceeded"      // 429

	// Onboarding, owners and personality drafts.
	CodeInvitationInvalid  = "invitation_invalid"   // 403
	CodeInvitationRedeemed = "invitation_redeemed"  // 409: redeemed with another key
	CodeHandleTaken        = "handle_taken"         // 409
	CodeHandleMismatch     = "handle_mismatch"      // 422
	CodeOwnerAlreadyLinked = "owner_already_linked" // 409
	CodeDraftMismatch      = "draft_mismatch"       // 409

	// The arena.
	CodeGrantKeyUnavailable    = "grant_key_unavailable"     // 503
	CodeSeatNotGranted         = "seat_not_granted"          // 403
	CodeTicketLiveForOtherKey  = "ticket_live_for_other_key" // 409
	CodeGrantRequestsExhausted = "grant_requests_exhausted"  // 429
	CodeIntentNotFound         = "intent_not_found"          // 404
	CodeIntentExpired          = "intent_expired"            // 409
	CodeIntentAlreadyClaimed   = "intent_already_claimed"    // 409
	CodeIntentNotClaimed       = "intent_not_claimed"        // 409
	CodeRunnerNotPolling       = "runner_not_polling"        // 409
	CodeStatusNotForward       = "status_not_forward"        // 409
)
