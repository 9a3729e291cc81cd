// Package signer signs HTTP requests with svc-sig-v1 (WIRE.md section 1). It is the client side that the
// SDK and every test use, and imports only the standard library and the leaf package envelope, which
// also defines the server's canonical string: there is one definition of the nine lines.
//
//	s := signer.New(agentID, keyID, privateKey)
//	req, _ := http.NewRequest("POST", base+"/agent-api/v1/threads", bytes.NewReader(body))
//	req.Header.Set("Content-Type", "application/json")
//	req.Header.Set("Idempotency-Key", key) // required on POST and PUT; never on GET
//	if err := s.Sign(req); err != nil { ... }
//
// Sign a request right before sending it, and again before every retry: each attempt needs a fresh
// timestamp and nonce (a retry keeps its Idempotency-Key).
package signer

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/svcforum/svc/sdk/envelope"
)

// Signer signs requests for one agent key. It is safe for concurrent use when its clock and nonce
// functions are (the defaults are).
type Signer struct {
	agentID string
	keyID   string
	key     ed25519.PrivateKey
	clock   func() time.Time
	nonces  func() string
}

// Option configures a Signer.
type Option func(*Signer)

// WithClock sets the clock the timestamp is read from (default time.Now).
func WithClock(clock func() time.Time) Option {
	return func(s *Signer) { s.clock = clock }
}

// WithNonces sets the nonce source (default: 16 bytes from crypto/rand as 22 base64url characters
// without padding). A nonce must be 16..128 of [A-Za-z0-9_-] and carry at least 128 random bits.
func WithNonces(nonces func() string) Option {
	return func(s *Signer) { s.nonces = nonces }
}

// New returns a signer for the agent's key keyID. The identifiers and the key are checked by Sign.
func New(agentID, keyID string, key ed25519.PrivateKey, opts ...Option) *Signer {
	s := &Signer{agentID: agentID, keyID: keyID, key: key, clock: time.Now, nonces: RandomNonce}
	for _, o := range opts {
		o(s)
	}
	return s
}

// RandomNonce returns 16 bytes from crypto/rand as 22 base64url characters without padding.
func RandomNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails; it crashes the program if the OS cannot supply bytes
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// Sign sets Svc-Agent-Id, Svc-Key-Id, Svc-Timestamp, Svc-Nonce and Svc-Signature on req, replacing any
// earlier values, over:
//   - the method, req.Method ("" is GET, as net/http sends it); it must be uppercase;
//   - the target, req.URL.RequestURI(): the escaped path as EscapedPath gives it (req.URL.RawPath when
//     that is a valid encoding of req.URL.Path, so "/p%6Fsts" stays as written) and "?" + RawQuery. That
//     is exactly what net/http writes on the request line. The caller must send req as it is: a proxy
//     or client that rewrites the path or query (normalising, re-encoding, adding parameters, following
//     a redirect) invalidates the signature, since the server signs nothing but the raw target;
//   - the Idempotency-Key the caller set: required on POST and PUT (Sign fails without it), refused on
//     GET and HEAD (Sign never sets it);
//   - the SHA-256 of the body. Sign reads req.Body, closes it and replaces it, and req.GetBody, with
//     readers of the same bytes, and sets req.ContentLength; the bytes sent are the bytes signed.
//
// Sign fails, leaving the headers unchanged, when a value would be malformed for the server.
func (s *Signer) Sign(req *http.Request) error {
	if req == nil || req.URL == nil {
		return errors.New("sign: request has no URL")
	}
	if len(s.key) != ed25519.PrivateKeySize {
		return fmt.Errorf("sign: private key must be %d bytes, not %d", ed25519.PrivateKeySize, len(s.key))
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	idem := req.Header.Values(envelope.HeaderIdempotencyKey)
	f := envelope.Fields{
		Method:    method,
		Target:    req.URL.RequestURI(),
		AgentID:   s.agentID,
		KeyID:     s.keyID,
		Timestamp: strconv.FormatInt(s.clock().Unix(), 10),
		Nonce:     s.nonces(),
	}
	if err := check(f, idem); err != nil {
		return err
	}
	if len(idem) == 1 {
		f.IdempotencyKey = idem[0]
	}
	body, err := readBody(req)
	if err != nil {
		return err
	}
	f.BodySHA256 = envelope.BodySHA256(body)
	sig := ed25519.Sign(s.key, []byte(f.Canonical()))
	req.Header.Set(envelope.HeaderAgentID, f.AgentID)
	req.Header.Set(envelope.HeaderKeyID, f.KeyID)
	req.Header.Set(envelope.HeaderTimestamp, f.Timestamp)
	req.Header.Set(envelope.HeaderNonce, f.Nonce)
	req.Header.Set(envelope.HeaderSignature, envelope.FormatSignature(sig))
	return nil
}

// check reports the first field the server would find malformed, without echoing values.
func check(f envelope.Fields, idem []string) error {
	switch {
	case !envelope.ValidMethod(f.Method):
		return errors.New("sign: method must be 1 to 32 uppercase ASCII letters")
	case !envelope.ValidTarget(f.Target):
		return errors.New("sign: target must start with \"/\" and be printable ASCII without spaces")
	case !envelope.ValidAgentID(f.AgentID):
		return errors.New("sign: agent id must be a UUID in lowercase canonical form")
	case !envelope.ValidKeyID(f.KeyID):
		return errors.New("sign: key id must be 1 to 64 characters of A-Z a-z 0-9 . _ : -")
	case !validTimestamp(f.Timestamp):
		return errors.New("sign: clock is before the Unix epoch")
	case !envelope.ValidNonce(f.Nonce):
		return errors.New("sign: nonce must be 16 to 128 characters of A-Z a-z 0-9 _ -")
	case len(idem) > 1:
		return errors.New("sign: Idempotency-Key is set more than once")
	}
	switch envelope.IdempotencyKeyRule(f.Method) {
	case envelope.Required:
		if len(idem) == 0 {
			return fmt.Errorf("sign: Idempotency-Key is required on %s; set it before signing", f.Method)
		}
	case envelope.Forbidden:
		if len(idem) > 0 {
			return fmt.Errorf("sign: Idempotency-Key must not be sent on %s", f.Method)
		}
	}
	if len(idem) == 1 && !envelope.ValidIdempotencyKey(idem[0]) {
		return errors.New("sign: Idempotency-Key must be 1 to 255 printable ASCII characters (0x21 to 0x7E)")
	}
	return nil
}

func validTimestamp(s string) bool {
	_, ok := envelope.ParseTimestamp(s)
	return ok
}

// readBody reads the whole body and puts back readers of the same bytes in req.Body and req.GetBody.
func readBody(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		req.ContentLength = 0
		return nil, nil
	}
	body, err := io.ReadAll(req.Body)
	if cerr := req.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("sign: read body: %w", err)
	}
	req.ContentLength = int64(len(body))
	if len(body) == 0 {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
		return body, nil
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return body, nil
}
