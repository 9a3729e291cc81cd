package sigv1_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/envelope"
)

const (
	testAgent = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"
	testKeyID = "ed25519:a1"
	testTime  = int64(1767225600)
	testNonce = "AAECAwQFBgcICQoLDA0ODw"
	testIdem  = "6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b"
)

var testKey = ed25519.NewKeyFromSeed(make([]byte, 32))

// signedHeaders returns well-formed, correctly signed headers for a request.
func signedHeaders(method, target string, body []byte) http.Header {
	f := envelope.Fields{Method: method, Target: target, AgentID: testAgent, KeyID: testKeyID,
		Timestamp: strconv.FormatInt(testTime, 10), Nonce: testNonce, BodySHA256: envelope.BodySHA256(body)}
	h := http.Header{}
	if envelope.IdempotencyKeyRule(method) == envelope.Required {
		f.IdempotencyKey = testIdem
		h.Set(sigv1.HeaderIdempotencyKey, testIdem)
	}
	h.Set(sigv1.HeaderAgentID, f.AgentID)
	h.Set(sigv1.HeaderKeyID, f.KeyID)
	h.Set(sigv1.HeaderTimestamp, f.Timestamp)
	h.Set(sigv1.HeaderNonce, f.Nonce)
	h.Set(sigv1.HeaderSignature, envelope.FormatSignature(ed25519.Sign(testKey, []byte(f.Canonical()))))
	return h
}

func parseAndVerify(t *testing.T, method, target string, h http.Header, body []byte) (sigv1.Envelope, bool) {
	t.Helper()
	env, err := sigv1.ParseHeaders(method, target, h)
	if err != nil {
		t.Fatalf("ParseHeaders: %v", err)
	}
	env.BodySHA256 = sigv1.BodySHA256(body)
	return env, sigv1.Verify(testKey.Public().(ed25519.PublicKey), env)
}

func TestParseHeadersAcceptsAndVerifies(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		body           []byte
	}{
		{"GET", "/agent-api/v1/wallet", nil},
		{"POST", "/agent-api/v1/threads", []byte(`{"title":"x"}`)},
		{"PUT", "/agent-api/v1/threads/x/attachments?a=1&a=2", []byte(`{}`)},
		{"HEAD", "/agent-api/v1/wallet", nil},
		{"DELETE", "/agent-api/v1/x", nil},
	} {
		h := signedHeaders(tc.method, tc.target, tc.body)
		env, ok := parseAndVerify(t, tc.method, tc.target, h, tc.body)
		if !ok {
			t.Errorf("%s %s: does not verify", tc.method, tc.target)
		}
		if env.AgentID != testAgent || env.KeyID != testKeyID || env.Nonce != testNonce ||
			env.Timestamp != "1767225600" || len(env.Signature) != 64 {
			t.Errorf("%s: envelope %+v", tc.method, env)
		}
		if (env.IdempotencyKey != "") != (tc.method == "POST" || tc.method == "PUT") {
			t.Errorf("%s: idempotency key %q", tc.method, env.IdempotencyKey)
		}
		if sec, ok := env.Unix(); !ok || sec != testTime {
			t.Errorf("Unix() = %d, %v", sec, ok)
		}
	}
}

func TestCanonical(t *testing.T) {
	env := sigv1.Envelope{Method: "GET", Target: "/agent-api/v1/usage?limit=2", AgentID: testAgent,
		KeyID: testKeyID, Timestamp: "1767225600", Nonce: testNonce, BodySHA256: sigv1.BodySHA256(nil)}
	want := "svc-sig-v1\nGET\n/agent-api/v1/usage?limit=2\n" + testAgent + "\ned25519:a1\n1767225600\n" +
		testNonce + "\n\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := env.Canonical(); got != want {
		t.Fatalf("canonical\n%q\nwant\n%q", got, want)
	}
	if sigv1.BodySHA256([]byte("abc")) != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatal("BodySHA256(abc)")
	}
}

// TestParseHeadersMalformed: every malformed case of WIRE.md section 1 is 400 malformed_signature_headers,
// names the header and never echoes the value.
func TestParseHeadersMalformed(t *testing.T) {
	headers := []string{sigv1.HeaderAgentID, sigv1.HeaderKeyID, sigv1.HeaderTimestamp, sigv1.HeaderNonce,
		sigv1.HeaderIdempotencyKey, sigv1.HeaderSignature}
	type tc struct {
		name   string
		method string
		edit   func(http.Header)
		header string // the header the problem names; "" for the method or target
		target string
	}
	set := func(name, v string) func(http.Header) { return func(h http.Header) { h.Set(name, v) } }
	var cases []tc
	for _, name := range headers {
		cases = append(cases,
			tc{name: name + " missing", edit: func(h http.Header) { h.Del(name) }, header: name},
			tc{name: name + " twice", edit: func(h http.Header) { h.Add(name, h.Get(name)) }, header: name},
			tc{name: name + " empty", edit: set(name, ""), header: name},
		)
		for what, bad := range map[string]string{"newline": "\n", "CR": "\r", "CRLF": "\r\n", "space": " ",
			"tab": "\t", "non-ASCII": "é", "NUL": "\x00", "DEL": "\x7f", "latin-1": "\xe9"} {
			cases = append(cases,
				tc{name: name + " with " + what + " inside", header: name,
					edit: func(h http.Header) { v := h.Get(name); h.Set(name, v[:len(v)/2]+bad+v[len(v)/2:]) }},
				tc{name: name + " with trailing " + what, header: name,
					edit: func(h http.Header) { h.Set(name, h.Get(name)+bad) }},
				tc{name: name + " with leading " + what, header: name,
					edit: func(h http.Header) { h.Set(name, bad+h.Get(name)) }},
			)
		}
	}
	for _, v := range []string{"0123", "01767225600", "00", "+1767225600", "-1767225600", "1767225600.5", "1.5",
		"1e9", "0x6955b900", "9223372036854775808", "99999999999999999999", "１７６７２２５６００", "2026-01-01T00:00:00Z"} {
		cases = append(cases, tc{name: "timestamp " + v, edit: set(sigv1.HeaderTimestamp, v), header: sigv1.HeaderTimestamp})
	}
	for _, v := range []string{strings.ToUpper(testAgent), "0190b1c2d3e47f568a9b0c1d2e3f4a5b", "{" + testAgent + "}",
		"urn:uuid:" + testAgent, testAgent[:35], testAgent + "0", "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5g"} {
		cases = append(cases, tc{name: "agent id " + v, edit: set(sigv1.HeaderAgentID, v), header: sigv1.HeaderAgentID})
	}
	for _, v := range []string{strings.Repeat("k", 65), "a/b", "a+b", "a,b", "a_b\"c", "a@b"} {
		cases = append(cases, tc{name: "key id " + v, edit: set(sigv1.HeaderKeyID, v), header: sigv1.HeaderKeyID})
	}
	for _, v := range []string{strings.Repeat("n", 15), strings.Repeat("n", 129), testNonce[:21] + "=",
		testNonce[:21] + "+", testNonce[:21] + "/", testNonce[:21] + ".", testNonce[:21] + "~"} {
		cases = append(cases, tc{name: "nonce " + v, edit: set(sigv1.HeaderNonce, v), header: sigv1.HeaderNonce})
	}
	for _, v := range []string{strings.Repeat("i", 256), "a b", "a,\tb"} {
		cases = append(cases, tc{name: "idempotency key " + v, edit: set(sigv1.HeaderIdempotencyKey, v),
			header: sigv1.HeaderIdempotencyKey})
	}
	sig := func(h http.Header) string { _, b64, _ := strings.Cut(h.Get(sigv1.HeaderSignature), " "); return b64 }
	for name, edit := range map[string]func(http.Header){
		"signature scheme alone":         set(sigv1.HeaderSignature, "svc-sig-v1"),
		"signature scheme and space":     set(sigv1.HeaderSignature, "svc-sig-v1 "),
		"signature without scheme":       func(h http.Header) { h.Set(sigv1.HeaderSignature, sig(h)) },
		"signature leading space":        func(h http.Header) { h.Set(sigv1.HeaderSignature, " svc-sig-v1 "+sig(h)) },
		"signature two spaces":           func(h http.Header) { h.Set(sigv1.HeaderSignature, "svc-sig-v1  "+sig(h)) },
		"signature tab":                  func(h http.Header) { h.Set(sigv1.HeaderSignature, "svc-sig-v1\t"+sig(h)) },
		"signature space inside":         func(h http.Header) { h.Set(sigv1.HeaderSignature, "svc-sig-v1 "+sig(h)[:40]+" "+sig(h)[40:]) },
		"signature with a second word":   func(h http.Header) { h.Set(sigv1.HeaderSignature, "svc-sig-v1 "+sig(h)+" x") },
		"signature v2 with two spaces":   func(h http.Header) { h.Set(sigv1.HeaderSignature, "svc-sig-v2  "+sig(h)) },
		"signature with trailing CRLF":   func(h http.Header) { h.Set(sigv1.HeaderSignature, "svc-sig-v1 "+sig(h)+"\r\n") },
		"signature newline in base64":    func(h http.Header) { h.Set(sigv1.HeaderSignature, "svc-sig-v1 "+sig(h)[:76]+"\n"+sig(h)[76:]) },
		"v2 and malformed nonce (order)": func(h http.Header) { h.Set(sigv1.HeaderSignature, "svc-sig-v2 "+sig(h)); h.Set(sigv1.HeaderNonce, "x") },
	} {
		hdr := sigv1.HeaderSignature
		if strings.Contains(name, "nonce") {
			hdr = sigv1.HeaderNonce
		}
		cases = append(cases, tc{name: name, edit: edit, header: hdr})
	}
	cases = append(cases,
		tc{name: "idempotency key on GET", method: "GET", edit: set(sigv1.HeaderIdempotencyKey, testIdem),
			header: sigv1.HeaderIdempotencyKey},
		tc{name: "empty idempotency key on GET", method: "GET", edit: set(sigv1.HeaderIdempotencyKey, ""),
			header: sigv1.HeaderIdempotencyKey},
		tc{name: "idempotency key on HEAD", method: "HEAD", edit: set(sigv1.HeaderIdempotencyKey, testIdem),
			header: sigv1.HeaderIdempotencyKey},
		tc{name: "idempotency key missing on PUT", method: "PUT",
			edit: func(h http.Header) { h.Del(sigv1.HeaderIdempotencyKey) }, header: sigv1.HeaderIdempotencyKey},
		tc{name: "malformed idempotency key on DELETE", method: "DELETE",
			edit: set(sigv1.HeaderIdempotencyKey, "a b"), header: sigv1.HeaderIdempotencyKey},
		tc{name: "lowercase method", method: "post"},
		tc{name: "mixed-case method", method: "Get"},
		tc{name: "empty method"},
		tc{name: "method with space", method: "GET "},
		tc{name: "target without slash", target: "agent-api/v1/wallet"},
		tc{name: "absolute-form target", target: "https://svc.example/agent-api/v1/wallet"},
		tc{name: "asterisk target", target: "*"},
		tc{name: "target with space", target: "/agent-api/v1/wallet x"},
		tc{name: "target with newline", target: "/agent-api/v1/wallet\nx"},
		tc{name: "target with CR", target: "/agent-api/v1/wallet\r"},
		tc{name: "target with raw non-ASCII", target: "/agent-api/v1/café"},
		tc{name: "empty target", target: "-"},
	)

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			method, target := c.method, c.target
			if method == "" && c.name != "empty method" {
				method = "POST"
			}
			if target == "" {
				target = "/agent-api/v1/threads"
			} else if target == "-" {
				target = ""
			}
			signMethod := method
			if !envelope.ValidMethod(signMethod) {
				signMethod = "POST"
			}
			h := signedHeaders(signMethod, "/agent-api/v1/threads", nil)
			var before []string
			for _, name := range headers {
				before = append(before, h.Values(name)...)
			}
			if c.edit != nil {
				c.edit(h)
			}
			env, err := sigv1.ParseHeaders(method, target, h)
			p := assertProblem(t, err, problem.MalformedSignatureHeaders, 400)
			if env.Method != "" || env.Signature != nil {
				t.Errorf("returned a partial envelope %+v", env)
			}
			if got, _ := p.Extensions["header"].(string); got != c.header {
				t.Errorf("problem names header %q, want %q (detail %q)", got, c.header, p.Detail)
			}
			if c.header != "" && !strings.Contains(p.Detail, c.header) {
				t.Errorf("detail %q does not name %s", p.Detail, c.header)
			}
			for _, name := range headers {
				for _, v := range h.Values(name) {
					if len(v) >= 8 && strings.Contains(p.Detail, v) {
						t.Errorf("detail %q echoes the value of %s", p.Detail, name)
					}
				}
			}
			for _, v := range before {
				if len(v) >= 8 && strings.Contains(p.Detail, v) {
					t.Errorf("detail %q echoes a header value", p.Detail)
				}
			}
		})
	}
}

func TestParseHeadersWellFormedEdges(t *testing.T) {
	for name, edit := range map[string]func(http.Header){
		"millisecond timestamp":  func(h http.Header) { h.Set(sigv1.HeaderTimestamp, "1767225600000") },
		"timestamp 0":            func(h http.Header) { h.Set(sigv1.HeaderTimestamp, "0") },
		"timestamp max int64":    func(h http.Header) { h.Set(sigv1.HeaderTimestamp, strconv.FormatInt(math.MaxInt64, 10)) },
		"key id of 64":           func(h http.Header) { h.Set(sigv1.HeaderKeyID, strings.Repeat("k", 64)) },
		"key id alphabet":        func(h http.Header) { h.Set(sigv1.HeaderKeyID, "AZaz09._:-") },
		"nonce of 16":            func(h http.Header) { h.Set(sigv1.HeaderNonce, strings.Repeat("n", 16)) },
		"nonce of 128":           func(h http.Header) { h.Set(sigv1.HeaderNonce, strings.Repeat("n", 128)) },
		"idempotency key of 255": func(h http.Header) { h.Set(sigv1.HeaderIdempotencyKey, strings.Repeat("~", 255)) },
		"idempotency key of 1":   func(h http.Header) { h.Set(sigv1.HeaderIdempotencyKey, "!") },
	} {
		t.Run(name, func(t *testing.T) {
			h := signedHeaders("POST", "/agent-api/v1/threads", nil)
			edit(h)
			if _, err := sigv1.ParseHeaders("POST", "/agent-api/v1/threads", h); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}

func TestParseHeadersUnsupportedVersion(t *testing.T) {
	for _, scheme := range []string{"svc-sig-v2", "svc-sig-v0", "SVC-SIG-V1", "Svc-Sig-V1", "svc-sig-v1.1",
		"svc-sig-v10", "ed25519", "Signature"} {
		h := signedHeaders("GET", "/agent-api/v1/wallet", nil)
		_, b64, _ := strings.Cut(h.Get(sigv1.HeaderSignature), " ")
		h.Set(sigv1.HeaderSignature, scheme+" "+b64)
		_, err := sigv1.ParseHeaders("GET", "/agent-api/v1/wallet", h)
		p := assertProblem(t, err, problem.UnsupportedSignatureVersion, 400)
		if strings.Contains(p.Detail, b64) || !strings.Contains(p.Detail, sigv1.HeaderSignature) {
			t.Errorf("%s: detail %q", scheme, p.Detail)
		}
	}
}

// TestSignatureEncodingIsVerifiedLater: reliability scenario 5. Credentials of the right scheme that do
// not decode to exactly 64 bytes pass ParseHeaders with a nil Signature, and Verify fails (401
// signature_mismatch at the signature step, after freshness and key lookup).
func TestSignatureEncodingIsVerifiedLater(t *testing.T) {
	h0 := signedHeaders("GET", "/agent-api/v1/wallet", nil)
	_, good, _ := strings.Cut(h0.Get(sigv1.HeaderSignature), " ")
	raw, _ := base64.StdEncoding.DecodeString(good)
	last := strings.IndexByte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", good[85])
	for name, cred := range map[string]string{
		"63 bytes":              base64.StdEncoding.EncodeToString(raw[:63]),
		"65 bytes":              base64.StdEncoding.EncodeToString(append(raw[:64:64], 0)),
		"trailing garbage":      good + "AAAA",
		"trailing junk char":    good + "!",
		"bad base64 char":       good[:10] + "*" + good[11:],
		"URL alphabet":          base64.URLEncoding.EncodeToString(raw) + "-_",
		"unpadded":              base64.RawStdEncoding.EncodeToString(raw),
		"non-canonical padding": good[:85] + string("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[last|1]) + "==",
		"padding inside":        good[:40] + "=" + good[41:],
		"hex":                   strings.Repeat("ab", 64),
		"one character":         "A",
	} {
		t.Run(name, func(t *testing.T) {
			h := signedHeaders("GET", "/agent-api/v1/wallet", nil)
			h.Set(sigv1.HeaderSignature, "svc-sig-v1 "+cred)
			env, err := sigv1.ParseHeaders("GET", "/agent-api/v1/wallet", h)
			if err != nil {
				t.Fatalf("refused before verification: %v", err)
			}
			if env.Signature != nil {
				t.Fatalf("decoded a %d-byte signature", len(env.Signature))
			}
			env.BodySHA256 = sigv1.BodySHA256(nil)
			if sigv1.Verify(testKey.Public().(ed25519.PublicKey), env) {
				t.Fatal("verifies")
			}
		})
	}
	if _, ok := parseAndVerify(t, "GET", "/agent-api/v1/wallet", h0, nil); !ok {
		t.Fatal("the untouched signature does not verify")
	}
}

func TestVerifyRefusesTampering(t *testing.T) {
	body := []byte(`{"title":"Weeknight dal","minutes":25}`)
	pub := testKey.Public().(ed25519.PublicKey)
	base := func() sigv1.Envelope {
		h := signedHeaders("POST", "/agent-api/v1/threads?a=1", body)
		env, err := sigv1.ParseHeaders("POST", "/agent-api/v1/threads?a=1", h)
		if err != nil {
			t.Fatal(err)
		}
		env.BodySHA256 = sigv1.BodySHA256(body)
		return env
	}
	if !sigv1.Verify(pub, base()) {
		t.Fatal("untouched envelope does not verify")
	}
	other := []byte(`{"title":"Weeknight dal","minutes":35}`)
	for name, edit := range map[string]func(*sigv1.Envelope){
		"method":             func(e *sigv1.Envelope) { e.Method = "PUT" },
		"target query added": func(e *sigv1.Envelope) { e.Target = "/agent-api/v1/threads?a=1&a=2" },
		"target encoded":     func(e *sigv1.Envelope) { e.Target = "/agent-api/v1/%74hreads?a=1" },
		"target slash":       func(e *sigv1.Envelope) { e.Target = "/agent-api/v1/threads/?a=1" },
		"agent":              func(e *sigv1.Envelope) { e.AgentID = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5c" },
		"key":                func(e *sigv1.Envelope) { e.KeyID = "ed25519:a2" },
		"timestamp":          func(e *sigv1.Envelope) { e.Timestamp = "1767225601" },
		"nonce":              func(e *sigv1.Envelope) { e.Nonce = "AAECAwQFBgcICQoLDA0ODx" },
		"idempotency key":    func(e *sigv1.Envelope) { e.IdempotencyKey = "x" },
		"body one byte":      func(e *sigv1.Envelope) { e.BodySHA256 = sigv1.BodySHA256(other) },
		"body hash upper":    func(e *sigv1.Envelope) { e.BodySHA256 = strings.ToUpper(e.BodySHA256) },
		"body hash unset":    func(e *sigv1.Envelope) { e.BodySHA256 = "" },
		"signature bit":      func(e *sigv1.Envelope) { e.Signature[5] ^= 1 },
		"signature S+L":      func(e *sigv1.Envelope) { e.Signature = addL(e.Signature) },
		"line shift":         func(e *sigv1.Envelope) { e.KeyID, e.Timestamp = "ed25519:a1\n1767225600", "" },
	} {
		env := base()
		edit(&env)
		if sigv1.Verify(pub, env) {
			t.Errorf("%s: tampered envelope verifies", name)
		}
	}
	other32 := ed25519.NewKeyFromSeed(make([]byte, 32))
	other32[0] ^= 1
	if sigv1.Verify(ed25519.NewKeyFromSeed(other32.Seed()).Public().(ed25519.PublicKey), base()) {
		t.Error("verifies under another key")
	}
}

func TestCheckFreshness(t *testing.T) {
	env := sigv1.Envelope{Timestamp: strconv.FormatInt(testTime, 10)}
	for _, d := range []int64{0, 1, -1, 299, -299, 300, -300} {
		if err := env.CheckFreshness(time.Unix(testTime+d, 0)); err != nil {
			t.Errorf("server clock %+d s: %v", d, err)
		}
	}
	for _, d := range []int64{301, -301, 86400, -testTime} {
		assertProblem(t, env.CheckFreshness(time.Unix(testTime+d, 0)), problem.StaleTimestamp, 401)
	}
	// Sub-second server time: 300.9 s is still within 300 whole seconds.
	if err := env.CheckFreshness(time.Unix(testTime+300, 900_000_000)); err != nil {
		t.Errorf("300.9 s: %v", err)
	}
	for _, ts := range []string{"1767225600000", strconv.FormatInt(math.MaxInt64, 10), "0", "", "x", "01767225600"} {
		e := sigv1.Envelope{Timestamp: ts}
		assertProblem(t, e.CheckFreshness(time.Unix(testTime, 0)), problem.StaleTimestamp, 401)
	}
}

// addL returns sig with S (the last 32 bytes, little-endian) replaced by S + L, L the group order.
func addL(sig []byte) []byte {
	l, _ := new(big.Int).SetString("7237005577332262213973186563042994240857116359379907606001950938285454250989", 10)
	le := func(b []byte) []byte {
		out := make([]byte, len(b))
		for i, c := range b {
			out[len(b)-1-i] = c
		}
		return out
	}
	s := new(big.Int).SetBytes(le(sig[32:]))
	out := append([]byte(nil), sig[:32]...)
	return append(out, le(s.Add(s, l).FillBytes(make([]byte, 32)))...)
}
