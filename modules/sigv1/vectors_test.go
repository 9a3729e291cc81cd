package sigv1_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/modules/sigv1/internal/vectorgen"
	"github.com/svcforum/svc/sdk/signer"
)

const vectorsFile = "../../contracts/signing/svc-sig-v1-vectors.json"

func loadVectors(t *testing.T) vectorgen.File {
	t.Helper()
	b, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("%v; run go run ./cmd/sigv1-vectors to write it", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var f vectorgen.File
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", vectorsFile, err)
	}
	return f
}

// TestSigningVectors checks every published case with ParseHeaders, Canonical, CheckFreshness and
// Verify, in WIRE.md's order, against its expected verdict.
func TestSigningVectors(t *testing.T) {
	f := loadVectors(t)
	if f.Scheme != sigv1.Scheme || time.Duration(f.MaxSkewSeconds)*time.Second != sigv1.MaxSkew {
		t.Fatalf("scheme %q, max skew %d", f.Scheme, f.MaxSkewSeconds)
	}
	codes := map[string]int{}
	names := map[string]bool{}
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			if names[c.Name] || c.Name == "" || c.Description == "" {
				t.Fatalf("name repeated or empty, or no description")
			}
			names[c.Name] = true
			codes[c.Expected.Code]++

			seed, err := hex.DecodeString(c.Key.SeedHex)
			if err != nil || len(seed) != ed25519.SeedSize {
				t.Fatalf("seed: %v", err)
			}
			key := ed25519.NewKeyFromSeed(seed)
			pub, err := sigv1.ParsePublicKey(c.Key.PublicKeyBase64)
			if err != nil || !pub.Equal(key.Public()) {
				t.Fatalf("public key does not belong to the seed or is refused: %v", err)
			}
			body, err := base64.StdEncoding.DecodeString(c.Request.BodyBase64)
			if err != nil || string(body) != c.Request.Body {
				t.Fatalf("body and body_base64 disagree: %v", err)
			}
			if sigv1.BodySHA256(body) != c.BodySHA256 {
				t.Fatalf("body_sha256 %s, computed %s", c.BodySHA256, sigv1.BodySHA256(body))
			}
			if want := base64.StdEncoding.EncodeToString(ed25519.Sign(key, []byte(c.SignedCanonical))); c.Signature != want {
				t.Fatalf("signature is not the Ed25519 signature of signed_canonical")
			}

			h := http.Header{}
			for k, v := range c.Request.Headers {
				h.Set(k, v)
			}
			status, code := 0, ""
			env, err := sigv1.ParseHeaders(c.Request.Method, c.Request.Target, h)
			var p *problem.Problem
			switch {
			case errors.As(err, &p):
				status, code = p.Status, string(p.Code)
				if c.Canonical != nil {
					t.Errorf("refused with %s, but the case has a canonical string", p.Code)
				}
			case err != nil:
				t.Fatalf("ParseHeaders: %v", err)
			default:
				env.BodySHA256 = sigv1.BodySHA256(body)
				if c.Canonical == nil || env.Canonical() != *c.Canonical {
					t.Fatalf("canonical:\n%q\nfile:\n%v", env.Canonical(), c.Canonical)
				}
				verified := sigv1.Verify(pub, env)
				ts, _ := strconv.ParseInt(c.Request.Headers[sigv1.HeaderTimestamp], 10, 64)
				skew := ts - c.ServerTime
				fresh := skew >= -int64(f.MaxSkewSeconds) && skew <= int64(f.MaxSkewSeconds)
				if ferr := env.CheckFreshness(time.Unix(c.ServerTime, 0)); (ferr == nil) != fresh {
					t.Fatalf("CheckFreshness %v with skew %d s", ferr, skew)
				}
				switch {
				case !fresh:
					status, code = http.StatusUnauthorized, string(problem.StaleTimestamp)
					// A stale case is otherwise a good request: only the clock refuses it.
					if !verified || *c.Canonical != c.SignedCanonical {
						t.Fatalf("stale case whose signature does not verify")
					}
				case !verified:
					status, code = http.StatusUnauthorized, string(problem.SignatureMismatch)
				default:
					status, code = http.StatusOK, "ok"
				}
			}
			if status != c.Expected.Status || code != c.Expected.Code {
				t.Fatalf("verdict %d %s, file says %d %s", status, code, c.Expected.Status, c.Expected.Code)
			}
			if code == "ok" {
				if *c.Canonical != c.SignedCanonical || c.Request.Headers[sigv1.HeaderSignature] != sigv1.Scheme+" "+c.Signature {
					t.Fatal("an accepted case whose request is not what was signed")
				}
			}
		})
	}
	for _, code := range []string{"ok", "signature_mismatch", "stale_timestamp", "malformed_signature_headers",
		"unsupported_signature_version"} {
		if codes[code] == 0 {
			t.Errorf("no case expects %s", code)
		}
	}
	t.Logf("%d signing vectors: %v", len(f.Cases), codes)
}

// TestSignerReproducesVectors: the Go signer, given a case's key, clock and nonce, produces exactly the
// headers of every case that was sent as signed (accepted and stale cases).
func TestSignerReproducesVectors(t *testing.T) {
	var n int
	for _, c := range loadVectors(t).Cases {
		if c.Expected.Code != "ok" && c.Expected.Code != string(problem.StaleTimestamp) {
			continue
		}
		n++
		seed, _ := hex.DecodeString(c.Key.SeedHex)
		body, _ := base64.StdEncoding.DecodeString(c.Request.BodyBase64)
		hd := c.Request.Headers
		ts, _ := strconv.ParseInt(hd[sigv1.HeaderTimestamp], 10, 64)
		s := signer.New(hd[sigv1.HeaderAgentID], hd[sigv1.HeaderKeyID], ed25519.NewKeyFromSeed(seed),
			signer.WithClock(func() time.Time { return time.Unix(ts, 0) }),
			signer.WithNonces(func() string { return hd[sigv1.HeaderNonce] }))
		req, err := http.NewRequest(c.Request.Method, "https://svc.example"+c.Request.Target, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if k, ok := hd[sigv1.HeaderIdempotencyKey]; ok {
			req.Header.Set(sigv1.HeaderIdempotencyKey, k)
		}
		if err := s.Sign(req); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if len(req.Header) != len(hd) {
			t.Errorf("%s: signer set %d headers, the case has %d", c.Name, len(req.Header), len(hd))
		}
		for k, v := range hd {
			if got := req.Header.Values(k); len(got) != 1 || got[0] != v {
				t.Errorf("%s: %s = %q, case has %q", c.Name, k, got, v)
			}
		}
	}
	if n == 0 {
		t.Fatal("no case to reproduce")
	}
}
