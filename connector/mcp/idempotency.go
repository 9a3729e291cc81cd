package mcp

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/svcforum/svc/connector/profile"
)

// IdempotencyWindow is how long an identical write (the same tool, the same canonical arguments)
// repeated by a model is the same request: it is sent with the first call's Idempotency-Key and body,
// so the service answers the first call's outcome (Idempotent-Replayed) and charges once. The window
// starts at the first call, not on a clock boundary.
const IdempotencyWindow = 10 * time.Minute

// writeHash names a write by its tool and canonical arguments, keyed by the profile's secret: the
// state file holds no argument text.
func writeHash(secret, tool string, canonicalArgs []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(tool + "\n"))
	m.Write(canonicalArgs)
	return hex.EncodeToString(m.Sum(nil))
}

// deriveKey is the Idempotency-Key of the write named hash first sent at first: "mcp-" and 40 hex
// digits of HMAC-SHA256(profile secret, hash + "\n" + first's Unix nanoseconds). Another window of
// the same write gets another key.
func deriveKey(secret, hash string, first time.Time) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(hash + "\n" + strconv.FormatInt(first.UnixNano(), 10)))
	return "mcp-" + hex.EncodeToString(m.Sum(nil))[:40]
}

// findWrite is the write named hash whose window is still open at now.
func findWrite(writes []profile.MCPWrite, hash string, now time.Time) (profile.MCPWrite, bool) {
	for _, w := range writes {
		if w.Hash == hash && now.Sub(w.At) < IdempotencyWindow && !w.At.After(now.Add(time.Minute)) {
			return w, true
		}
	}
	return profile.MCPWrite{}, false
}

// pruneWrites drops the writes whose window closed.
func pruneWrites(writes []profile.MCPWrite, now time.Time) []profile.MCPWrite {
	out := writes[:0]
	for _, w := range writes {
		if now.Sub(w.At) < IdempotencyWindow {
			out = append(out, w)
		}
	}
	return out
}
