// Package envelope is the shared leaf of svc-sig-v1 (WIRE.md section 1): the header names, the alphabet
// of each header value and the nine-line canonical string. It imports only the standard library, so that
// the client-side signer (package signer) and the server-side verifier (package sigv1) build the same
// bytes from one definition without the signer pulling in the verifier's dependencies.
package envelope

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// Scheme is the signature scheme: the first line of the canonical string and the first word of the
// Svc-Signature header.
const Scheme = "svc-sig-v1"

// The header names of WIRE.md section 1, in the canonical MIME form that net/http uses as map keys.
const (
	HeaderAgentID        = "Svc-Agent-Id"
	HeaderKeyID          = "Svc-Key-Id"
	HeaderTimestamp      = "Svc-Timestamp"
	HeaderNonce          = "Svc-Nonce"
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderSignature      = "Svc-Signature"
)

// Lines is the number of lines of the canonical string.
const Lines = 9

// Fields are the eight values that follow the scheme line of the canonical string, in their order.
type Fields struct {
	Method         string // the request method as sent, uppercase
	Target         string // the request-target as sent: path, and "?" + raw query if any
	AgentID        string // Svc-Agent-Id
	KeyID          string // Svc-Key-Id
	Timestamp      string // Svc-Timestamp
	Nonce          string // Svc-Nonce
	IdempotencyKey string // Idempotency-Key, or "" when there is none
	BodySHA256     string // lowercase hex SHA-256 of the raw body bytes
}

// Canonical returns the canonical string: exactly nine lines joined by a single "\n", no trailing
// newline. It copies the fields verbatim; callers validate them first (Valid), because a field that
// contains a newline would shift the lines.
func (f Fields) Canonical() string {
	var b strings.Builder
	b.Grow(len(Scheme) + len(f.Method) + len(f.Target) + len(f.AgentID) + len(f.KeyID) + len(f.Timestamp) +
		len(f.Nonce) + len(f.IdempotencyKey) + len(f.BodySHA256) + Lines - 1)
	for i, s := range [Lines]string{Scheme, f.Method, f.Target, f.AgentID, f.KeyID, f.Timestamp, f.Nonce,
		f.IdempotencyKey, f.BodySHA256} {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	return b.String()
}

// Valid reports whether every field is within its alphabet, including the Idempotency-Key rule of the
// method, so that Canonical is unambiguous.
func (f Fields) Valid() bool {
	if !ValidMethod(f.Method) || !ValidTarget(f.Target) || !ValidAgentID(f.AgentID) || !ValidKeyID(f.KeyID) ||
		!ValidNonce(f.Nonce) || !ValidBodySHA256(f.BodySHA256) {
		return false
	}
	if _, ok := ParseTimestamp(f.Timestamp); !ok {
		return false
	}
	switch IdempotencyKeyRule(f.Method) {
	case Required:
		return ValidIdempotencyKey(f.IdempotencyKey)
	case Forbidden:
		return f.IdempotencyKey == ""
	default:
		return f.IdempotencyKey == "" || ValidIdempotencyKey(f.IdempotencyKey)
	}
}

// BodySHA256 returns the lowercase hex SHA-256 of the exact body bytes (of the empty string for no body).
func BodySHA256(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// FormatSignature returns the Svc-Signature header value for a raw signature: the scheme, one space and
// the signature in standard base64 with padding.
func FormatSignature(sig []byte) string {
	return Scheme + " " + base64.StdEncoding.EncodeToString(sig)
}

// Presence says whether a method carries an Idempotency-Key.
type Presence int

const (
	// Optional: the header may be given (and is then signed and validated). Methods the API does not use.
	Optional Presence = iota
	// Required on POST and PUT.
	Required
	// Forbidden on GET and HEAD.
	Forbidden
)

// IdempotencyKeyRule returns whether method requires, forbids or allows an Idempotency-Key. WIRE.md
// names POST and PUT (required) and GET (absent); HEAD is a GET without a body and follows GET. The
// agent API has no other method; any other is allowed to carry one.
func IdempotencyKeyRule(method string) Presence {
	switch method {
	case "POST", "PUT":
		return Required
	case "GET", "HEAD":
		return Forbidden
	default:
		return Optional
	}
}

// ValidMethod: 1..32 uppercase ASCII letters (every method the API routes is one).
func ValidMethod(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// ValidTarget: an origin-form request-target ("/" then path, and "?" + query if any) of visible ASCII
// (0x21..0x7E). Nothing is normalised or decoded; a request line cannot carry anything else.
func ValidTarget(s string) bool {
	return len(s) > 0 && s[0] == '/' && Visible(s)
}

// ValidAgentID: a UUID in lowercase canonical form (8-4-4-4-12 lowercase hex digits). The version is
// not checked here: an unknown agent is 401 unknown_key, not 400.
func ValidAgentID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !lowerHex(c) {
				return false
			}
		}
	}
	return true
}

// ValidKeyID: 1..64 of [A-Za-z0-9._:-].
func ValidKeyID(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return false
		}
	}
	return true
}

// ParseTimestamp parses Svc-Timestamp: Unix seconds in decimal ASCII, no sign, no leading zeros ("0"
// itself is well-formed), and within int64. A millisecond epoch is well-formed; it is only stale.
func ParseTimestamp(s string) (int64, bool) {
	if len(s) < 1 || len(s) > 19 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}

// ValidNonce: 16..128 of [A-Za-z0-9_-].
func ValidNonce(s string) bool {
	if len(s) < 16 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ValidIdempotencyKey: 1..255 printable ASCII characters (0x21..0x7E).
func ValidIdempotencyKey(s string) bool {
	return len(s) >= 1 && len(s) <= 255 && Visible(s)
}

// ValidBodySHA256: 64 lowercase hex digits.
func ValidBodySHA256(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !lowerHex(s[i]) {
			return false
		}
	}
	return true
}

// Visible reports whether every byte is printable ASCII other than space (0x21..0x7E).
func Visible(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func lowerHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

func alnum(c byte) bool { return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }
