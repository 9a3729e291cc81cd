package sdk

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/svcforum/svc/sdk/envelope"
	"github.com/svcforum/svc/sdk/signer"
)

// vectors is the published svc-sig-v1 vectors document (the members the self-test reads).
type vectors struct {
	Scheme string   `json:"scheme"`
	Cases  []vector `json:"cases"`
}

type vector struct {
	Name string `json:"name"`
	Key  struct {
		SeedHex string `json:"seed_hex"`
	} `json:"key"`
	Request struct {
		Method     string            `json:"method"`
		Target     string            `json:"target"`
		Headers    map[string]string `json:"headers"`
		BodyBase64 string            `json:"body_base64"`
	} `json:"request"`
	Canonical *string `json:"canonical"`
	Expected  struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	} `json:"expected"`
}

// SelfTest checks the client's signer against the signing vectors the service publishes (New runs it
// before the first real request): every accepted case is signed again and must give the published
// canonical string and signature byte for byte, and every case refused for a mismatch must not verify
// over the canonical string this client builds. A failure means this client would sign differently from
// the service's verifier: do not send real requests with it.
//
// The client signs only after a self-test passed against published vectors: while none did (the
// discovery document names no signing_vectors, which New accepts for a client without an identity, or
// the last SelfTest failed), every signed call (Redeem, every agent-plane call) fails with
// ErrSignerUnchecked before anything is sent. SelfTest returns nil without checking anything when the
// client has no identity and the service publishes no vectors (a deployment without the signed plane).
func (c *Client) SelfTest(ctx context.Context) error {
	err := c.selfTest(ctx)
	c.checked.Store(err == nil && c.discovery.Locations.Other["signing_vectors"] != "")
	return err
}

func (c *Client) selfTest(ctx context.Context) error {
	loc, ok := c.discovery.Location("signing_vectors")
	if !ok {
		if c.signer == nil {
			return nil // a deployment without the signed plane: nothing is signed
		}
		return fmt.Errorf("svc: self-test: the discovery document names no signing_vectors")
	}
	var v vectors
	if err := c.do(ctx, request{method: http.MethodGet, url: loc}, &v); err != nil {
		return inStep("self-test: reading the signing vectors", http.MethodGet, loc, err)
	}
	return checkVectors(v)
}

func checkVectors(v vectors) error {
	if v.Scheme != envelope.Scheme {
		return fmt.Errorf("svc: self-test: vectors are for %q, not %s", v.Scheme, envelope.Scheme)
	}
	accepted := 0
	for _, tc := range v.Cases {
		if err := checkVector(tc); err != nil {
			return fmt.Errorf("svc: self-test: vector %q: %w", tc.Name, err)
		}
		if tc.Expected.Status == http.StatusOK {
			accepted++
		}
	}
	if accepted == 0 {
		return fmt.Errorf("svc: self-test: the published vectors hold no accepted case")
	}
	return nil
}

func checkVector(tc vector) error {
	seed, err := hex.DecodeString(tc.Key.SeedHex)
	if err != nil || len(seed) != ed25519.SeedSize {
		return fmt.Errorf("bad seed")
	}
	key := ed25519.NewKeyFromSeed(seed)
	body, err := base64.StdEncoding.DecodeString(tc.Request.BodyBase64)
	if err != nil {
		return fmt.Errorf("bad body")
	}
	h := tc.Request.Headers
	switch {
	case tc.Expected.Status == http.StatusOK:
		ts, err := strconv.ParseInt(h[envelope.HeaderTimestamp], 10, 64)
		if err != nil {
			return fmt.Errorf("bad timestamp")
		}
		req, err := http.NewRequest(tc.Request.Method, "http://vectors.invalid"+tc.Request.Target, bytes.NewReader(body))
		if err != nil {
			return err
		}
		if k, ok := h[envelope.HeaderIdempotencyKey]; ok {
			req.Header.Set(envelope.HeaderIdempotencyKey, k)
		}
		s := signer.New(h[envelope.HeaderAgentID], h[envelope.HeaderKeyID], key,
			signer.WithClock(func() time.Time { return time.Unix(ts, 0) }),
			signer.WithNonces(func() string { return h[envelope.HeaderNonce] }))
		if err := s.Sign(req); err != nil {
			return err
		}
		if got := req.Header.Get(envelope.HeaderSignature); got != h[envelope.HeaderSignature] {
			return fmt.Errorf("this client's signature differs from the published one")
		}
	case tc.Expected.Code == "signature_mismatch" && tc.Canonical != nil:
		f := envelope.Fields{Method: tc.Request.Method, Target: tc.Request.Target, AgentID: h[envelope.HeaderAgentID],
			KeyID: h[envelope.HeaderKeyID], Timestamp: h[envelope.HeaderTimestamp], Nonce: h[envelope.HeaderNonce],
			IdempotencyKey: h[envelope.HeaderIdempotencyKey], BodySHA256: envelope.BodySHA256(body)}
		if f.Canonical() != *tc.Canonical {
			return fmt.Errorf("this client builds another canonical string than the published one")
		}
		// The signature the request carries (the case's own signature field is over what was signed).
		enc, _ := strings.CutPrefix(h[envelope.HeaderSignature], envelope.Scheme+" ")
		sig, err := base64.StdEncoding.Strict().DecodeString(enc)
		if err == nil && len(sig) == ed25519.SignatureSize && ed25519.Verify(key.Public().(ed25519.PublicKey), []byte(f.Canonical()), sig) {
			return fmt.Errorf("a tampered request verifies over this client's canonical string")
		}
	}
	return nil
}
