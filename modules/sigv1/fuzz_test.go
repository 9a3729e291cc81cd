package sigv1_test

import (
	"crypto/ed25519"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/envelope"
)

var fuzzHeaders = [...]string{sigv1.HeaderAgentID, sigv1.HeaderKeyID, sigv1.HeaderTimestamp, sigv1.HeaderNonce,
	sigv1.HeaderIdempotencyKey, sigv1.HeaderSignature}

// checkCanonical asserts that an accepted envelope's canonical string is exactly nine lines, with no CR
// and no LF inside a line, each line being its field.
func checkCanonical(t *testing.T, env sigv1.Envelope) string {
	t.Helper()
	c := env.Canonical()
	lines := strings.Split(c, "\n")
	want := []string{sigv1.Scheme, env.Method, env.Target, env.AgentID, env.KeyID, env.Timestamp, env.Nonce,
		env.IdempotencyKey, env.BodySHA256}
	if len(lines) != envelope.Lines || strings.ContainsRune(c, '\r') {
		t.Fatalf("canonical string of %d lines or with CR: %q", len(lines), c)
	}
	for i := range lines {
		if lines[i] != want[i] {
			t.Fatalf("line %d is %q, field is %q", i+1, lines[i], want[i])
		}
	}
	for i := 0; i < len(c); i++ {
		if c[i] != '\n' && (c[i] < 0x21 || c[i] > 0x7e) {
			t.Fatalf("byte %#x in the canonical string", c[i])
		}
	}
	return c
}

// resign returns headers carrying env's values and a fresh signature by testKey.
func resign(env sigv1.Envelope) http.Header {
	h := http.Header{}
	h.Set(sigv1.HeaderAgentID, env.AgentID)
	h.Set(sigv1.HeaderKeyID, env.KeyID)
	h.Set(sigv1.HeaderTimestamp, env.Timestamp)
	h.Set(sigv1.HeaderNonce, env.Nonce)
	if env.IdempotencyKey != "" {
		h.Set(sigv1.HeaderIdempotencyKey, env.IdempotencyKey)
	}
	h.Set(sigv1.HeaderSignature, envelope.FormatSignature(ed25519.Sign(testKey, []byte(env.Canonical()))))
	return h
}

func FuzzParseHeaders(f *testing.F) {
	good := signedHeaders("POST", "/agent-api/v1/threads", []byte("{}"))
	v := func(name string) string { return good.Get(name) }
	f.Add("POST", "/agent-api/v1/threads", uint8(0x3f), v(sigv1.HeaderAgentID), v(sigv1.HeaderKeyID),
		v(sigv1.HeaderTimestamp), v(sigv1.HeaderNonce), v(sigv1.HeaderIdempotencyKey), v(sigv1.HeaderSignature), []byte("{}"))
	f.Add("GET", "/a?b=c", uint8(0x2f), testAgent, "k", "0", strings.Repeat("n", 16), "", "svc-sig-v2 x", []byte(nil))
	f.Add("GET", "/a", uint8(0x6f), testAgent, "k\n1", "01", "n n", "i", "svc-sig-v1 AAAA", []byte("x"))
	f.Add("PUT", "/a\r\nb", uint8(0xff), testAgent+"\n", "k", "1767225600000", strings.Repeat("n", 128), "\x7f",
		"svc-sig-v1  "+v(sigv1.HeaderSignature), []byte("\r\n"))
	f.Add("DELETE", "/", uint8(0x3f), testAgent, "k", "9223372036854775807", strings.Repeat("-", 16), "é",
		"svc-sig-v1 "+strings.Repeat("A", 86)+"==", []byte{0xff})
	f.Fuzz(func(t *testing.T, method, target string, present uint8, agent, key, ts, nonce, idem, sig string, body []byte) {
		values := [...]string{agent, key, ts, nonce, idem, sig}
		h := http.Header{}
		for i, name := range fuzzHeaders {
			if present&(1<<i) != 0 {
				h[name] = append(h[name], values[i])
			}
		}
		if present&0x40 != 0 { // a duplicate
			h[sigv1.HeaderNonce] = append(h[sigv1.HeaderNonce], nonce)
		}
		if present&0x80 != 0 { // a non-canonical key, as a hand-built map might hold
			h["svc-key-id"] = []string{key}
		}
		env, err := sigv1.ParseHeaders(method, target, h)
		if err != nil {
			var p *problem.Problem
			if !errors.As(err, &p) || p.Status != http.StatusBadRequest ||
				(p.Code != problem.MalformedSignatureHeaders && p.Code != problem.UnsupportedSignatureVersion) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if env.Signature != nil && len(env.Signature) != ed25519.SignatureSize {
			t.Fatalf("signature of %d bytes", len(env.Signature))
		}
		env.BodySHA256 = sigv1.BodySHA256(body)
		checkCanonical(t, env)
		_ = sigv1.Verify(testKey.Public().(ed25519.PublicKey), env) // must not panic
		_ = sigv1.Verify(ed25519.PublicKey([]byte(agent)), env)
		_ = env.CheckFreshness(time.Unix(testTime, 0))

		// Whatever ParseHeaders accepts, a correct signer can sign and the verifier then accepts.
		again, err := sigv1.ParseHeaders(method, target, resign(env))
		if err != nil {
			t.Fatalf("re-signed envelope refused: %v", err)
		}
		again.BodySHA256 = env.BodySHA256
		if again.Canonical() != env.Canonical() || !sigv1.Verify(testKey.Public().(ed25519.PublicKey), again) {
			t.Fatal("re-signed envelope does not verify")
		}
	})
}

func FuzzCanonical(f *testing.F) {
	f.Add("POST", "/agent-api/v1/threads?a=1", testAgent, testKeyID, "1767225600", testNonce, testIdem, []byte("{}"))
	f.Add("GET", "/", testAgent, "k", "0", strings.Repeat("n", 16), "", []byte(nil))
	f.Add("GET", "/a\nGET", testAgent, "k\n", "1", strings.Repeat("n", 16), "\n", []byte("\n"))
	f.Add("PUT", "/x", testAgent, "k", "12", strings.Repeat("_", 128), strings.Repeat("~", 255), []byte("é"))
	f.Fuzz(func(t *testing.T, method, target, agent, key, ts, nonce, idem string, body []byte) {
		fields := envelope.Fields{Method: method, Target: target, AgentID: agent, KeyID: key, Timestamp: ts,
			Nonce: nonce, IdempotencyKey: idem, BodySHA256: envelope.BodySHA256(body)}
		c := fields.Canonical()
		if !strings.HasPrefix(c, "svc-sig-v1\n") || !strings.HasSuffix(c, "\n"+fields.BodySHA256) {
			t.Fatalf("canonical %q", c)
		}
		env := sigv1.Envelope{Method: method, Target: target, AgentID: agent, KeyID: key, Timestamp: ts,
			Nonce: nonce, IdempotencyKey: idem, BodySHA256: fields.BodySHA256}
		if env.Canonical() != c {
			t.Fatal("sigv1 and envelope build different canonical strings")
		}
		if !fields.Valid() {
			// Verify refuses what the verifier could never have parsed, whatever the signature.
			sig := ed25519.Sign(testKey, []byte(c))
			env.Signature = sig
			if sigv1.Verify(testKey.Public().(ed25519.PublicKey), env) {
				t.Fatal("Verify accepts an envelope with a field outside its alphabet")
			}
			return
		}
		checkCanonical(t, env)
		// Valid fields are exactly what ParseHeaders accepts: signed, they parse back to the same string
		// and verify.
		parsed, err := sigv1.ParseHeaders(method, target, resign(env))
		if err != nil {
			t.Fatalf("valid fields refused: %v", err)
		}
		parsed.BodySHA256 = fields.BodySHA256
		if parsed.Canonical() != c || !sigv1.Verify(testKey.Public().(ed25519.PublicKey), parsed) {
			t.Fatal("round trip through ParseHeaders changes or breaks the envelope")
		}
	})
}
