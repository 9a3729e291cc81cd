package sigv1_test

// Tests of the registry (organisations, agents, keys) and of the operator's switches.

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"
)

// expectProblem fails unless err is a problem with code (and its registered status), and returns it.
func expectProblem(t testing.TB, err error, code problem.Code) *problem.Problem {
	t.Helper()
	var p *problem.Problem
	if !errors.As(err, &p) {
		t.Fatalf("error %v is not a problem, want %s", err, code)
	}
	if p.Code != code {
		t.Fatalf("problem %s (%s), want %s", p.Code, p.Detail, code)
	}
	return p
}

// publicKey returns a fresh valid public key, derived from label, in standard base64.
func publicKey(label string) (string, ed25519.PrivateKey) {
	seed := sha256.Sum256([]byte("registry test key " + label))
	priv := ed25519.NewKeyFromSeed(seed[:])
	return base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)), priv
}

const unknownKeyID = "01890000-0000-7000-8000-000000000000"

// TestRegistryCreateOrgNameBounds: 1 to 200 characters, no control characters, not blank, valid UTF-8.
func TestRegistryCreateOrgNameBounds(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		for name, in := range map[string]string{
			"empty":             "",
			"201 characters":    strings.Repeat("a", 201),
			"201 non-ASCII":     strings.Repeat("é", 201),
			"NUL":               "acme\x00corp",
			"newline":           "acme\ncorp",
			"tab":               "acme\tcorp",
			"DEL":               "acme\x7f",
			"C1 control U+0085": "acme\u0085",
			"blank":             "   ",
			"invalid UTF-8":     "acme\xff",
		} {
			t.Run(name, func(t *testing.T) {
				o, err := w.registry.CreateOrg(ctx, in)
				p := expectProblem(t, err, problem.ValidationFailed)
				if p.Status != 422 || o.ID != "" {
					t.Fatalf("status %d, org %+v", p.Status, o)
				}
			})
		}
		for _, in := range []string{"a", strings.Repeat("z", 200), strings.Repeat("é", 200), "Ünïcode Org ☃"} {
			o, err := w.registry.CreateOrg(ctx, in)
			if err != nil {
				t.Fatalf("name of %d characters refused: %v", len([]rune(in)), err)
			}
			var stored string
			if err := w.db.Table("sigv1_orgs").Where("id = ?", o.ID).Pluck("name", &stored).Error; err != nil || stored != in {
				t.Fatalf("stored name %q, %v; want %q", stored, err, in)
			}
		}
		if n := testkit.CountRows(t, w.db, "sigv1_orgs", ""); n != 4 {
			t.Fatalf("%d organisations, want 4", n)
		}
	})
}

// TestRegistryCreateAgent: the handle pattern, unique handles (conflict), an existing organisation
// (not_found); a new agent is active.
func TestRegistryCreateAgent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		o, err := w.registry.CreateOrg(ctx, "agents inc")
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"", "ab", strings.Repeat("a", 33), "Abc", "ABC", "_abc", "-abc", "ab c", "abc\n",
			"abc.def", "abé", "ab\x00c", " abc"} {
			if _, err := w.registry.CreateAgent(ctx, o.ID, h); err == nil {
				t.Errorf("handle %q accepted", h)
			} else if p := expectProblem(t, err, problem.ValidationFailed); p.Status != 422 {
				t.Errorf("handle %q: status %d", h, p.Status)
			}
		}
		for _, h := range []string{"abc", "0ab", "a_-", strings.Repeat("z", 32), "9-_9"} {
			a, err := w.registry.CreateAgent(ctx, o.ID, h)
			if err != nil {
				t.Fatalf("handle %q refused: %v", h, err)
			}
			if a.State != sigv1.AgentActive || a.OrgID != o.ID || a.Handle != h {
				t.Fatalf("agent %+v", a)
			}
		}
		other, err := w.registry.CreateOrg(ctx, "other inc")
		if err != nil {
			t.Fatal(err)
		}
		_, err = w.registry.CreateAgent(ctx, other.ID, "abc")
		if p := expectProblem(t, err, problem.Conflict); p.Status != 409 {
			t.Fatalf("duplicate handle: status %d", p.Status)
		}
		_, err = w.registry.CreateAgent(ctx, unknownKeyID, "orphan")
		if p := expectProblem(t, err, problem.NotFound); p.Status != 404 {
			t.Fatalf("unknown org: status %d", p.Status)
		}
		if n := testkit.CountRows(t, w.db, "sigv1_agents", ""); n != 5 {
			t.Fatalf("%d agents, want 5", n)
		}
	})
}

// TestRegistryAddKeyRefusesPrivateKeys: a private key in any common form is refused with
// private_key_refused, whose detail never echoes it, and nothing is stored. (A bare 32-byte seed looks
// exactly like a public key and cannot be told apart; it is not tested here.)
func TestRegistryAddKeyRefusesPrivateKeys(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "careless")
		ctx := context.Background()
		_, priv := publicKey("leaked")
		der, err := x509.MarshalPKCS8PrivateKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		pemKey := string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		for name, in := range map[string]string{
			"64-byte key, base64":          base64.StdEncoding.EncodeToString(priv),
			"64-byte key, raw base64url":   base64.RawURLEncoding.EncodeToString(priv),
			"64-byte key, hex":             hex.EncodeToString(priv),
			"PEM PRIVATE KEY":              pemKey,
			"PEM without trailing newline": strings.TrimSpace(pemKey),
			"PKCS #8 DER, base64":          base64.StdEncoding.EncodeToString(der),
			"JWK with d":                   `{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(priv.Public().(ed25519.PublicKey)) + `","d":"` + base64.RawURLEncoding.EncodeToString(priv.Seed()) + `"}`,
		} {
			t.Run(name, func(t *testing.T) {
				k, err := w.registry.AddKey(ctx, a.AgentID, in)
				p := expectProblem(t, err, problem.PrivateKeyRefused)
				if p.Status != 422 || k.ID != "" {
					t.Fatalf("status %d, key %+v", p.Status, k)
				}
				seedB64 := base64.StdEncoding.EncodeToString(priv.Seed())
				for _, secret := range []string{in, seedB64[:20], hex.EncodeToString(priv.Seed())[:20]} {
					if strings.Contains(p.Detail, secret) || strings.Contains(p.Title, secret) {
						t.Fatalf("the problem echoes the private key: %q", p.Detail)
					}
				}
			})
		}
		if n := testkit.CountRows(t, w.db, "sigv1_keys", ""); n != 1 {
			t.Fatalf("%d keys stored, want only the agent's own", n)
		}
	})
}

// TestRegistryAddKeyRefusesWeakKeys: every CCTV key flagged low_order_A (and the non-canonical ones) is
// refused with public_key_rejected, as are malformed encodings.
func TestRegistryAddKeyRefusesWeakKeys(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "weakling")
		ctx := context.Background()
		var vs []cctvVector
		readJSON(t, testdata+"cctv_ed25519vectors.json", &vs)
		seen := map[string]bool{}
		for _, v := range vs {
			if !slices.Contains(v.Flags, "low_order_A") && !slices.Contains(v.Flags, "non_canonical_A") {
				continue
			}
			if seen[v.Key] {
				continue
			}
			seen[v.Key] = true
			_, err := w.registry.AddKey(ctx, a.AgentID, base64.StdEncoding.EncodeToString(mustHex(t, v.Key)))
			if p := expectProblem(t, err, problem.PublicKeyRejected); p.Status != 422 {
				t.Fatalf("key %s: status %d", v.Key, p.Status)
			}
		}
		if len(seen) == 0 {
			t.Fatal("no weak keys in the CCTV file: the test shows nothing")
		}
		good, _ := publicKey("good")
		for _, in := range []string{"", strings.TrimSuffix(good, "="), good + "=", " " + good, good + "\n",
			base64.StdEncoding.EncodeToString(make([]byte, 31)), base64.StdEncoding.EncodeToString(make([]byte, 33))} {
			_, err := w.registry.AddKey(ctx, a.AgentID, in)
			expectProblem(t, err, problem.PublicKeyRejected)
		}
		if n := testkit.CountRows(t, w.db, "sigv1_keys", ""); n != 1 {
			t.Fatalf("%d keys stored, want only the agent's own", n)
		}
		t.Logf("%d distinct weak CCTV keys refused", len(seen))
	})
}

// TestRegistryAddKey: a second key of an agent is accepted and active; the same public key again (for
// the same or another agent) is a conflict; an unknown agent is not_found; the issued key_id is valid.
func TestRegistryAddKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "keyholder")
		b := w.newAgent(t, "keythief")
		ctx := context.Background()
		pub, _ := publicKey("second")
		k, err := w.registry.AddKey(ctx, a.AgentID, pub)
		if err != nil {
			t.Fatal(err)
		}
		if k.State != sigv1.KeyActive || k.AgentID != a.AgentID || k.PublicKey != pub || k.ID == "" || len(k.ID) > 64 {
			t.Fatalf("key %+v", k)
		}
		for _, agentID := range []string{a.AgentID, b.AgentID} {
			_, err := w.registry.AddKey(ctx, agentID, pub)
			if p := expectProblem(t, err, problem.Conflict); p.Status != 409 {
				t.Fatalf("duplicate key: status %d", p.Status)
			}
		}
		other, _ := publicKey("third")
		_, err = w.registry.AddKey(ctx, unknownKeyID, other)
		if p := expectProblem(t, err, problem.NotFound); p.Status != 404 {
			t.Fatalf("unknown agent: status %d", p.Status)
		}
		if n := testkit.CountRows(t, w.db, "sigv1_keys", ""); n != 3 {
			t.Fatalf("%d keys, want 3", n)
		}
	})
}

// TestRegistryRevokeKeyIdempotent: revoking twice succeeds both times and keeps the first revocation
// time; an unknown key is not_found.
func TestRegistryRevokeKeyIdempotent(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "revoker")
		ctx := context.Background()
		first, err := w.registry.RevokeKey(ctx, a.KeyID)
		if err != nil || first.State != sigv1.KeyRevoked || first.RevokedAt == nil {
			t.Fatalf("revoke: %+v, %v", first, err)
		}
		w.clock.Add(time.Hour)
		again, err := w.registry.RevokeKey(ctx, a.KeyID)
		if err != nil || again.State != sigv1.KeyRevoked || again.RevokedAt == nil || !again.RevokedAt.Equal(*first.RevokedAt) {
			t.Fatalf("revoke again: %+v, %v (first revoked at %v)", again, err, first.RevokedAt)
		}
		_, err = w.registry.RevokeKey(ctx, "no-such-key")
		expectProblem(t, err, problem.NotFound)
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "r"), 403, "key_revoked")
	})
}

// TestRegistrySetAgentState: unknown agent not_found; an unknown state is refused; suspend and resume
// round-trip.
func TestRegistrySetAgentState(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "stateful")
		ctx := context.Background()
		_, err := w.registry.SetAgentState(ctx, unknownKeyID, sigv1.AgentSuspended)
		expectProblem(t, err, problem.NotFound)
		if _, err := w.registry.SetAgentState(ctx, a.AgentID, "deleted"); err == nil {
			t.Fatal("state \"deleted\" accepted")
		}
		for _, s := range []string{sigv1.AgentSuspended, sigv1.AgentSuspended, sigv1.AgentActive} {
			got, err := w.registry.SetAgentState(ctx, a.AgentID, s)
			if err != nil || got.State != s {
				t.Fatalf("set %s: %+v, %v", s, got, err)
			}
		}
		testkit.Expect(t, w.send(t, a, "POST", "/conformance", echoBody, "s"), 200, "")
	})
}

// TestSwitchValidation: an unknown channel is validation_failed; freezing an unknown org or agent is
// not_found; an unknown scope is refused; setting a switch twice, or clearing it twice, is harmless.
func TestSwitchValidation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		a := w.newAgent(t, "switched")
		ctx := context.Background()
		for _, ch := range []string{"", "public", "EDGE", "edge "} {
			err := w.switches.SetGate(ctx, ch, false)
			if p := expectProblem(t, err, problem.ValidationFailed); p.Status != 422 {
				t.Fatalf("channel %q: status %d", ch, p.Status)
			}
		}
		expectProblem(t, w.switches.SetFrozen(ctx, sigv1.ScopeOrg, unknownKeyID, true), problem.NotFound)
		expectProblem(t, w.switches.SetFrozen(ctx, sigv1.ScopeAgent, unknownKeyID, true), problem.NotFound)
		expectProblem(t, w.switches.SetFrozen(ctx, sigv1.ScopeOrg, a.AgentID, true), problem.NotFound) // an agent id is no org id
		expectProblem(t, w.switches.SetFrozen(ctx, sigv1.ScopeAgent, a.OrgID, true), problem.NotFound) // and vice versa
		if err := w.switches.SetFrozen(ctx, "planet", "", true); err == nil {
			t.Fatal("scope \"planet\" accepted")
		}
		if n := testkit.CountRows(t, w.db, "sigv1_switches", ""); n != 0 {
			t.Fatalf("refused switches left %d rows", n)
		}

		for range 2 {
			if err := w.switches.SetGate(ctx, plugin.ChannelEdge, false); err != nil {
				t.Fatal(err)
			}
			if err := w.switches.SetFrozen(ctx, sigv1.ScopeOrg, a.OrgID, true); err != nil {
				t.Fatal(err)
			}
			if err := w.switches.SetPaused(ctx, true); err != nil {
				t.Fatal(err)
			}
		}
		if n := testkit.CountRows(t, w.db, "sigv1_switches", ""); n != 3 {
			t.Fatalf("%d switch rows, want 3", n)
		}
		if open, err := w.switches.GateOpen(ctx, plugin.ChannelEdge); err != nil || open {
			t.Fatalf("edge gate open=%v, %v", open, err)
		}
		for range 2 {
			if err := w.switches.SetGate(ctx, plugin.ChannelEdge, true); err != nil {
				t.Fatal(err)
			}
			if err := w.switches.SetFrozen(ctx, sigv1.ScopeOrg, a.OrgID, false); err != nil {
				t.Fatal(err)
			}
			if err := w.switches.SetPaused(ctx, false); err != nil {
				t.Fatal(err)
			}
		}
		if n := testkit.CountRows(t, w.db, "sigv1_switches", ""); n != 0 {
			t.Fatalf("%d switch rows, want 0", n)
		}
		testkit.Expect(t, w.send(t, a, "POST", writePath, noteBody("all clear"), "c"), 201, "")
	})
}
