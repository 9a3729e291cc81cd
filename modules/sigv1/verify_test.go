package sigv1_test

// The guard's verification path, end to end through a node: every row of WIRE.md section 1's
// verification table with its status and code, the order between the rows, the nonce rules around
// refusals, and the scenarios of reliability.md section 8 that concern verification (2-6, 8, 10-17).

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/envelope"
	"github.com/svcforum/svc/sdk/signer"
	"github.com/svcforum/svc/testkit"
)

// ---------------------------------------------------------------------------------------------
// Helpers.

// vQuietFailures lifts the per-address limit on failed authentication, for tests that send more
// refused requests than it allows (their subject is the refusal, not that limit).
func vQuietFailures(c *sigv1.Config) { c.FailedAuthPerWindow = 1_000_000 }

// vExpectProblem fails unless r is an application/problem+json problem with status and code, whose
// members agree with them.
func vExpectProblem(t testing.TB, r testkit.Result, status int, code string) {
	t.Helper()
	testkit.Expect(t, r, status, code)
	if ct := r.Header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("Content-Type %q, want %q", ct, problem.ContentType)
	}
	m := r.JSON(t)
	if m["code"] != code || m["type"] != problem.TypePrefix+code || m["status"] != float64(status) {
		t.Fatalf("problem members code=%v type=%v status=%v, want %s %d", m["code"], m["type"], m["status"], code, status)
	}
}

// vBodyReader is body as a request body; nil for none (a nil *bytes.Reader would be a non-nil reader).
func vBodyReader(body []byte) io.Reader {
	if body == nil {
		return nil
	}
	return bytes.NewReader(body)
}

// vFields are the canonical fields a correct signer would sign for a, now, with a fresh nonce.
func vFields(w *world, a agent, method, path string, body []byte, idem string) envelope.Fields {
	return envelope.Fields{
		Method: method, Target: plugin.AgentPrefix + path,
		AgentID: a.AgentID, KeyID: a.KeyID,
		Timestamp:      strconv.FormatInt(w.clock.Now().Unix(), 10),
		Nonce:          signer.RandomNonce(),
		IdempotencyKey: idem,
		BodySHA256:     envelope.BodySHA256(body),
	}
}

// vSigOver is the Svc-Signature value of key over f's canonical string, whatever f holds.
func vSigOver(key ed25519.PrivateKey, f envelope.Fields) string {
	return envelope.FormatSignature(ed25519.Sign(key, []byte(f.Canonical())))
}

// vBuild returns the request whose method, target and headers are f's, with the Svc-Signature sig
// and body: for requests the Go signer refuses to make.
func vBuild(f envelope.Fields, body []byte, sig string) *http.Request {
	req := httptest.NewRequest(f.Method, f.Target, vBodyReader(body))
	req.RequestURI = f.Target
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set(sigv1.HeaderAgentID, f.AgentID)
	req.Header.Set(sigv1.HeaderKeyID, f.KeyID)
	req.Header.Set(sigv1.HeaderTimestamp, f.Timestamp)
	req.Header.Set(sigv1.HeaderNonce, f.Nonce)
	if f.IdempotencyKey != "" {
		req.Header.Set(sigv1.HeaderIdempotencyKey, f.IdempotencyKey)
	}
	req.Header.Set(sigv1.HeaderSignature, sig)
	return req
}

// vHandSigned is build with key's signature over exactly f.
func vHandSigned(key ed25519.PrivateKey, f envelope.Fields, body []byte) *http.Request {
	return vBuild(f, body, vSigOver(key, f))
}

// vBodyOf returns the bytes of a signed request's body (the signer keeps GetBody).
func vBodyOf(t testing.TB, req *http.Request) []byte {
	t.Helper()
	if req.GetBody == nil {
		return nil
	}
	rc, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// vResend returns req as it would arrive with another target and body, same headers: a copy of the
// same bytes when target is req's and body is vBodyOf(req) (a replay).
func vResend(req *http.Request, target string, body []byte) *http.Request {
	r := httptest.NewRequest(req.Method, target, vBodyReader(body))
	r.RequestURI = target
	r.Header = req.Header.Clone()
	return r
}

// vDup is an exact copy of a signed request: the same bytes sent again.
func vDup(t testing.TB, req *http.Request) *http.Request {
	t.Helper()
	return vResend(req, req.RequestURI, vBodyOf(t, req))
}

// vFlipSig flips one bit of the request's signature, keeping it well-formed.
func vFlipSig(t testing.TB, req *http.Request) {
	t.Helper()
	_, b64, _ := strings.Cut(req.Header.Get(sigv1.HeaderSignature), " ")
	sig, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(sig) != ed25519.SignatureSize {
		t.Fatalf("signature of the request: %v", err)
	}
	sig[5] ^= 0x20
	req.Header.Set(sigv1.HeaderSignature, envelope.FormatSignature(sig))
}

// vChunked makes req's body one of unknown length (as a chunked request arrives): Content-Length -1
// and a reader that is neither a bytes.Reader nor a strings.Reader.
func vChunked(req *http.Request, r io.Reader) {
	req.ContentLength = -1
	req.TransferEncoding = []string{"chunked"}
	req.Body = io.NopCloser(struct{ io.Reader }{r})
}

// vCountingReader counts the bytes read from it.
type vCountingReader struct {
	r io.Reader
	n int64
}

func (c *vCountingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// vFixedNonce is a signer for a on the test clock whose every signature uses nonce.
func vFixedNonce(w *world, a agent, nonce string) *signer.Signer {
	return signer.New(a.AgentID, a.KeyID, a.Key, signer.WithClock(w.clock.Now), signer.WithNonces(func() string { return nonce }))
}

// vSignWith signs a request to path with s.
func vSignWith(t testing.TB, s *signer.Signer, method, path string, body []byte, idem string) *http.Request {
	t.Helper()
	req := request(method, path, body, idem)
	if err := s.Sign(req); err != nil {
		t.Fatal(err)
	}
	return req
}

// vOtherKey is a key no agent registered.
func vOtherKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("svc sigv1 verify test stranger " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

// vInsertKey registers a key row directly, bypassing AddKey's checks: a key from before they existed.
func vInsertKey(t testing.TB, w *world, keyID, agentID, publicKey string) {
	t.Helper()
	if err := w.db.Exec(`INSERT INTO sigv1_keys (id, agent_id, public_key, state, created_at) VALUES (?, ?, ?, ?, ?)`,
		keyID, agentID, publicKey, sigv1.KeyActive, w.clock.Now()).Error; err != nil {
		t.Fatal(err)
	}
}

func vNonceRows(t testing.TB, w *world) int64 {
	t.Helper()
	var n int64
	if err := w.db.Raw(`SELECT COUNT(*) FROM sigv1_nonces`).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

const vEcho = `{"echo":"verify"}`

// ---------------------------------------------------------------------------------------------
// WIRE.md section 1: one test per row of the verification table.

func TestVerifyWireGateClosed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "gatekeeper")
		ctx := context.Background()
		if err := w.switches.SetGate(ctx, plugin.ChannelEdge, false); err != nil {
			t.Fatal(err)
		}
		vExpectProblem(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "g1"), 503, "channel_closed")
		// An unsigned request meets the closed gate first too.
		vExpectProblem(t, w.serve(request(http.MethodPost, "/conformance", []byte(vEcho), "g2")), 503, "channel_closed")
		// The private channel has its own gate, still open.
		testkit.Expect(t, testkit.Serve(w.private, signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "g3")), 200, "")

		if err := w.switches.SetGate(ctx, plugin.ChannelEdge, true); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "g4"), 200, "")

		// And the other way round: the private gate closed, the edge open.
		if err := w.switches.SetGate(ctx, plugin.ChannelPrivate, false); err != nil {
			t.Fatal(err)
		}
		vExpectProblem(t, testkit.Serve(w.private, signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "g5")), 503, "channel_closed")
		testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "g6"), 200, "")
	})
}

func TestVerifyWireBodyTooLarge(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "bigbody")

		t.Run("content-length", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", bytes.Repeat([]byte("x"), sigv1.MaxBody+1), "b1")
			if req.ContentLength != sigv1.MaxBody+1 {
				t.Fatalf("Content-Length %d", req.ContentLength)
			}
			// The size is refused from Content-Length alone: not one byte is read.
			cr := &vCountingReader{r: bytes.NewReader(vBodyOf(t, req))}
			req.Body = io.NopCloser(cr)
			vExpectProblem(t, w.serve(req), 413, "body_too_large")
			if cr.n != 0 {
				t.Errorf("read %d bytes of a body whose Content-Length is over the limit", cr.n)
			}
		})
		t.Run("chunked", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", bytes.Repeat([]byte("x"), sigv1.MaxBody+1), "b2")
			vChunked(req, bytes.NewReader(vBodyOf(t, req)))
			vExpectProblem(t, w.serve(req), 413, "body_too_large")
		})
		t.Run("chunked-reads-no-more-than-the-limit", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "b3")
			cr := &vCountingReader{r: bytes.NewReader(make([]byte, 8<<20))}
			vChunked(req, cr)
			vExpectProblem(t, w.serve(req), 413, "body_too_large")
			if cr.n > sigv1.MaxBody+1 {
				t.Errorf("read %d bytes of an 8 MiB chunked body; the limit is %d", cr.n, sigv1.MaxBody)
			}
		})
		// Exactly the limit passes the size check: the conformance route then refuses the non-JSON bytes
		// with 422, which it can only do once the guard accepted the body and the signature over it.
		t.Run("exactly-the-limit", func(t *testing.T) {
			vExpectProblem(t, w.send(t, a, http.MethodPost, "/conformance", bytes.Repeat([]byte("x"), sigv1.MaxBody), "b4"), 422, "validation_failed")
		})
		t.Run("exactly-the-limit-chunked", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", bytes.Repeat([]byte("x"), sigv1.MaxBody), "b5")
			vChunked(req, bytes.NewReader(vBodyOf(t, req)))
			vExpectProblem(t, w.serve(req), 422, "validation_failed")
		})
	})
}

func TestVerifyWireMalformedHeaders(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "malformed")
		set := func(name, value string) func(*http.Request) {
			return func(r *http.Request) { r.Header.Set(name, value) }
		}
		del := func(name string) func(*http.Request) {
			return func(r *http.Request) { r.Header.Del(name) }
		}
		twice := func(name string) func(*http.Request) {
			return func(r *http.Request) { r.Header.Add(name, r.Header.Get(name)) }
		}
		for _, tc := range []struct {
			name   string
			method string
			edit   func(*http.Request)
		}{
			{"missing-agent-id", "POST", del(sigv1.HeaderAgentID)},
			{"missing-key-id", "POST", del(sigv1.HeaderKeyID)},
			{"missing-timestamp", "POST", del(sigv1.HeaderTimestamp)},
			{"missing-nonce", "POST", del(sigv1.HeaderNonce)},
			{"missing-signature", "POST", del(sigv1.HeaderSignature)},
			{"missing-idempotency-key-on-post", "POST", del(sigv1.HeaderIdempotencyKey)},
			{"no-headers-at-all", "POST", func(r *http.Request) { r.Header = http.Header{"Content-Type": {"application/json"}} }},
			{"agent-id-twice", "POST", twice(sigv1.HeaderAgentID)},
			{"nonce-twice", "POST", twice(sigv1.HeaderNonce)},
			{"signature-twice", "POST", twice(sigv1.HeaderSignature)},
			{"empty-agent-id", "POST", set(sigv1.HeaderAgentID, "")},
			{"agent-id-uppercase", "POST", func(r *http.Request) { r.Header.Set(sigv1.HeaderAgentID, strings.ToUpper(a.AgentID)) }},
			{"agent-id-not-uuid", "POST", set(sigv1.HeaderAgentID, "agent-1")},
			{"agent-id-braced", "POST", func(r *http.Request) { r.Header.Set(sigv1.HeaderAgentID, "{"+a.AgentID+"}") }},
			{"key-id-65-chars", "POST", set(sigv1.HeaderKeyID, strings.Repeat("k", 65))},
			{"key-id-slash", "POST", set(sigv1.HeaderKeyID, "key/1")},
			{"timestamp-leading-zero", "POST", func(r *http.Request) { r.Header.Set(sigv1.HeaderTimestamp, "0"+r.Header.Get(sigv1.HeaderTimestamp)) }},
			{"timestamp-plus", "POST", func(r *http.Request) { r.Header.Set(sigv1.HeaderTimestamp, "+"+r.Header.Get(sigv1.HeaderTimestamp)) }},
			{"timestamp-negative", "POST", set(sigv1.HeaderTimestamp, "-1")},
			{"timestamp-overflow", "POST", set(sigv1.HeaderTimestamp, "99999999999999999999")},
			{"timestamp-rfc3339", "POST", set(sigv1.HeaderTimestamp, "2026-01-01T00:00:00Z")},
			{"nonce-15-chars", "POST", set(sigv1.HeaderNonce, strings.Repeat("n", 15))},
			{"nonce-129-chars", "POST", set(sigv1.HeaderNonce, strings.Repeat("n", 129))},
			{"nonce-padding", "POST", set(sigv1.HeaderNonce, "AAAAAAAAAAAAAAAAAAAAAA==")},
			{"nonce-plus-slash", "POST", set(sigv1.HeaderNonce, "AAAAAAAAAAA+AAAAAAAAA/")},
			{"idempotency-key-256-chars", "POST", set(sigv1.HeaderIdempotencyKey, strings.Repeat("i", 256))},
			{"idempotency-key-space", "POST", set(sigv1.HeaderIdempotencyKey, "two words")},
			{"idempotency-key-empty", "POST", set(sigv1.HeaderIdempotencyKey, "")},
			{"idempotency-key-on-get", "GET", set(sigv1.HeaderIdempotencyKey, "get-key")},
			{"signature-no-space", "POST", func(r *http.Request) {
				r.Header.Set(sigv1.HeaderSignature, strings.Replace(r.Header.Get(sigv1.HeaderSignature), " ", "", 1))
			}},
			{"signature-two-spaces", "POST", func(r *http.Request) {
				r.Header.Set(sigv1.HeaderSignature, strings.Replace(r.Header.Get(sigv1.HeaderSignature), " ", "  ", 1))
			}},
			{"signature-scheme-only", "POST", set(sigv1.HeaderSignature, sigv1.Scheme)},
			{"signature-empty", "POST", set(sigv1.HeaderSignature, "")},
		} {
			t.Run(tc.name, func(t *testing.T) {
				var req *http.Request
				if tc.method == "GET" {
					// The node has no GET route: a signed GET is checked on the catch-all engine.
					req = signed(t, a, http.MethodGet, "/anything", nil, "")
					tc.edit(req)
					vExpectProblem(t, testkit.Serve(vCatchAll(t, w.node), req), 400, "malformed_signature_headers")
					return
				}
				req = signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "m-"+tc.name)
				tc.edit(req)
				vExpectProblem(t, w.serve(req), 400, "malformed_signature_headers")
			})
		}
		if n := vNonceRows(t, w); n != 0 {
			t.Errorf("%d nonces recorded by malformed requests", n)
		}
	})
}

func TestVerifyWireUnsupportedVersion(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "versions")
		for _, scheme := range []string{"svc-sig-v2", "SVC-SIG-V1", "Svc-Sig-V1", "svc-sig-v0", "svc-sig-v1.1", "Bearer", "ed25519"} {
			t.Run(scheme, func(t *testing.T) {
				req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "v-"+scheme)
				_, b64, _ := strings.Cut(req.Header.Get(sigv1.HeaderSignature), " ")
				req.Header.Set(sigv1.HeaderSignature, scheme+" "+b64)
				vExpectProblem(t, w.serve(req), 400, "unsupported_signature_version")
			})
		}
	})
}

func TestVerifyWireStaleTimestamp(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "stale")
		for _, off := range []time.Duration{-301 * time.Second, 301 * time.Second, -time.Hour, 24 * time.Hour} {
			t.Run(off.String(), func(t *testing.T) {
				s := signer.New(a.AgentID, a.KeyID, a.Key, signer.WithClock(func() time.Time { return w.clock.Now().Add(off) }))
				vExpectProblem(t, w.serve(vSignWith(t, s, http.MethodPost, "/conformance", []byte(vEcho), "s1")), 401, "stale_timestamp")
			})
		}
		t.Run("zero", func(t *testing.T) {
			f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "s2")
			f.Timestamp = "0"
			vExpectProblem(t, w.serve(vHandSigned(a.Key, f, []byte(vEcho))), 401, "stale_timestamp")
		})
		t.Run("max-int64", func(t *testing.T) {
			f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "s3")
			f.Timestamp = "9223372036854775807"
			vExpectProblem(t, w.serve(vHandSigned(a.Key, f, []byte(vEcho))), 401, "stale_timestamp")
		})
	})
}

func TestVerifyWireUnknownKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "owner")
		b := w.newAgent(t, "neighbour")
		for _, tc := range []struct {
			name           string
			agentID, keyID string
		}{
			{"unknown-key-id", a.AgentID, "no-such-key"},
			{"unknown-uuid-key-id", a.AgentID, "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"},
			{"unknown-agent-id", "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b", a.KeyID},
			{"another-agents-key-with-this-agents-id", a.AgentID, b.KeyID},
			{"this-agents-key-with-another-agents-id", b.AgentID, a.KeyID},
			{"key-id-in-uppercase", a.AgentID, strings.ToUpper(a.KeyID)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "u1")
				f.AgentID, f.KeyID = tc.agentID, tc.keyID
				// Signed correctly by the key the request names, where there is one: only the pairing is wrong.
				vExpectProblem(t, w.serve(vHandSigned(a.Key, f, []byte(vEcho))), 401, "unknown_key")
				vExpectProblem(t, w.serve(vHandSigned(b.Key, f, []byte(vEcho))), 401, "unknown_key")
			})
		}
		if n := vNonceRows(t, w); n != 0 {
			t.Errorf("%d nonces recorded for unknown keys", n)
		}
	})
}

func TestVerifyWireSignatureMismatch(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "victim")
		b := w.newAgent(t, "impostor")
		for _, tc := range []struct {
			name string
			make func(t *testing.T) *http.Request
		}{
			{"signed-by-another-agents-key", func(t *testing.T) *http.Request {
				return vHandSigned(b.Key, vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "x1"), []byte(vEcho))
			}},
			{"signed-by-an-unregistered-key", func(t *testing.T) *http.Request {
				return vHandSigned(vOtherKey("x"), vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "x2"), []byte(vEcho))
			}},
			{"one-bit-flipped", func(t *testing.T) *http.Request {
				req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "x3")
				vFlipSig(t, req)
				return req
			}},
			{"all-zero-signature", func(t *testing.T) *http.Request {
				return vBuild(vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "x4"), []byte(vEcho), envelope.FormatSignature(make([]byte, 64)))
			}},
			{"idempotency-key-changed", func(t *testing.T) *http.Request {
				req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "x5")
				req.Header.Set(sigv1.HeaderIdempotencyKey, "x6")
				return req
			}},
			{"nonce-changed", func(t *testing.T) *http.Request {
				req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "x7")
				req.Header.Set(sigv1.HeaderNonce, signer.RandomNonce())
				return req
			}},
			{"timestamp-changed-still-fresh", func(t *testing.T) *http.Request {
				req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "x8")
				req.Header.Set(sigv1.HeaderTimestamp, strconv.FormatInt(w.clock.Now().Unix()+1, 10))
				return req
			}},
			{"canonical-with-trailing-newline", func(t *testing.T) *http.Request {
				f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "x9")
				return vBuild(f, []byte(vEcho), envelope.FormatSignature(ed25519.Sign(a.Key, []byte(f.Canonical()+"\n"))))
			}},
			{"canonical-with-crlf", func(t *testing.T) *http.Request {
				f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "x10")
				return vBuild(f, []byte(vEcho), envelope.FormatSignature(ed25519.Sign(a.Key, []byte(strings.ReplaceAll(f.Canonical(), "\n", "\r\n")))))
			}},
			{"method-lowercase-in-canonical", func(t *testing.T) *http.Request {
				f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "x11")
				g := f
				g.Method = "post"
				return vBuild(f, []byte(vEcho), vSigOver(a.Key, g))
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				vExpectProblem(t, w.serve(tc.make(t)), 401, "signature_mismatch")
			})
		}
		if n := vNonceRows(t, w); n != 0 {
			t.Errorf("%d nonces recorded by requests whose signature failed", n)
		}
	})
}

func TestVerifyWireAgentSuspended(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "suspendee")
		ctx := context.Background()
		if _, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentSuspended); err != nil {
			t.Fatal(err)
		}
		vExpectProblem(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "p1"), 403, "agent_suspended")
		vExpectProblem(t, w.send(t, a, http.MethodPost, writePath, []byte(`{"note":"n"}`), "p2"), 403, "agent_suspended")
		vExpectProblem(t, testkit.Serve(w.private, signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "p3")), 403, "agent_suspended")
		if n := w.writes.count(t); n != 0 {
			t.Fatalf("%d rows written by a suspended agent", n)
		}
		if _, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentActive); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "p4"), 200, "")
	})
}

func TestVerifyWireKeyRevoked(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "rotator")
		ctx := context.Background()
		// A second key of the same agent, to show that revoking one key leaves the other working.
		second := vOtherKey("rotator second")
		k2, err := w.registry.AddKey(ctx, a.AgentID, base64.StdEncoding.EncodeToString(second.Public().(ed25519.PublicKey)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.registry.RevokeKey(ctx, a.KeyID); err != nil {
			t.Fatal(err)
		}
		vExpectProblem(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "r1"), 403, "key_revoked")
		vExpectProblem(t, w.send(t, a, http.MethodPost, writePath, []byte(`{"note":"n"}`), "r2"), 403, "key_revoked")
		b := a
		b.KeyID, b.Key = k2.ID, second
		b.Signer = signer.New(a.AgentID, k2.ID, second, signer.WithClock(w.clock.Now))
		testkit.Expect(t, w.send(t, b, http.MethodPost, "/conformance", []byte(vEcho), "r3"), 200, "")
	})
}

func TestVerifyWireWritesFrozen(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "freezer")
		ctx := context.Background()
		for _, tc := range []struct{ scope, id string }{
			{sigv1.ScopeAll, ""}, {sigv1.ScopeOrg, a.OrgID}, {sigv1.ScopeAgent, a.AgentID},
		} {
			t.Run(tc.scope, func(t *testing.T) {
				before := w.writes.count(t)
				if err := w.switches.SetFrozen(ctx, tc.scope, tc.id, true); err != nil {
					t.Fatal(err)
				}
				r := w.send(t, a, http.MethodPost, writePath, []byte(`{"note":"frozen"}`), "f-"+tc.scope)
				vExpectProblem(t, r, 403, "writes_frozen")
				if got := r.JSON(t)["scope"]; got != tc.scope {
					t.Errorf("scope %v, want %s", got, tc.scope)
				}
				if n := w.writes.count(t); n != before {
					t.Fatalf("a frozen write wrote %d rows", n-before)
				}
				// Conformance is no write: it answers while writes are frozen.
				testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "c-"+tc.scope), 200, "")
				if err := w.switches.SetFrozen(ctx, tc.scope, tc.id, false); err != nil {
					t.Fatal(err)
				}
				// The same Idempotency-Key is free for the retry: the refused write committed nothing.
				testkit.Expect(t, w.send(t, a, http.MethodPost, writePath, []byte(`{"note":"frozen"}`), "f-"+tc.scope), 201, "")
			})
		}
		// A freeze of another organisation or agent does not touch this one.
		b := w.newAgent(t, "bystander")
		if err := w.switches.SetFrozen(ctx, sigv1.ScopeOrg, b.OrgID, true); err != nil {
			t.Fatal(err)
		}
		if err := w.switches.SetFrozen(ctx, sigv1.ScopeAgent, b.AgentID, true); err != nil {
			t.Fatal(err)
		}
		testkit.Expect(t, w.send(t, a, http.MethodPost, writePath, []byte(`{"note":"free"}`), "free"), 201, "")
		vExpectProblem(t, w.send(t, b, http.MethodPost, writePath, []byte(`{"note":"b"}`), "b"), 403, "writes_frozen")
	})
}

func TestVerifyWireNonceReplayed(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "replayer")
		b := w.newAgent(t, "replayer-b")

		t.Run("read", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "n1")
			again := vDup(t, req)
			testkit.Expect(t, w.serve(req), 200, "")
			vExpectProblem(t, w.serve(again), 409, "nonce_replayed")
		})
		t.Run("write-same-and-other-replica", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, writePath, []byte(`{"note":"once"}`), "n2")
			again, other := vDup(t, req), vDup(t, req)
			testkit.Expect(t, w.serve(req), 201, "")
			vExpectProblem(t, w.serve(again), 409, "nonce_replayed")
			n2 := newNode(t, w.db, w.clock)
			vExpectProblem(t, n2.serve(other), 409, "nonce_replayed")
			if n := w.writes.count(t); n != 1 {
				t.Fatalf("%d rows for one write replayed twice", n)
			}
		})
		t.Run("same-nonce-new-signature", func(t *testing.T) {
			// A new request (other body, new idempotency key, new signature) with a used nonce.
			s := vFixedNonce(w, a, "reused-nonce-0123456789")
			testkit.Expect(t, w.serve(vSignWith(t, s, http.MethodPost, "/conformance", []byte(vEcho), "n3")), 200, "")
			w.clock.Add(10 * time.Second)
			vExpectProblem(t, w.serve(vSignWith(t, s, http.MethodPost, "/conformance", []byte(`{"echo":"other"}`), "n4")), 409, "nonce_replayed")
			// Nonces are per agent: another agent may use the same one.
			testkit.Expect(t, w.serve(vSignWith(t, vFixedNonce(w, b, "reused-nonce-0123456789"), http.MethodPost, "/conformance", []byte(vEcho), "n5")), 200, "")
		})
	})
}

func TestVerifyWireRateLimited(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.AttemptsPerWindow = 2 })
		a := w.newAgent(t, "hasty")
		testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "l1"), 200, "")
		testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "l2"), 200, "")
		r := w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "l3")
		vExpectProblem(t, r, 429, "rate_limited")
		ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
		if err != nil || ra < 1 {
			t.Fatalf("Retry-After %q, want whole seconds >= 1", r.Header.Get("Retry-After"))
		}
		if got, ok := r.JSON(t)["retry_after_seconds"].(float64); !ok || int(got) != ra {
			t.Fatalf("retry_after_seconds %v, Retry-After %d", r.JSON(t)["retry_after_seconds"], ra)
		}
		// Another agent has its own count.
		b := w.newAgent(t, "patient")
		testkit.Expect(t, w.send(t, b, http.MethodPost, "/conformance", []byte(vEcho), "l4"), 200, "")
		// After the window the agent may go on.
		w.clock.Add(time.Duration(ra) * time.Second)
		testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "l5"), 200, "")
	})
}

func TestVerifyWireFailedAuthRateLimited(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, func(c *sigv1.Config) { c.FailedAuthPerWindow = 2 })
		a := w.newAgent(t, "guesser")
		for i := range 2 {
			req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "fa"+itoa(i))
			vFlipSig(t, req)
			vExpectProblem(t, w.serve(req), 401, "signature_mismatch")
		}
		req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "fa2")
		vFlipSig(t, req)
		r := w.serve(req)
		vExpectProblem(t, r, 429, "rate_limited")
		if ra, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || ra < 1 {
			t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
		}
	})
}

// TestVerifyWireOrder: when a request fails several checks, the first in the table's order answers.
func TestVerifyWireOrder(t *testing.T) {
	big := bytes.Repeat([]byte("x"), sigv1.MaxBody+1)
	type row struct {
		name   string
		opts   []func(*sigv1.Config)
		make   func(t *testing.T, w *world, a, b agent) *http.Request
		status int
		code   string
	}
	ctx := context.Background()
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// replayed sends req once (accepted) and returns the same bytes again.
	replayed := func(t *testing.T, w *world, req *http.Request, status int) *http.Request {
		again := vDup(t, req)
		testkit.Expect(t, w.serve(req), status, "")
		return again
	}
	rows := []row{
		{"gate-closed-beats-oversize-body", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			must(t, w.switches.SetGate(ctx, plugin.ChannelEdge, false))
			return request(http.MethodPost, "/conformance", big, "o1")
		}, 503, "channel_closed"},
		{"oversize-body-beats-missing-headers", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			return request(http.MethodPost, "/conformance", big, "o2")
		}, 413, "body_too_large"},
		{"oversize-chunked-body-beats-missing-headers", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			req := request(http.MethodPost, "/conformance", nil, "o3")
			vChunked(req, bytes.NewReader(big))
			return req
		}, 413, "body_too_large"},
		{"malformed-header-beats-unsupported-version", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "o4")
			req.Header.Del(sigv1.HeaderNonce)
			_, b64, _ := strings.Cut(req.Header.Get(sigv1.HeaderSignature), " ")
			req.Header.Set(sigv1.HeaderSignature, "svc-sig-v2 "+b64)
			return req
		}, 400, "malformed_signature_headers"},
		{"unsupported-version-beats-stale-timestamp", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "o5")
			f.Timestamp = strconv.FormatInt(w.clock.Now().Unix()-3600, 10)
			_, b64, _ := strings.Cut(vSigOver(a.Key, f), " ")
			return vBuild(f, []byte(vEcho), "svc-sig-v2 "+b64)
		}, 400, "unsupported_signature_version"},
		{"stale-timestamp-beats-bad-signature", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "o6")
			f.Timestamp = strconv.FormatInt(w.clock.Now().Unix()-301, 10)
			return vHandSigned(b.Key, f, []byte(vEcho))
		}, 401, "stale_timestamp"},
		{"stale-timestamp-beats-unknown-key", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "o7")
			f.Timestamp = strconv.FormatInt(w.clock.Now().Unix()+301, 10)
			f.KeyID = "no-such-key"
			return vHandSigned(a.Key, f, []byte(vEcho))
		}, 401, "stale_timestamp"},
		{"unknown-key-beats-bad-signature", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "o8")
			f.KeyID = b.KeyID
			return vBuild(f, []byte(vEcho), envelope.FormatSignature(make([]byte, 64)))
		}, 401, "unknown_key"},
		{"bad-signature-beats-suspended-agent", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			_, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentSuspended)
			must(t, err)
			return vHandSigned(b.Key, vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "o9"), []byte(vEcho))
		}, 401, "signature_mismatch"},
		{"bad-signature-beats-revoked-key", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			_, err := w.registry.RevokeKey(ctx, a.KeyID)
			must(t, err)
			return vHandSigned(b.Key, vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "o10"), []byte(vEcho))
		}, 401, "signature_mismatch"},
		{"bad-signature-beats-writes-frozen", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			must(t, w.switches.SetFrozen(ctx, sigv1.ScopeAll, "", true))
			return vHandSigned(b.Key, vFields(w, a, http.MethodPost, writePath, []byte(`{"note":"n"}`), "o11"), []byte(`{"note":"n"}`))
		}, 401, "signature_mismatch"},
		{"suspended-agent-beats-revoked-key", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			_, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentSuspended)
			must(t, err)
			_, err = w.registry.RevokeKey(ctx, a.KeyID)
			must(t, err)
			return signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "o12")
		}, 403, "agent_suspended"},
		{"revoked-key-beats-writes-frozen", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			_, err := w.registry.RevokeKey(ctx, a.KeyID)
			must(t, err)
			must(t, w.switches.SetFrozen(ctx, sigv1.ScopeAgent, a.AgentID, true))
			return signed(t, a, http.MethodPost, writePath, []byte(`{"note":"n"}`), "o13")
		}, 403, "key_revoked"},
		{"suspended-agent-beats-replayed-nonce", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			again := replayed(t, w, signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "o14"), 200)
			_, err := w.registry.SetAgentState(ctx, a.AgentID, sigv1.AgentSuspended)
			must(t, err)
			return again
		}, 403, "agent_suspended"},
		{"revoked-key-beats-replayed-nonce", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			again := replayed(t, w, signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "o15"), 200)
			_, err := w.registry.RevokeKey(ctx, a.KeyID)
			must(t, err)
			return again
		}, 403, "key_revoked"},
		{"writes-frozen-beats-replayed-nonce", nil, func(t *testing.T, w *world, a, b agent) *http.Request {
			again := replayed(t, w, signed(t, a, http.MethodPost, writePath, []byte(`{"note":"n"}`), "o16"), 201)
			must(t, w.switches.SetFrozen(ctx, sigv1.ScopeOrg, a.OrgID, true))
			return again
		}, 403, "writes_frozen"},
		{"replayed-nonce-beats-rate-limit", []func(*sigv1.Config){func(c *sigv1.Config) { c.AttemptsPerWindow = 2 }},
			func(t *testing.T, w *world, a, b agent) *http.Request {
				again := replayed(t, w, signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "o17"), 200)
				testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "o18"), 200, "")
				vExpectProblem(t, w.send(t, a, http.MethodPost, "/conformance", []byte(vEcho), "o19"), 429, "rate_limited")
				return again
			}, 409, "nonce_replayed"},
	}
	dbtest.Each(t, func(t *testing.T, dialect string) {
		for _, r := range rows {
			t.Run(r.name, func(t *testing.T) {
				w := newWorld(t, dialect, r.opts...)
				a, b := w.newAgent(t, "first"), w.newAgent(t, "second")
				vExpectProblem(t, w.serve(r.make(t, w, a, b)), r.status, r.code)
			})
		}
	})
}

// ---------------------------------------------------------------------------------------------
// Item 3: the body is what is signed.

func TestVerifyBodyChangedAfterSigning(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "tamper")
		for _, tc := range []struct {
			name string
			path string
			body string
			edit func([]byte) []byte
		}{
			{"one-byte-replaced", "/conformance", `{"echo":"pay 25"}`, func(b []byte) []byte { return bytes.Replace(b, []byte("25"), []byte("35"), 1) }},
			{"one-byte-appended", "/conformance", `{"echo":"x"}`, func(b []byte) []byte { return append(b, ' ') }},
			{"one-byte-dropped", "/conformance", `{"echo":"xy"}`, func(b []byte) []byte { return bytes.Replace(b, []byte("xy"), []byte("x"), 1) }},
			{"write-note-changed", writePath, `{"note":"a"}`, func(b []byte) []byte { return bytes.Replace(b, []byte(`"a"`), []byte(`"b"`), 1) }},
			{"body-dropped", "/conformance", `{"echo":"x"}`, func([]byte) []byte { return []byte{} }},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req := signed(t, a, http.MethodPost, tc.path, []byte(tc.body), "t-"+tc.name)
				vExpectProblem(t, w.serve(vResend(req, req.RequestURI, tc.edit(vBodyOf(t, req)))), 401, "signature_mismatch")
			})
		}
		if n := w.writes.count(t); n != 0 {
			t.Fatalf("%d rows written by tampered requests", n)
		}
	})
}

// ---------------------------------------------------------------------------------------------
// Item 4: nonces around refusals.

// TestVerifyNonceNotRecordedOnRefusal: a request refused at 400 or 401 uses up no nonce: the same
// nonce then works in a correctly signed request (and only then is it used up).
func TestVerifyNonceNotRecordedOnRefusal(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "careful")
		b := w.newAgent(t, "careless")
		for i, tc := range []struct {
			name   string
			status int
			code   string
			make   func(f envelope.Fields) *http.Request // f carries the nonce under test
		}{
			{"malformed-idempotency-key", 400, "malformed_signature_headers", func(f envelope.Fields) *http.Request {
				f.IdempotencyKey = "two words"
				return vHandSigned(a.Key, f, []byte(vEcho))
			}},
			{"malformed-agent-id", 400, "malformed_signature_headers", func(f envelope.Fields) *http.Request {
				f.AgentID = strings.ToUpper(f.AgentID)
				return vHandSigned(a.Key, f, []byte(vEcho))
			}},
			{"unsupported-version", 400, "unsupported_signature_version", func(f envelope.Fields) *http.Request {
				_, b64, _ := strings.Cut(vSigOver(a.Key, f), " ")
				return vBuild(f, []byte(vEcho), "svc-sig-v2 "+b64)
			}},
			{"stale-timestamp", 401, "stale_timestamp", func(f envelope.Fields) *http.Request {
				f.Timestamp = strconv.FormatInt(w.clock.Now().Unix()-301, 10)
				return vHandSigned(a.Key, f, []byte(vEcho))
			}},
			{"unknown-key", 401, "unknown_key", func(f envelope.Fields) *http.Request {
				f.KeyID = b.KeyID
				return vHandSigned(b.Key, f, []byte(vEcho))
			}},
			{"signature-mismatch", 401, "signature_mismatch", func(f envelope.Fields) *http.Request {
				return vHandSigned(b.Key, f, []byte(vEcho))
			}},
			{"body-changed", 401, "signature_mismatch", func(f envelope.Fields) *http.Request {
				return vBuild(f, []byte(`{"echo":"changed"}`), vSigOver(a.Key, f))
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				nonce := "refused-nonce-" + itoa(i) + "-abcdefgh"
				f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "nr-"+tc.name)
				f.Nonce = nonce
				vExpectProblem(t, w.serve(tc.make(f)), tc.status, tc.code)
				if n := vNonceRows(t, w); n != int64(i) {
					t.Fatalf("%d nonces recorded, want %d (one per accepted request)", n, i)
				}
				good := vSignWith(t, vFixedNonce(w, a, nonce), http.MethodPost, "/conformance", []byte(vEcho), "ok-"+tc.name)
				again := vDup(t, good)
				testkit.Expect(t, w.serve(good), 200, "")
				vExpectProblem(t, w.serve(again), 409, "nonce_replayed")
			})
		}
	})
}

// TestVerifyScenario08ForgedFutureNonce: an attacker who learns the nonce a victim will use and sends
// a forged request with it first cannot make the victim's genuine request fail.
func TestVerifyScenario08ForgedFutureNonce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		victim := w.newAgent(t, "victim")
		attacker := w.newAgent(t, "attacker")
		const nonce = "victims-next-nonce-0001"
		body := []byte(`{"note":"genuine"}`)

		forged := vFields(w, victim, http.MethodPost, writePath, body, "genuine-1")
		forged.Nonce = nonce
		// Signed by the attacker's own registered key, and by a stranger's.
		vExpectProblem(t, w.serve(vHandSigned(attacker.Key, forged, body)), 401, "signature_mismatch")
		vExpectProblem(t, w.serve(vHandSigned(vOtherKey("attacker"), forged, body)), 401, "signature_mismatch")
		// Under the victim's id with the attacker's key id: unknown_key, nonce untouched as well.
		f2 := forged
		f2.KeyID = attacker.KeyID
		vExpectProblem(t, w.serve(vHandSigned(attacker.Key, f2, body)), 401, "unknown_key")
		// A stale forgery with the nonce.
		f3 := forged
		f3.Timestamp = strconv.FormatInt(w.clock.Now().Unix()+3600, 10)
		vExpectProblem(t, w.serve(vHandSigned(attacker.Key, f3, body)), 401, "stale_timestamp")
		// The attacker using the nonce under its own identity uses its own nonce space only.
		testkit.Expect(t, w.serve(vSignWith(t, vFixedNonce(w, attacker, nonce), http.MethodPost, "/conformance", []byte(vEcho), "att")), 200, "")

		w.clock.Add(2 * time.Second)
		genuine := vSignWith(t, vFixedNonce(w, victim, nonce), http.MethodPost, writePath, body, "genuine-1")
		testkit.Expect(t, w.serve(genuine), 201, "")
		if n := w.writes.count(t); n != 1 {
			t.Fatalf("%d rows, want the victim's one", n)
		}
	})
}

// ---------------------------------------------------------------------------------------------
// reliability.md section 8.

// vAddL returns sig with S replaced by S + L (L the group order): the same equation, S not canonical.
func vAddL(sig []byte) []byte {
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	rev := func(b []byte) []byte {
		out := make([]byte, len(b))
		for i, c := range b {
			out[len(b)-1-i] = c
		}
		return out
	}
	s := new(big.Int).SetBytes(rev(sig[32:]))
	s.Add(s, l)
	out := bytes.Clone(sig)
	copy(out[32:], rev(s.FillBytes(make([]byte, 32))))
	return out
}

// TestVerifyScenario02Malleability: S + L → 401; the untampered request with the same nonce is then
// accepted (the refused one recorded nothing).
func TestVerifyScenario02Malleability(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "malleable")
		req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "mal")
		good := vDup(t, req)
		_, b64, _ := strings.Cut(req.Header.Get(sigv1.HeaderSignature), " ")
		sig, _ := base64.StdEncoding.DecodeString(b64)
		req.Header.Set(sigv1.HeaderSignature, envelope.FormatSignature(vAddL(sig)))
		vExpectProblem(t, w.serve(req), 401, "signature_mismatch")
		testkit.Expect(t, w.serve(good), 200, "")
	})
}

var (
	vIdentityKey  = append([]byte{1}, make([]byte, 31)...) // the identity point 01 00..00
	vIdentitySig  = append(append([]byte{1}, make([]byte, 31)...), make([]byte, 32)...)
	vSmallOrder   = vMustHex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa")
	vNonCanonical = vMustHex("edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")
)

func vMustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		n, err := strconv.ParseUint(s[2*i:2*i+2], 16, 8)
		if err != nil {
			panic(err)
		}
		b[i] = byte(n)
	}
	return b
}

// TestVerifyScenario03IdentityKey: the identity key is refused at registration (422), and a legacy row
// holding it still cannot be signed for with the universal forgery (401).
func TestVerifyScenario03IdentityKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "identity")
		ctx := context.Background()
		b64 := base64.StdEncoding.EncodeToString(vIdentityKey)
		_, err := w.registry.AddKey(ctx, a.AgentID, b64)
		vExpectProblemErr(t, err, 422, problem.PublicKeyRejected)

		vInsertKey(t, w, "legacy-identity", a.AgentID, b64)
		f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "id1")
		f.KeyID = "legacy-identity"
		if !ed25519.Verify(vIdentityKey, []byte(f.Canonical()), vIdentitySig) {
			t.Log("note: crypto/ed25519 no longer accepts the identity-key forgery itself")
		}
		vExpectProblem(t, w.serve(vBuild(f, []byte(vEcho), envelope.FormatSignature(vIdentitySig))), 401, "signature_mismatch")
		// Not even a "real" signature helps: no private key exists for the identity point, and the
		// verifier refuses the key itself.
		vExpectProblem(t, w.serve(vBuild(f, []byte(vEcho), envelope.FormatSignature(make([]byte, 64)))), 401, "signature_mismatch")
	})
}

// vExpectProblemErr fails unless err is a *problem.Problem with status and code.
func vExpectProblemErr(t testing.TB, err error, status int, code problem.Code) {
	t.Helper()
	var p *problem.Problem
	if !errors.As(err, &p) || p.Status != status || p.Code != code {
		t.Fatalf("error %v, want %d %s", err, status, code)
	}
}

// TestVerifyScenario04RejectedKeys: small-order, non-canonical, 31- and 33-byte keys are refused at
// registration (422); legacy rows holding them make requests fail 401, never 500 or a panic.
func TestVerifyScenario04RejectedKeys(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "badkeys")
		ctx := context.Background()
		for _, tc := range []struct {
			name string
			raw  []byte
		}{
			{"small-order", vSmallOrder},
			{"non-canonical", vNonCanonical},
			{"identity", vIdentityKey},
			{"31-bytes", bytes.Repeat([]byte{0x42}, 31)},
			{"33-bytes", append(bytes.Clone(vSmallOrder[:1]), bytes.Repeat([]byte{0x42}, 32)...)},
			{"31-bytes-of-a-real-key", a.Key.Public().(ed25519.PublicKey)[:31]},
			{"33-bytes-of-a-real-key", append(bytes.Clone(a.Key.Public().(ed25519.PublicKey)), 0)},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b64 := base64.StdEncoding.EncodeToString(tc.raw)
				_, err := w.registry.AddKey(ctx, a.AgentID, b64)
				vExpectProblemErr(t, err, 422, problem.PublicKeyRejected)
				keyID := "legacy-" + tc.name
				vInsertKey(t, w, keyID, a.AgentID, b64)
				f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "k-"+tc.name)
				f.KeyID = keyID
				for _, sig := range [][]byte{vIdentitySig, make([]byte, 64), ed25519.Sign(a.Key, []byte(f.Canonical()))} {
					g := f
					g.Nonce = signer.RandomNonce()
					vExpectProblem(t, w.serve(vBuild(g, []byte(vEcho), envelope.FormatSignature(sig))), 401, "signature_mismatch")
				}
			})
		}
		// A row whose public key is not base64 at all.
		vInsertKey(t, w, "legacy-garbage", a.AgentID, "not base64 at all!")
		f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "k-garbage")
		f.KeyID = "legacy-garbage"
		vExpectProblem(t, w.serve(vHandSigned(a.Key, f, []byte(vEcho))), 401, "signature_mismatch")
	})
}

// TestVerifyScenario05SignatureEncoding: credentials that are not exactly 64 bytes in standard padded
// base64 → 401 signature_mismatch.
func TestVerifyScenario05SignatureEncoding(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "encoder")
		std := base64.StdEncoding.EncodeToString
		for _, tc := range []struct {
			name string
			cred func(sig []byte) string
		}{
			{"63-bytes", func(sig []byte) string { return std(sig[:63]) }},
			{"65-bytes", func(sig []byte) string { return std(append(sig, 0)) }},
			{"bad-base64-char", func(sig []byte) string { s := std(sig); return s[:10] + "*" + s[11:] }},
			{"trailing-garbage", func(sig []byte) string { return std(sig) + "AAAA" }},
			{"trailing-equals", func(sig []byte) string { return std(sig) + "=" }},
			{"no-padding", func(sig []byte) string { return base64.RawStdEncoding.EncodeToString(sig) }},
			{"base64url", func(sig []byte) string {
				// Make sure the URL alphabet differs from the standard one for this signature.
				s := base64.URLEncoding.EncodeToString(sig)
				if s == std(sig) {
					return s[:10] + "-" + s[11:]
				}
				return s
			}},
			{"128-hex-digits", func(sig []byte) string {
				const digits = "0123456789abcdef"
				out := make([]byte, 0, 128)
				for _, c := range sig {
					out = append(out, digits[c>>4], digits[c&15])
				}
				return string(out)
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "e-"+tc.name)
				_, b64, _ := strings.Cut(req.Header.Get(sigv1.HeaderSignature), " ")
				sig, _ := base64.StdEncoding.DecodeString(b64)
				req.Header.Set(sigv1.HeaderSignature, sigv1.Scheme+" "+tc.cred(sig))
				vExpectProblem(t, w.serve(req), 401, "signature_mismatch")
			})
		}
	})
}

// TestVerifyScenario06Timestamps: the skew window is ±300 s inclusive; a millisecond epoch is stale;
// anything but canonical decimal seconds is malformed.
func TestVerifyScenario06Timestamps(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "timekeeper")
		for _, tc := range []struct {
			off    time.Duration
			status int
			code   string
		}{
			{-301 * time.Second, 401, "stale_timestamp"},
			{301 * time.Second, 401, "stale_timestamp"},
			{-300 * time.Second, 200, ""},
			{300 * time.Second, 200, ""},
			{0, 200, ""},
		} {
			t.Run("now"+tc.off.String(), func(t *testing.T) {
				s := signer.New(a.AgentID, a.KeyID, a.Key, signer.WithClock(func() time.Time { return w.clock.Now().Add(tc.off) }))
				r := w.serve(vSignWith(t, s, http.MethodPost, "/conformance", []byte(vEcho), "t"+tc.off.String()))
				if tc.status == 200 {
					testkit.Expect(t, r, 200, "")
				} else {
					vExpectProblem(t, r, tc.status, tc.code)
				}
			})
		}
		t.Run("milliseconds", func(t *testing.T) {
			f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "ms")
			f.Timestamp = strconv.FormatInt(w.clock.Now().UnixMilli(), 10)
			vExpectProblem(t, w.serve(vHandSigned(a.Key, f, []byte(vEcho))), 401, "stale_timestamp")
		})
		now := strconv.FormatInt(w.clock.Now().Unix(), 10)
		for _, ts := range []string{now + ".0", "0x" + strconv.FormatInt(w.clock.Now().Unix(), 16), now[:4] + "O" + now[5:],
			" " + now, now + " ", "1e9", "-" + now, "+" + now, "0" + now, "", "١٧٦٧٢٢٥٦٠٠", strings.Repeat("9", 20)} {
			t.Run("non-decimal-"+strconv.Quote(ts), func(t *testing.T) {
				f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "nd")
				f.Timestamp = ts
				vExpectProblem(t, w.serve(vHandSigned(a.Key, f, []byte(vEcho))), 400, "malformed_signature_headers")
			})
		}
	})
}

// TestVerifyScenario10LineInjection: a newline, a carriage return or a non-ASCII byte in a signed
// header is malformed (400) even when the signature covers the value as sent: no line-shifting in
// the nine-line string.
func TestVerifyScenario10LineInjection(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "injector")
		now := strconv.FormatInt(w.clock.Now().Unix(), 10)
		type edit struct {
			name string
			set  func(f *envelope.Fields)
		}
		var edits []edit
		for _, bad := range []struct{ name, s string }{{"lf", "\n"}, {"cr", "\r"}, {"crlf", "\r\n"}, {"non-ascii", "é"}, {"nul", "\x00"}, {"tab", "\t"}} {
			edits = append(edits,
				edit{"agent-id-" + bad.name, func(f *envelope.Fields) { f.AgentID = f.AgentID[:35] + bad.s }},
				edit{"key-id-" + bad.name, func(f *envelope.Fields) { f.KeyID += bad.s + now }},
				edit{"nonce-" + bad.name, func(f *envelope.Fields) { f.Nonce += bad.s + "x" }},
				edit{"idempotency-key-" + bad.name, func(f *envelope.Fields) { f.IdempotencyKey += bad.s + "y" }},
				edit{"timestamp-" + bad.name, func(f *envelope.Fields) { f.Timestamp += bad.s }},
			)
		}
		// The classic shift: the key id swallows the timestamp line, the timestamp header the nonce's.
		edits = append(edits, edit{"shifted-lines", func(f *envelope.Fields) {
			f.KeyID, f.Timestamp, f.Nonce = f.KeyID+"\n"+f.Timestamp, f.Nonce, "x"+f.Nonce
		}})
		for _, e := range edits {
			t.Run(e.name, func(t *testing.T) {
				f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "inj-"+e.name)
				e.set(&f)
				vExpectProblem(t, w.serve(vHandSigned(a.Key, f, []byte(vEcho))), 400, "malformed_signature_headers")
			})
		}
		// A non-ASCII byte in the target is no request-target either.
		t.Run("target-non-ascii", func(t *testing.T) {
			f := vFields(w, a, http.MethodPost, "/conformance", []byte(vEcho), "inj-target")
			req := vHandSigned(a.Key, f, []byte(vEcho))
			req.RequestURI = f.Target + "?q=é"
			vExpectProblem(t, w.serve(req), 400, "malformed_signature_headers")
		})
		if n := vNonceRows(t, w); n != 0 {
			t.Errorf("%d nonces recorded by malformed requests", n)
		}
	})
}

// TestVerifyScenario11RawTarget: the signature covers the raw request-target; every rewriting of it
// (parameters added, a path byte percent-encoded, a trailing slash, the query dropped or reordered)
// is 401, even where the router would take both to the same handler.
func TestVerifyScenario11RawTarget(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "targeter")
		e := vCatchAll(t, w.node)
		const signedTarget = plugin.AgentPrefix + "/posts?a=1"
		for _, sent := range []string{
			plugin.AgentPrefix + "/posts?a=1&a=2",
			plugin.AgentPrefix + "/p%6Fsts?a=1",
			plugin.AgentPrefix + "/posts/?a=1",
			plugin.AgentPrefix + "/posts",
			plugin.AgentPrefix + "/posts?",
			plugin.AgentPrefix + "/posts?a=%31",
			plugin.AgentPrefix + "/POSTS?a=1",
			plugin.AgentPrefix + "//posts?a=1",
			plugin.AgentPrefix + "/./posts?a=1",
			plugin.AgentPrefix + "/posts?a=1#frag",
		} {
			t.Run(sent, func(t *testing.T) {
				for _, m := range []string{http.MethodGet, http.MethodPost} {
					var body []byte
					idem := ""
					if m == http.MethodPost {
						body, idem = []byte(vEcho), "raw-target"
					}
					req := signed(t, a, m, "/posts?a=1", body, idem)
					if req.RequestURI != signedTarget {
						t.Fatalf("signed target %q", req.RequestURI)
					}
					r := testkit.Serve(e, vResend(req, sent, body))
					if r.Status == 404 {
						t.Fatalf("%s %s did not reach the guard", m, sent)
					}
					vExpectProblem(t, r, 401, "signature_mismatch")
				}
			})
		}
		// The control: sent exactly as signed, accepted.
		testkit.Expect(t, testkit.Serve(e, signed(t, a, http.MethodGet, "/posts?a=1", nil, "")), 200, "")
		testkit.Expect(t, testkit.Serve(e, signed(t, a, http.MethodGet, "/p%6Fsts?b=2&a=1", nil, "")), 200, "")
	})
}

// TestVerifyScenario12BodyHash: the body hash is over the exact bytes, lowercase hex; a re-serialised
// body or a hash in another spelling → 401.
func TestVerifyScenario12BodyHash(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "hasher")
		body := []byte(`{"echo":"same meaning"}`)
		t.Run("reserialised-extra-space", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", body, "h1")
			vExpectProblem(t, w.serve(vResend(req, req.RequestURI, []byte(`{"echo": "same meaning"}`))), 401, "signature_mismatch")
		})
		t.Run("reserialised-trailing-newline", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", body, "h2")
			vExpectProblem(t, w.serve(vResend(req, req.RequestURI, append(bytes.Clone(body), '\n'))), 401, "signature_mismatch")
		})
		t.Run("reserialised-escaped", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", body, "h3")
			vExpectProblem(t, w.serve(vResend(req, req.RequestURI, []byte(`{"echo":"same\u0020meaning"}`))), 401, "signature_mismatch")
		})
		sum := sha256.Sum256(body)
		for name, hash := range map[string]string{
			"uppercase-hex":   strings.ToUpper(envelope.BodySHA256(body)),
			"base64":          base64.StdEncoding.EncodeToString(sum[:]),
			"base64url":       base64.RawURLEncoding.EncodeToString(sum[:]),
			"empty-body-hash": envelope.BodySHA256(nil),
			"sha256-prefixed": "sha256:" + envelope.BodySHA256(body),
		} {
			t.Run("hash-"+name, func(t *testing.T) {
				f := vFields(w, a, http.MethodPost, "/conformance", body, "h-"+name)
				g := f
				g.BodySHA256 = hash
				vExpectProblem(t, w.serve(vBuild(f, body, vSigOver(a.Key, g))), 401, "signature_mismatch")
			})
		}
		// The control: the lowercase hex of the exact bytes.
		f := vFields(w, a, http.MethodPost, "/conformance", body, "h-ok")
		testkit.Expect(t, w.serve(vHandSigned(a.Key, f, body)), 200, "")
	})
}

// TestVerifyScenario13to16StrictJSON: correctly signed bodies that the strict decoder refuses, through
// the conformance endpoint: 422 validation_failed with pointers, never 500.
func TestVerifyScenario13to16StrictJSON(t *testing.T) {
	deep := `{"echo":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`
	deepObject := strings.Repeat(`{"echo":`, 7000) + `"x"` + strings.Repeat(`}`, 7000)
	cases := []struct{ name, body string }{
		{"13-unknown-member", `{"echo":"a","extra":1}`},
		{"13-case-variant-Echo", `{"Echo":"a"}`},
		{"13-case-variant-ECHO", `{"ECHO":"a"}`},
		{"13-case-variant-next-to-echo", `{"echo":"a","Echo":"b"}`},
		{"13-kelvin-sign", `{"echo":"a","\u212Aind":"b"}`},
		{"13-kelvin-sign-raw", "{\"echo\":\"a\",\"\u212Aind\":\"b\"}"},
		{"13-long-s-fold", "{\"echo\":\"a\",\"\u017Fecho\":\"b\"}"},
		{"14-duplicate-member", `{"echo":"a","echo":"b"}`},
		{"14-duplicate-member-escaped", `{"echo":"a","\u0065cho":"b"}`},
		{"14-invalid-utf8", "{\"echo\":\"\xff\"}"},
		{"14-invalid-utf8-overlong", "{\"echo\":\"\xc0\xaf\"}"},
		{"14-invalid-utf8-in-name", "{\"ech\xff\":\"a\"}"},
		{"14-lone-surrogate", `{"echo":"\ud800"}`},
		{"14-lone-low-surrogate", `{"echo":"\udc00"}`},
		{"15-two-values", `{"echo":"a"}{"echo":"b"}`},
		{"15-two-values-space", `{"echo":"a"} {"echo":"b"}`},
		{"15-trailing-garbage", `{"echo":"a"} garbage`},
		{"15-trailing-comma", `{"echo":"a"},`},
		{"16-null-echo", `{"echo":null}`},
		{"16-number-echo", `{"echo":1e2}`},
		{"16-float-echo", `{"echo":1.5}`},
		{"16-huge-number-echo", `{"echo":9223372036854775808}`},
		{"16-bool-echo", `{"echo":true}`},
		{"16-array-echo", `{"echo":["a"]}`},
		{"16-missing-echo", `{}`},
		{"16-echo-too-long", `{"echo":"` + strings.Repeat("x", 201) + `"}`},
		{"16-not-an-object", `["echo"]`},
		{"16-null-body", `null`},
		{"16-empty-body", ``},
		{"16-whitespace-body", `   `},
		{"16-deep-array", deep},
		{"16-deep-object", deepObject},
		{"16-truncated", `{"echo":"a"`},
		{"16-comment", `{"echo":"a"/* c */}`},
		{"16-single-quotes", `{'echo':'a'}`},
		{"16-bom", "\ufeff" + `{"echo":"a"}`},
	}
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "strict")
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if len(tc.body) > sigv1.MaxBody {
					t.Fatalf("body of %d bytes is over the limit; the case would test the limit", len(tc.body))
				}
				r := w.send(t, a, http.MethodPost, "/conformance", []byte(tc.body), "j-"+tc.name)
				vExpectProblem(t, r, 422, "validation_failed")
				errs, ok := r.JSON(t)["errors"].([]any)
				if !ok || len(errs) == 0 {
					t.Fatalf("a 422 without errors: %s", r.Body)
				}
				for _, e := range errs {
					m, _ := e.(map[string]any)
					if _, ok := m["pointer"].(string); !ok {
						t.Errorf("error without a pointer: %v", e)
					}
				}
			})
		}
		// The controls: the same endpoint accepts what the schema allows.
		for _, ok := range []string{`{"echo":""}`, `{"echo":"` + strings.Repeat("x", 200) + `"}`, ` {"echo":"a"} `, `{"echo":"\u00e9\ud83c\udf5c"}`} {
			testkit.Expect(t, w.send(t, a, http.MethodPost, "/conformance", []byte(ok), "j-ok"), 200, "")
		}
	})
}

// TestVerifyScenario17BodyLimitsAndEncoding: 64 KiB + 1 with Content-Length and chunked → 413;
// Content-Encoding → 415; a Content-Type other than application/json on conformance → 415.
func TestVerifyScenario17BodyLimitsAndEncoding(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, vQuietFailures)
		a := w.newAgent(t, "encodings")
		over := bytes.Repeat([]byte(" "), 64<<10+1)
		t.Run("over-with-content-length", func(t *testing.T) {
			vExpectProblem(t, w.send(t, a, http.MethodPost, "/conformance", over, "z1"), 413, "body_too_large")
		})
		t.Run("over-chunked", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", over, "z2")
			vChunked(req, bytes.NewReader(over))
			vExpectProblem(t, w.serve(req), 413, "body_too_large")
		})
		t.Run("over-on-the-write-route", func(t *testing.T) {
			vExpectProblem(t, w.send(t, a, http.MethodPost, writePath, over, "z3"), 413, "body_too_large")
			if n := w.writes.count(t); n != 0 {
				t.Fatalf("%d rows", n)
			}
		})
		for i, ce := range []string{"gzip", "deflate", "br", "x-gzip", "GZIP", "gzip, identity", "identity, gzip"} {
			t.Run("content-encoding-"+ce, func(t *testing.T) {
				req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "ce-"+itoa(i))
				req.Header.Set("Content-Encoding", ce)
				vExpectProblem(t, w.serve(req), 415, "unsupported_media_type")
			})
		}
		t.Run("content-encoding-gzip-on-write", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, writePath, []byte(`{"note":"z"}`), "zw")
			req.Header.Set("Content-Encoding", "gzip")
			vExpectProblem(t, w.serve(req), 415, "unsupported_media_type")
		})
		t.Run("content-encoding-in-a-second-header", func(t *testing.T) {
			// Refused by the guard, before the nonce is used: the same request unencoded is answered.
			req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "ce-second")
			plain := req.Clone(context.Background()) // the same signed request, nonce included
			plain.Body = io.NopCloser(strings.NewReader(vEcho))
			req.Header.Set("Content-Encoding", "identity")
			req.Header.Add("Content-Encoding", "gzip")
			vExpectProblem(t, w.serve(req), 415, "unsupported_media_type")
			testkit.Expect(t, w.serve(plain), 200, "")
		})
		t.Run("content-encoding-identity-is-no-encoding", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "zi")
			req.Header.Set("Content-Encoding", "identity")
			testkit.Expect(t, w.serve(req), 200, "")
		})
		for _, ct := range []string{"text/plain", "", "application/x-www-form-urlencoded", "application/json; charset=latin1",
			"application/jsonx", "multipart/form-data; boundary=x", "application/problem+json"} {
			t.Run("content-type-"+strconv.Quote(ct), func(t *testing.T) {
				req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "ct-"+itoa(len(ct)))
				if ct == "" {
					req.Header.Del("Content-Type")
				} else {
					req.Header.Set("Content-Type", ct)
				}
				vExpectProblem(t, w.serve(req), 415, "unsupported_media_type")
			})
		}
		t.Run("content-type-json-utf8", func(t *testing.T) {
			req := signed(t, a, http.MethodPost, "/conformance", []byte(vEcho), "ct-ok")
			req.Header.Set("Content-Type", "application/json; charset=utf-8")
			testkit.Expect(t, w.serve(req), 200, "")
		})
	})
}
