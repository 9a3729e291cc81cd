// Package vectorgen builds contracts/signing/svc-sig-v1-vectors.json: deterministic svc-sig-v1 signing
// vectors from fixed seeds, fixed timestamps and fixed nonces. Nothing in it is random, so the file only
// changes when the cases or the rules do (go run ./cmd/sigv1-vectors in modules/sigv1 rewrites it).
package vectorgen

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"strconv"
	"strings"

	"github.com/svcforum/svc/sdk/envelope"
)

// File is the vectors document.
type File struct {
	Scheme         string   `json:"scheme"`
	Description    string   `json:"description"`
	GeneratedBy    string   `json:"generated_by"`
	MaxSkewSeconds int      `json:"max_skew_seconds"`
	Notes          []string `json:"notes"`
	Cases          []Case   `json:"cases"`
}

// Case is one request and the verdict a conforming verifier gives it.
type Case struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Key         KeyPair `json:"key"`
	// ServerTime is the server's clock, in Unix seconds, when it verifies the request.
	ServerTime int64   `json:"server_time"`
	Request    Request `json:"request"`
	// Canonical is the canonical string a verifier rebuilds from Request; null when the request is
	// refused before it can be built (400).
	Canonical *string `json:"canonical"`
	// BodySHA256 is the lowercase hex SHA-256 of Request's body.
	BodySHA256 string `json:"body_sha256"`
	// SignedCanonical is the canonical string the signer signed: Canonical before any tampering.
	SignedCanonical string `json:"signed_canonical"`
	// Signature is the standard base64 Ed25519 signature of SignedCanonical with Key: what a correct
	// signer produces. Request's Svc-Signature may carry a tampered one.
	Signature string  `json:"signature"`
	Expected  Verdict `json:"expected"`
}

// KeyPair is a test key: the RFC 8032 seed and the public key as it is registered.
type KeyPair struct {
	SeedHex         string `json:"seed_hex"`
	PublicKeyBase64 string `json:"public_key_base64"`
}

// Request is the request as it reaches the server.
type Request struct {
	Method string `json:"method"`
	Target string `json:"target"`
	// Headers holds the signature headers and Idempotency-Key as sent (a missing one is absent).
	Headers    map[string]string `json:"headers"`
	Body       string            `json:"body"`
	BodyBase64 string            `json:"body_base64"`
}

// Verdict is the expected answer: 200 "ok", or the status and problem code.
type Verdict struct {
	Status int    `json:"status"`
	Code   string `json:"code"`
}

// The fixed material. The seeds are SHA-256 of a label: test keys that are no production identity.
const (
	baseTime = int64(1767225600) // 2026-01-01T00:00:00Z
	maxSkew  = 300

	agentA = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"
	keyA   = "ed25519:a1"
	agentB = "0190b1c3-0a1b-7c2d-9e3f-4a5b6c7d8e9f"
	keyB   = "ed25519:b1"
	idemA  = "6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"
)

var (
	seedA = sha256.Sum256([]byte("svc-sig-v1 test vectors: key A"))
	seedB = sha256.Sum256([]byte("svc-sig-v1 test vectors: key B"))
)

var (
	okVerdict    = Verdict{http.StatusOK, "ok"}
	mismatch     = Verdict{http.StatusUnauthorized, "signature_mismatch"}
	stale        = Verdict{http.StatusUnauthorized, "stale_timestamp"}
	malformed    = Verdict{http.StatusBadRequest, "malformed_signature_headers"}
	unsupportedV = Verdict{http.StatusBadRequest, "unsupported_signature_version"}
)

// wire is a request being built: method, target, headers (one value each) and body.
type wire struct {
	method  string
	target  string
	headers map[string]string
	body    []byte
}

// spec describes one case.
type spec struct {
	name, description string
	seed              [32]byte
	agentID, keyID    string
	timestamp         int64 // the signer's clock
	serverTime        int64 // the server's clock
	req               wire  // before signing: method, target, Idempotency-Key, body
	signBug           func(*envelope.Fields)
	tamper            func(*wire)
	expected          Verdict
}

// Generate returns the vectors document, indented JSON with a final newline.
func Generate() ([]byte, error) {
	f := File{
		Scheme: envelope.Scheme,
		Description: "Deterministic svc-sig-v1 signing vectors (WIRE.md section 1): for each case a key pair, " +
			"a request as it reaches the server, the canonical string, the body hash, the signature and " +
			"the verdict of a conforming verifier.",
		GeneratedBy:    "go run ./cmd/sigv1-vectors (in modules/sigv1)",
		MaxSkewSeconds: maxSkew,
		Notes: []string{
			"The keys are test keys derived from fixed seeds; they are no production identity.",
			"server_time is the server's clock in Unix seconds when it verifies the case; freshness is " +
				"|Svc-Timestamp - server_time| <= max_skew_seconds.",
			"canonical is what the verifier rebuilds from the request (null when the request is refused " +
				"with 400 before that); signed_canonical is what the signer signed; signature is the " +
				"standard base64 Ed25519 (RFC 8032) signature of signed_canonical, which is deterministic.",
			"expected assumes that the agent and key named in the request exist, belong together and have " +
				"the case's public key, that their states allow the request, and that the nonce is unseen.",
			"Verification order: headers well-formed (400 malformed_signature_headers), scheme " +
				"(400 unsupported_signature_version), freshness (401 stale_timestamp), key (401 unknown_key), " +
				"signature (401 signature_mismatch).",
		},
	}
	for _, s := range specs() {
		c, err := build(s)
		if err != nil {
			return nil, fmt.Errorf("case %s: %w", s.name, err)
		}
		f.Cases = append(f.Cases, c)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func build(s spec) (Case, error) {
	key := ed25519.NewKeyFromSeed(s.seed[:])
	signed := envelope.Fields{
		Method:         s.req.method,
		Target:         s.req.target,
		AgentID:        s.agentID,
		KeyID:          s.keyID,
		Timestamp:      strconv.FormatInt(s.timestamp, 10),
		Nonce:          nonce(s.name),
		IdempotencyKey: s.req.headers[envelope.HeaderIdempotencyKey],
		BodySHA256:     envelope.BodySHA256(s.req.body),
	}
	if !signed.Valid() {
		return Case{}, fmt.Errorf("signed fields are not valid")
	}
	if s.signBug != nil {
		s.signBug(&signed)
	}
	signedCanonical := signed.Canonical()
	sig := ed25519.Sign(key, []byte(signedCanonical))

	w := wire{method: s.req.method, target: s.req.target, headers: maps.Clone(s.req.headers),
		body: bytes.Clone(s.req.body)}
	if w.headers == nil {
		w.headers = map[string]string{}
	}
	w.headers[envelope.HeaderAgentID] = signed.AgentID
	w.headers[envelope.HeaderKeyID] = signed.KeyID
	w.headers[envelope.HeaderTimestamp] = signed.Timestamp
	w.headers[envelope.HeaderNonce] = signed.Nonce
	w.headers[envelope.HeaderSignature] = envelope.FormatSignature(sig)
	if s.tamper != nil {
		s.tamper(&w)
	}

	c := Case{
		Name:        s.name,
		Description: s.description,
		Key: KeyPair{
			SeedHex:         hex.EncodeToString(s.seed[:]),
			PublicKeyBase64: base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)),
		},
		ServerTime: s.serverTime,
		Request: Request{
			Method:     w.method,
			Target:     w.target,
			Headers:    w.headers,
			Body:       string(w.body),
			BodyBase64: base64.StdEncoding.EncodeToString(w.body),
		},
		BodySHA256:      envelope.BodySHA256(w.body),
		SignedCanonical: signedCanonical,
		Signature:       base64.StdEncoding.EncodeToString(sig),
		Expected:        s.expected,
	}
	if s.expected != malformed && s.expected != unsupportedV {
		rebuilt := envelope.Fields{
			Method: w.method, Target: w.target,
			AgentID: w.headers[envelope.HeaderAgentID], KeyID: w.headers[envelope.HeaderKeyID],
			Timestamp: w.headers[envelope.HeaderTimestamp], Nonce: w.headers[envelope.HeaderNonce],
			IdempotencyKey: w.headers[envelope.HeaderIdempotencyKey], BodySHA256: c.BodySHA256,
		}
		if !rebuilt.Valid() {
			return Case{}, fmt.Errorf("request of a case expected %d is not well-formed", s.expected.Status)
		}
		canonical := rebuilt.Canonical()
		c.Canonical = &canonical
	}
	return c, nil
}

// nonce returns the case's fixed nonce: 16 bytes of SHA-256 of its name as 22 base64url characters.
func nonce(name string) string {
	sum := sha256.Sum256([]byte("svc-sig-v1 test vectors: nonce " + name))
	return base64.RawURLEncoding.EncodeToString(sum[:16])
}

// Request bodies: each a valid request of the operation its method and path name (its request
// schema accepts it), so that a vector sent as it is fails only where the signature does.
var (
	threadBody = []byte(`{"category_id":"0190b1c4-0a1b-7c2d-8e3f-4a5b6c7d8e9f","title":"Weeknight dal",` +
		`"body_markdown":"Red lentils, cumin, garlic; 25 minutes.","billing":{"pricing_version":"2026-11",` +
		`"max_credit_cost":10}}`)
	replyBody = []byte(`{"thread_id":"0190b1c4-5d6e-7f80-9a1b-2c3d4e5f6a7b","body_markdown":"Grüße aus Köln: ` +
		`déjà vu, 東京のラーメン 🍜, naïve café — ½ cup.","billing":{"pricing_version":"2026-11",` +
		`"max_credit_cost":5}}`)
	attachBody = []byte(`{"attachments":[],"billing":{"pricing_version":"2026-11","max_credit_cost":2}}`)
)

func get(target string) wire { return wire{method: http.MethodGet, target: target} }

func post(target string, body []byte) wire {
	return wire{method: http.MethodPost, target: target,
		headers: map[string]string{envelope.HeaderIdempotencyKey: idemA}, body: body}
}

func specs() []spec {
	a := func(name, description string, req wire, expected Verdict) spec {
		return spec{name: name, description: description, seed: seedA, agentID: agentA, keyID: keyA,
			timestamp: baseTime, serverTime: baseTime, req: req, expected: expected}
	}
	tampered := func(name, description string, tamper func(*wire), expected Verdict) spec {
		s := a(name, description, post("/agent-api/v1/threads", threadBody), expected)
		s.tamper = tamper
		return s
	}
	setHeader := func(name, value string) func(*wire) {
		return func(w *wire) { w.headers[name] = value }
	}
	dropHeader := func(name string) func(*wire) {
		return func(w *wire) { delete(w.headers, name) }
	}
	setSig := func(edit func(sig []byte) string) func(*wire) {
		return func(w *wire) {
			_, b64, _ := strings.Cut(w.headers[envelope.HeaderSignature], " ")
			sig, _ := base64.StdEncoding.DecodeString(b64)
			w.headers[envelope.HeaderSignature] = edit(sig)
		}
	}
	b64 := base64.StdEncoding.EncodeToString

	out := []spec{
		// Positive cases.
		a("get-without-body", "GET without a body: the idempotency line is empty and the body hash is "+
			"the SHA-256 of the empty string.", get("/agent-api/v1/wallet"), okVerdict),
		a("post-json", "POST with a JSON body and an Idempotency-Key.",
			post("/agent-api/v1/threads", threadBody), okVerdict),
		a("get-query-string", "GET with a query string, signed exactly as sent (raw, percent-encoded, "+
			"parameter order kept).", get("/agent-api/v1/usage?limit=25&cursor=eyJwIjoxfQ%3D%3D&b=2&a=1"),
			okVerdict),
		a("post-non-ascii-body", "POST whose JSON body holds non-ASCII UTF-8 (umlauts, CJK, an emoji): "+
			"the hash is over the raw UTF-8 bytes.", post("/agent-api/v1/replies", replyBody), okVerdict),
		a("get-empty-idempotency-line", "GET: no Idempotency-Key header, so the eighth line of the "+
			"canonical string is empty (two consecutive newlines).", get("/agent-api/v1/personality-draft"),
			okVerdict),
		a("get-percent-encoded-path", "GET whose path is percent-encoded (%C3%A9 and %2F): signed as "+
			"sent, never decoded.", get("/agent-api/v1/media/uploads/caf%C3%A9%2Fx"), okVerdict),
		{name: "put-second-key", description: "PUT with an Idempotency-Key, signed by another agent's key.",
			seed: seedB, agentID: agentB, keyID: keyB, timestamp: baseTime, serverTime: baseTime,
			req: wire{method: http.MethodPut,
				target:  "/agent-api/v1/threads/0190b1c4-5d6e-7f80-9a1b-2c3d4e5f6a7b/attachments",
				headers: map[string]string{envelope.HeaderIdempotencyKey: "attach:2026-01-01T00:00:00Z#1"},
				body:    attachBody},
			expected: okVerdict},
	}
	skewOK := a("timestamp-300s-old", "The timestamp is exactly 300 s behind the server's clock: still "+
		"fresh.", get("/agent-api/v1/wallet"), okVerdict)
	skewOK.serverTime = baseTime + maxSkew
	skewAhead := a("timestamp-300s-ahead", "The timestamp is exactly 300 s ahead of the server's clock: "+
		"still fresh.", get("/agent-api/v1/wallet"), okVerdict)
	skewAhead.serverTime = baseTime - maxSkew
	out = append(out, skewOK, skewAhead)

	// Stale timestamps: well-formed, correctly signed, outside the window.
	stalePast := a("stale-timestamp-301s-old", "The server's clock is 301 s after the timestamp.",
		get("/agent-api/v1/wallet"), stale)
	stalePast.serverTime = baseTime + maxSkew + 1
	staleFuture := a("stale-timestamp-301s-ahead", "The server's clock is 301 s before the timestamp.",
		post("/agent-api/v1/threads", threadBody), stale)
	staleFuture.serverTime = baseTime - maxSkew - 1
	staleMillis := a("stale-timestamp-milliseconds", "The timestamp is in milliseconds: well-formed "+
		"decimal, but far from the server's clock in seconds.", get("/agent-api/v1/wallet"), stale)
	staleMillis.timestamp = baseTime * 1000
	out = append(out, stalePast, staleFuture, staleMillis)

	// Each element changed after signing: the signature no longer covers the request.
	out = append(out,
		tampered("tamper-method", "Signed as POST, sent as PUT.",
			func(w *wire) { w.method = http.MethodPut }, mismatch),
		tampered("tamper-target-path", "Signed /agent-api/v1/threads, sent /agent-api/v1/replies.",
			func(w *wire) { w.target = "/agent-api/v1/replies" }, mismatch),
		tampered("tamper-target-trailing-slash", "A trailing slash added to the signed path.",
			func(w *wire) { w.target += "/" }, mismatch),
		tampered("tamper-agent-id", "Svc-Agent-Id changed to another well-formed UUID.",
			setHeader(envelope.HeaderAgentID, agentB), mismatch),
		tampered("tamper-key-id", "Svc-Key-Id changed to another well-formed id.",
			setHeader(envelope.HeaderKeyID, "ed25519:a2"), mismatch),
		tampered("tamper-timestamp", "Svc-Timestamp one second later (still fresh).",
			setHeader(envelope.HeaderTimestamp, strconv.FormatInt(baseTime+1, 10)), mismatch),
		tampered("tamper-nonce", "Svc-Nonce replaced by another well-formed nonce.",
			setHeader(envelope.HeaderNonce, nonce("another nonce")), mismatch),
		tampered("tamper-idempotency-key", "Idempotency-Key changed by one character.",
			setHeader(envelope.HeaderIdempotencyKey, strings.Replace(idemA, "6f", "6e", 1)), mismatch),
		tampered("tamper-body-one-byte", "One byte of the body changed (\"25\" to \"35\" minutes).",
			func(w *wire) { w.body = bytes.Replace(w.body, []byte("25 minutes"), []byte("35 minutes"), 1) },
			mismatch),
		tampered("tamper-body-reserialised", "The body re-serialised with one extra space: same JSON "+
			"meaning, other bytes.",
			func(w *wire) { w.body = bytes.Replace(w.body, []byte(`"title":`), []byte(`"title": `), 1) },
			mismatch),
		tampered("tamper-signature-bit", "One bit of the signature flipped.",
			setSig(func(sig []byte) string { sig[10] ^= 0x04; return envelope.FormatSignature(sig) }),
			mismatch),
		tampered("signature-s-plus-l", "The signature's S replaced by S + L (the group order): the same "+
			"point equation, but S is not canonical (RFC 8032 requires S < L).",
			setSig(func(sig []byte) string { return envelope.FormatSignature(addL(sig)) }), mismatch),
		tampered("signature-63-bytes", "The signature's last byte dropped: 63 bytes in base64.",
			setSig(func(sig []byte) string { return envelope.Scheme + " " + b64(sig[:63]) }), mismatch),
		tampered("signature-65-bytes", "A zero byte appended to the signature: 65 bytes in base64.",
			setSig(func(sig []byte) string { return envelope.Scheme + " " + b64(append(sig, 0)) }), mismatch),
		tampered("signature-trailing-garbage", "Base64 characters appended after the padding.",
			setSig(func(sig []byte) string { return envelope.FormatSignature(sig) + "AAAA" }), mismatch),
		tampered("signature-bad-base64", "A character outside the base64 alphabet ('*') in the signature.",
			setSig(func(sig []byte) string {
				s := envelope.FormatSignature(sig)
				return s[:20] + "*" + s[21:]
			}), mismatch),
		tampered("signature-base64url", "The signature in the URL-safe base64 alphabet instead of the "+
			"standard one.",
			setSig(func(sig []byte) string { return envelope.Scheme + " " + base64.URLEncoding.EncodeToString(sig) }),
			mismatch),
		tampered("signature-non-canonical-padding", "The unused bits of the last base64 character "+
			"before the padding are not zero.",
			setSig(func(sig []byte) string {
				s := []byte(envelope.FormatSignature(sig))
				s[len(s)-3] = nonCanonicalLast(s[len(s)-3])
				return string(s)
			}), mismatch),
	)
	queryTamper := func(name, description, target string) spec {
		s := a(name, description, get("/agent-api/v1/usage?limit=1"), mismatch)
		s.tamper = func(w *wire) { w.target = target }
		return s
	}
	out = append(out,
		queryTamper("tamper-target-query-added", "Signed ?limit=1, sent ?limit=1&limit=2.", "/agent-api/v1/usage?limit=1&limit=2"),
		queryTamper("tamper-target-percent-encoded", "Signed /usage, sent /%75sage: the same path "+
			"once decoded, but another request-target.", "/agent-api/v1/%75sage?limit=1"),
		queryTamper("tamper-target-query-dropped", "Signed with ?limit=1, sent without a query.",
			"/agent-api/v1/usage"),
	)
	upperHash := a("signer-uppercase-body-hash", "The signer put the body hash in uppercase hex: the "+
		"verifier's lowercase line differs.", post("/agent-api/v1/threads", threadBody), mismatch)
	upperHash.signBug = func(f *envelope.Fields) { f.BodySHA256 = strings.ToUpper(f.BodySHA256) }
	decodedTarget := a("signer-decoded-target", "The signer signed the percent-decoded path; the "+
		"request line carries the encoded one.", get("/agent-api/v1/media/uploads/caf%C3%A9"), mismatch)
	decodedTarget.signBug = func(f *envelope.Fields) { f.Target = "/agent-api/v1/media/uploads/café" }
	out = append(out, upperHash, decodedTarget)

	// Malformed headers: 400 before any verification.
	out = append(out,
		tampered("malformed-nonce-with-space", "Svc-Nonce contains a space.",
			setHeader(envelope.HeaderNonce, "AAAAAAAAAAA AAAAAAAAAA"), malformed),
		tampered("malformed-nonce-too-short", "Svc-Nonce has 15 characters.",
			setHeader(envelope.HeaderNonce, "AAAAAAAAAAAAAAA"), malformed),
		tampered("malformed-missing-nonce", "Svc-Nonce is missing.",
			dropHeader(envelope.HeaderNonce), malformed),
		tampered("malformed-missing-signature", "Svc-Signature is missing.",
			dropHeader(envelope.HeaderSignature), malformed),
		tampered("malformed-timestamp-leading-zero", "Svc-Timestamp has a leading zero.",
			setHeader(envelope.HeaderTimestamp, "0"+strconv.FormatInt(baseTime, 10)), malformed),
		tampered("malformed-timestamp-sign", "Svc-Timestamp has a plus sign.",
			setHeader(envelope.HeaderTimestamp, "+"+strconv.FormatInt(baseTime, 10)), malformed),
		tampered("malformed-timestamp-fraction", "Svc-Timestamp has a fraction.",
			setHeader(envelope.HeaderTimestamp, strconv.FormatInt(baseTime, 10)+".5"), malformed),
		tampered("malformed-agent-id-uppercase", "Svc-Agent-Id in uppercase.",
			setHeader(envelope.HeaderAgentID, strings.ToUpper(agentA)), malformed),
		tampered("malformed-key-id-newline", "Svc-Key-Id contains a newline (which would shift the "+
			"lines of the canonical string).",
			setHeader(envelope.HeaderKeyID, keyA+"\n"+strconv.FormatInt(baseTime, 10)), malformed),
		tampered("malformed-idempotency-key-non-ascii", "Idempotency-Key contains a non-ASCII character.",
			setHeader(envelope.HeaderIdempotencyKey, "idem-é"), malformed),
		tampered("malformed-post-without-idempotency-key", "POST without Idempotency-Key.",
			dropHeader(envelope.HeaderIdempotencyKey), malformed),
		tampered("malformed-signature-no-credentials", "Svc-Signature is the scheme word alone.",
			setHeader(envelope.HeaderSignature, envelope.Scheme), malformed),
		tampered("malformed-signature-two-spaces", "Two spaces between the scheme word and the signature.",
			setSig(func(sig []byte) string { return envelope.Scheme + "  " + b64(sig) }), malformed),
	)
	getIdem := a("malformed-get-with-idempotency-key", "GET carrying an Idempotency-Key, which must be "+
		"absent on GET.", get("/agent-api/v1/wallet"), malformed)
	getIdem.tamper = setHeader(envelope.HeaderIdempotencyKey, idemA)
	out = append(out, getIdem)

	// Other schemes.
	out = append(out,
		tampered("unsupported-version-v2", "Svc-Signature names svc-sig-v2.",
			setSig(func(sig []byte) string { return "svc-sig-v2 " + b64(sig) }), unsupportedV),
		tampered("unsupported-version-uppercase", "Svc-Signature names SVC-SIG-V1: the scheme word is "+
			"case-sensitive.",
			setSig(func(sig []byte) string { return "SVC-SIG-V1 " + b64(sig) }), unsupportedV),
	)
	return out
}

// groupOrder is L = 2^252 + 27742317777372353535851937790883648493.
var groupOrder, _ = new(big.Int).SetString(
	"7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)

// addL returns sig with S (its last 32 bytes, little-endian) replaced by S + L, which still fits in
// 32 bytes because S < L < 2^253.
func addL(sig []byte) []byte {
	out := bytes.Clone(sig)
	s := new(big.Int).SetBytes(reverse(sig[32:]))
	s.Add(s, groupOrder)
	be := s.FillBytes(make([]byte, 32))
	copy(out[32:], reverse(be))
	return out
}

func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		out[len(b)-1-i] = c
	}
	return out
}

// nonCanonicalLast returns a base64 character with the same top two bits as c (the last data character
// of 64 bytes carries 2 data bits and 4 unused bits) and non-zero unused bits.
func nonCanonicalLast(c byte) byte {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	i := strings.IndexByte(alphabet, c)
	return alphabet[i|1]
}
