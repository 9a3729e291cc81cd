// Package cursor seals the position of a paged list into the opaque cursor a response hands out
// (WIRE.md section 5), so that a cursor is one the service issued for that list and nothing else: its
// bytes are authenticated with HMAC-SHA-256 under a server key, bound to the list they page, and good
// for MaxAge. Keys rotate: the first key seals, every key opens, so a key kept second for MaxAge after
// a rotation keeps the cursors it sealed working until they expire.
package cursor

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// MaxLength is the longest cursor a request may carry (WIRE.md section 5).
const MaxLength = 2048

// MaxAge is how long a cursor stays good after it was issued, at least.
const MaxAge = 24 * time.Hour

// IssueStep is what a cursor's issue time is rounded down to. The same position of the same list sealed
// twice within it is the same cursor, so a page built again after an unrelated change keeps its bytes
// and its ETag; a cursor is good for MaxAge after the end of its step, so between MaxAge and MaxAge plus
// IssueStep in all.
const IssueStep = time.Hour

// MinKeyBytes is the shortest key accepted: a key is as strong as its length.
const MinKeyBytes = 32

// tagBytes is the length of the truncated MAC a cursor carries (128 bits).
const tagBytes = 16

// ErrInvalid is returned for a cursor the service did not issue for the list, edited, expired, or
// sealed under a key it no longer holds.
var ErrInvalid = errors.New("not a cursor this service issued for this list")

// Codec seals and opens cursors under the service's keys.
type Codec struct {
	keys [][]byte
	now  func() time.Time
}

// New returns a codec sealing with keys[0] and opening with any of keys, each at least MinKeyBytes.
// now is the clock cursors are dated and checked by (time.Now when nil).
func New(keys [][]byte, now func() time.Time) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("no cursor key")
	}
	for i, k := range keys {
		if len(k) < MinKeyBytes {
			return nil, fmt.Errorf("cursor key %d is %d bytes; at least %d are needed", i+1, len(k), MinKeyBytes)
		}
	}
	if now == nil {
		now = time.Now
	}
	return &Codec{keys: keys, now: now}, nil
}

// ParseKeys reads a comma-separated list of keys, each in standard or URL-safe base64, padded or not.
func ParseKeys(s string) ([][]byte, error) {
	var keys [][]byte
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		var key []byte
		var err error
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if key, err = enc.DecodeString(part); err == nil {
				break
			}
		}
		if err != nil || part == "" {
			return nil, fmt.Errorf("cursor key %d is not base64", i+1)
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// envelope is what a cursor's first part encodes: when it was issued and the list's own position.
type envelope struct {
	Issued int64           `json:"t"`
	Value  json.RawMessage `json:"v"`
}

// Seal returns the cursor of position v (any JSON-encodable value) in list: the base64url of its
// JSON, a dot, and the base64url of its MAC.
func (c *Codec) Seal(list string, v any) (string, error) {
	value, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	payload, err := json.Marshal(envelope{Issued: c.now().Truncate(IssueStep).Unix(), Value: value})
	if err != nil {
		return "", fmt.Errorf("encode cursor: %w", err)
	}
	s := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(tag(c.keys[0], list, payload))
	if len(s) > MaxLength {
		return "", fmt.Errorf("encode cursor: %d characters, more than %d", len(s), MaxLength)
	}
	return s, nil
}

// Open reads the position of list that s carries into v. It answers ErrInvalid unless s is exactly a
// cursor Seal made for list under one of the keys, within MaxAge after the end of its IssueStep.
func (c *Codec) Open(s, list string, v any) error {
	if len(s) < 1 || len(s) > MaxLength {
		return ErrInvalid
	}
	p, t, ok := strings.Cut(s, ".")
	if !ok {
		return ErrInvalid
	}
	payload, err := base64.RawURLEncoding.Strict().DecodeString(p)
	if err != nil {
		return ErrInvalid
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(t)
	if err != nil || len(got) != tagBytes {
		return ErrInvalid
	}
	valid := false
	for _, k := range c.keys {
		if hmac.Equal(got, tag(k, list, payload)) {
			valid = true
			break
		}
	}
	if !valid {
		return ErrInvalid
	}
	var env envelope
	if err := json.Unmarshal(payload, &env); err != nil {
		return ErrInvalid
	}
	if age := c.now().Sub(time.Unix(env.Issued, 0)); age > MaxAge+IssueStep || age < -time.Minute {
		return ErrInvalid
	}
	dec := json.NewDecoder(bytes.NewReader(env.Value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return ErrInvalid
	}
	return nil
}

// tag is the MAC of payload for list under key: the list is part of what is authenticated, so a
// cursor of one list never opens another.
func tag(key []byte, list string, payload []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(list))
	m.Write([]byte{0})
	m.Write(payload)
	return m.Sum(nil)[:tagBytes]
}
