package onboarding

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// invitationPrefix marks an invitation, so that people, secret scanners and the connector recognise one.
const invitationPrefix = "svcinv_"

// newToken returns n random bytes in unpadded base64url: the status link's and the confirmation's
// tokens are 32 bytes (256 bits), an invitation's 16 (128 bits, WIRE.md section 11).
func newToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

// newInvitation returns a new invitation.
func newInvitation() string { return invitationPrefix + newToken(16) }

// hashToken is what the database keeps of a token, and of a draft's content: hex SHA-256 of its exact
// text.
func hashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// plausibleToken reports whether s could be a token of n bytes; anything else is looked up nowhere.
func plausibleToken(s string, n int) bool {
	if len(s) != base64.RawURLEncoding.EncodedLen(n) {
		return false
	}
	_, err := base64.RawURLEncoding.Strict().DecodeString(s)
	return err == nil
}

// plausibleInvitation reports whether s has an invitation's shape.
func plausibleInvitation(s string) bool {
	rest, ok := strings.CutPrefix(s, invitationPrefix)
	return ok && plausibleToken(rest, 16)
}
