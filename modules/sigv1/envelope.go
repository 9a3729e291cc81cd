package sigv1

import (
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strings"
	"time"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/sdk/envelope"
)

// Scheme is the signature scheme this package verifies.
const Scheme = envelope.Scheme

// The signature headers (WIRE.md section 1).
const (
	HeaderAgentID        = envelope.HeaderAgentID
	HeaderKeyID          = envelope.HeaderKeyID
	HeaderTimestamp      = envelope.HeaderTimestamp
	HeaderNonce          = envelope.HeaderNonce
	HeaderIdempotencyKey = envelope.HeaderIdempotencyKey
	HeaderSignature      = envelope.HeaderSignature
)

// signatureB64Len is the length of 64 bytes in standard base64 with padding.
const signatureB64Len = 88

// Envelope is one request's svc-sig-v1 envelope. ParseHeaders fills every field but BodySHA256, which
// the caller sets from the raw body bytes (BodySHA256) before Canonical or Verify.
type Envelope struct {
	Method         string
	Target         string
	AgentID        string
	KeyID          string
	Timestamp      string
	Nonce          string
	IdempotencyKey string // "" when the request has none
	BodySHA256     string
	// Signature is the decoded 64-byte signature, or nil when the Svc-Signature credentials are not
	// exactly 64 bytes in standard base64 with padding (Verify then fails: 401 signature_mismatch).
	Signature []byte
}

// ParseHeaders checks the request method, the request-target (as sent on the request line, e.g. the
// server's r.RequestURI) and the signature headers, in the order of WIRE.md's verification table:
// every header present, given once and within its alphabet (else 400 malformed_signature_headers), then
// the scheme word (else 400 unsupported_signature_version). Errors are *problem.Problem; their detail
// and "header" member name the header and never echo its value.
//
// Signature credentials of the right scheme that are visible ASCII but do not decode to exactly 64
// bytes (63 or 65 bytes, bad base64, non-canonical padding, trailing garbage) are not a 400: they
// leave Envelope.Signature nil, and Verify fails, which the caller answers 401 signature_mismatch at
// the signature step. Reliability scenario 5 expects 401 for them; deferring the refusal to Verify
// (rather than returning signature_mismatch here) keeps WIRE.md's order, so that a stale timestamp or
// an unknown key is still reported as such. A space, a control character or a non-ASCII byte in the
// header is outside its alphabet and stays 400.
func ParseHeaders(method, target string, h http.Header) (Envelope, error) {
	if !envelope.ValidMethod(method) {
		return Envelope{}, problem.New(problem.MalformedSignatureHeaders,
			"the request method must be 1 to 32 uppercase ASCII letters")
	}
	if !envelope.ValidTarget(target) {
		return Envelope{}, problem.New(problem.MalformedSignatureHeaders,
			"the request target must start with \"/\" and be printable ASCII without spaces")
	}
	env := Envelope{Method: method, Target: target}
	var err error
	if env.AgentID, err = header(h, HeaderAgentID, envelope.ValidAgentID,
		"must be the agent's UUID in lowercase canonical form"); err != nil {
		return Envelope{}, err
	}
	if env.KeyID, err = header(h, HeaderKeyID, envelope.ValidKeyID,
		"must be 1 to 64 characters of A-Z a-z 0-9 . _ : -"); err != nil {
		return Envelope{}, err
	}
	if env.Timestamp, err = header(h, HeaderTimestamp, validTimestamp,
		"must be Unix time in whole seconds: decimal digits, no sign, no leading zeros, within 64 bits"); err != nil {
		return Envelope{}, err
	}
	if env.Nonce, err = header(h, HeaderNonce, envelope.ValidNonce,
		"must be 16 to 128 characters of A-Z a-z 0-9 _ -"); err != nil {
		return Envelope{}, err
	}
	const idemRule = "must be 1 to 255 printable ASCII characters (0x21 to 0x7E)"
	switch envelope.IdempotencyKeyRule(method) {
	case envelope.Forbidden:
		if len(h.Values(HeaderIdempotencyKey)) > 0 {
			return Envelope{}, malformed(HeaderIdempotencyKey, HeaderIdempotencyKey+" must be absent on "+method)
		}
	case envelope.Required:
		if env.IdempotencyKey, err = header(h, HeaderIdempotencyKey, envelope.ValidIdempotencyKey,
			idemRule+" and is required on "+method); err != nil {
			return Envelope{}, err
		}
	default:
		if len(h.Values(HeaderIdempotencyKey)) > 0 {
			if env.IdempotencyKey, err = header(h, HeaderIdempotencyKey, envelope.ValidIdempotencyKey,
				idemRule); err != nil {
				return Envelope{}, err
			}
		}
	}
	sig, err := header(h, HeaderSignature, wellFormedSignature,
		"must be the scheme word, one space and the signature in standard base64 with padding")
	if err != nil {
		return Envelope{}, err
	}
	scheme, cred, _ := strings.Cut(sig, " ")
	if scheme != Scheme {
		p := problem.New(problem.UnsupportedSignatureVersion,
			HeaderSignature+" names a scheme other than "+Scheme+", the only one supported")
		return Envelope{}, p.With("header", HeaderSignature)
	}
	env.Signature = decodeSignature(cred)
	return env, nil
}

// header returns the single value of name, or a malformed_signature_headers problem when it is
// missing, given more than once, or outside its alphabet (rule says what the alphabet is).
func header(h http.Header, name string, valid func(string) bool, rule string) (string, error) {
	vs := h.Values(name)
	switch {
	case len(vs) == 0:
		return "", malformed(name, name+" is missing")
	case len(vs) > 1:
		return "", malformed(name, name+" is given more than once")
	case !valid(vs[0]):
		return "", malformed(name, name+" "+rule)
	}
	return vs[0], nil
}

func malformed(name, detail string) *problem.Problem {
	return problem.New(problem.MalformedSignatureHeaders, detail).With("header", name)
}

func validTimestamp(s string) bool {
	_, ok := envelope.ParseTimestamp(s)
	return ok
}

// wellFormedSignature: a non-empty scheme word, exactly one space, non-empty credentials, every other
// byte printable ASCII. Whether the credentials decode is the signature step's business.
func wellFormedSignature(s string) bool {
	scheme, cred, found := strings.Cut(s, " ")
	return found && scheme != "" && cred != "" && envelope.Visible(scheme) && envelope.Visible(cred)
}

// decodeSignature returns the 64 signature bytes, or nil unless cred is exactly their standard,
// padded, canonical base64 (strict: the unused bits of the last character are zero).
func decodeSignature(cred string) []byte {
	if len(cred) != signatureB64Len {
		return nil
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(cred)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil
	}
	return sig
}

// Canonical returns the nine-line canonical string that the signature covers.
func (e Envelope) Canonical() string {
	return e.fields().Canonical()
}

func (e Envelope) fields() envelope.Fields {
	return envelope.Fields{Method: e.Method, Target: e.Target, AgentID: e.AgentID, KeyID: e.KeyID,
		Timestamp: e.Timestamp, Nonce: e.Nonce, IdempotencyKey: e.IdempotencyKey, BodySHA256: e.BodySHA256}
}

// Unix returns Svc-Timestamp as Unix seconds; ok is false when it is not well-formed.
func (e Envelope) Unix() (sec int64, ok bool) {
	return envelope.ParseTimestamp(e.Timestamp)
}

// CheckFreshness returns a stale_timestamp problem (401) unless the timestamp is within MaxSkew of now,
// either way; exactly MaxSkew is still fresh.
func (e Envelope) CheckFreshness(now time.Time) error {
	ts, ok := e.Unix()
	const skew = int64(MaxSkew / time.Second)
	n := now.Unix()
	// ts >= 0 and |n| is far from the int64 limits for any real clock; subtracting ts - skew (not
	// adding to n) cannot overflow for ts >= 0.
	if !ok || n < ts-skew || n-skew > ts {
		return problem.Newf(problem.StaleTimestamp, "%s is more than %d seconds from the server's clock",
			HeaderTimestamp, skew)
	}
	return nil
}

// BodySHA256 returns the lowercase hex SHA-256 of the exact raw body bytes.
func BodySHA256(body []byte) string {
	return envelope.BodySHA256(body)
}

// Verify reports whether env.Signature is a valid Ed25519 signature by pub over env.Canonical(). It
// never panics: a key that is not 32 bytes, a signature that is not 64 bytes, an envelope with a field
// outside its alphabet (BodySHA256 unset included), and a key that registration would refuse
// (non-canonical or of small order, see ParsePublicKey) all give false.
func Verify(pub ed25519.PublicKey, env Envelope) bool {
	f := env.fields()
	if !f.Valid() {
		return false
	}
	return verifyMessage(pub, []byte(f.Canonical()), env.Signature)
}

// verifyMessage is Verify's check of one signature over msg: lengths first (ed25519.Verify panics on a
// key that is not 32 bytes), then the key's strictness, then RFC 8032 pure Ed25519 (crypto/ed25519
// rejects S >= L and non-canonical R).
func verifyMessage(pub ed25519.PublicKey, msg, sig []byte) bool {
	if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize {
		return false
	}
	if checkPoint(pub) != nil {
		return false
	}
	return ed25519.Verify(pub, msg, sig)
}

// verifyWithChecked is Verify with a key that passed the point check already (identity.checkKey):
// the guard's memory checks each key once, when it loads it, not on every request.
func verifyWithChecked(pub ed25519.PublicKey, env Envelope) bool {
	f := env.fields()
	if !f.Valid() || len(pub) != ed25519.PublicKeySize || len(env.Signature) != ed25519.SignatureSize {
		return false
	}
	return ed25519.Verify(pub, []byte(f.Canonical()), env.Signature)
}
