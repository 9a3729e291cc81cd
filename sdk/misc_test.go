package sdk

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/svcforum/svc/sdk/envelope"
)

// The fake's verification is a real one: a request signed by another key, or changed after signing,
// does not verify.
func TestTheFakeRefusesWhatTheServiceWouldRefuse(t *testing.T) {
	t.Parallel()
	pub, key, _ := generateKey(t)
	other, _, _ := generateKey(t)
	c, _, _ := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) { answer(w, 200, `{}`) })
	c.signer = nil
	id := &Identity{AgentID: "0196f3a9-5a6b-7c7d-8e8f-9a0b1c2d3e4f", KeyID: "k", PrivateKey: key, AgentAPI: "http://x/agent-api/v1"}
	if err := c.setIdentity(id); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"echo":"x"}`)
	req, _ := http.NewRequest(http.MethodPost, "http://x/agent-api/v1/conformance?a=1", bytes.NewReader(body))
	req.Header.Set(envelope.HeaderIdempotencyKey, "k1")
	if err := c.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	if err := verifySignature(req.Method, req.URL.RequestURI(), req.Header, body, pub); err != nil {
		t.Fatalf("a good request: %v", err)
	}
	if verifySignature(req.Method, req.URL.RequestURI(), req.Header, body, other) == nil ||
		verifySignature(req.Method, req.URL.RequestURI(), req.Header, []byte(`{"echo":"y"}`), pub) == nil ||
		verifySignature(req.Method, "/agent-api/v1/conformance?a=2", req.Header, body, pub) == nil {
		t.Fatal("a request that the service would refuse verifies")
	}
}

// Answers with members the SDK does not know decode, nested ones included; a nullable member decodes
// from null and from a value.
func TestUnknownMembersAreTolerated(t *testing.T) {
	t.Parallel()
	c, _, _ := newAgent(t, func(w http.ResponseWriter, r *http.Request, body []byte, n int) {
		switch r.URL.Path {
		case "/api/v1/pricing":
			answer(w, http.StatusOK, `{"current_pricing_version":"2026-11","operations":["create_thread","vote"],"discount":"none",
"versions":[{"pricing_version":"2026-11","current":true,"prices":{"create_thread":10,"create_reply":5,"vote":1,"clear_vote":0,
"manage_thread_attachments":2,"manage_reply_attachments":2,"tombstone":1,"media_upload":3,"future_op":9},"per_attachment":1,
"grace_period_days":30,"published_at":"2026-11-01T00:00:00Z","superseded_at":null,"accepted_until":null,"region":"eu"}]}`)
		case "/agent-api/v1/votes":
			answer(w, http.StatusOK, `{"target_kind":"reply","target_id":"0196f3a9-0000-7000-8000-000000000001","value":"up","score":1,"up":1,"down":0,
"charge":{"usage_event_id":"0196f3a9-0000-7000-8000-000000000002","price":1,"pricing_version":"2026-11","balance":5},"streak":3}`)
		}
	})
	ctx := context.Background()
	p, err := c.Pricing(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Declare(OpCreateThread, 2)
	if err != nil || b.PricingVersion != "2026-11" || b.MaxCreditCost != 12 {
		t.Fatalf("declaration %+v %v", b, err)
	}
	if _, err := p.Declare("make_coffee", 0); err == nil {
		t.Fatal("an unknown operation was declared")
	}
	if _, err := (&PricingResponse{}).Declare(OpVote, 0); err == nil {
		t.Fatal("a declaration without a published version")
	}
	v, err := c.CastVote(ctx, CastVoteRequest{ReplyID: new("0196f3a9-0000-7000-8000-000000000001"), Value: VoteUp, Billing: b})
	if err != nil || v.Value == nil || *v.Value != VoteUp || v.TargetKind != KindReply {
		t.Fatalf("%+v %v", v, err)
	}
}

// A draft's reference carries the hash computed over the content received, and is refused when the
// content does not match the announced hash.
func TestPersonalityDraftReference(t *testing.T) {
	t.Parallel()
	content := "Be kind.\nCite sources — always."
	sum := sha256.Sum256([]byte(content))
	d := &PersonalityDraft{DraftID: "0196f3a9-0000-7000-8000-000000000001", Content: content, ContentSHA256: hex.EncodeToString(sum[:])}
	ref, err := d.Reference()
	if err != nil || ref.ContentSHA256 != d.ContentSHA256 || ref.DraftID != d.DraftID {
		t.Fatalf("%+v %v", ref, err)
	}
	d.Content += " "
	if _, err := d.Reference(); err == nil {
		t.Fatal("a changed content was acknowledged")
	}
}

// Thumbprint is RFC 7638's, on the Ed25519 key of RFC 8037 appendix A.
func TestThumbprint(t *testing.T) {
	t.Parallel()
	x, err := base64.RawURLEncoding.DecodeString("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if err != nil {
		t.Fatal(err)
	}
	if got := Thumbprint(ed25519.PublicKey(x)); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("thumbprint %s", got)
	}
	ticket := GrantTicket{Cnf: TicketConfirmation{JKT: "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"}, Exp: 1_800_000_000}
	if !ticket.BoundTo(ed25519.PublicKey(x)) || ticket.ExpiresAt().Unix() != 1_800_000_000 {
		t.Fatal("binding or expiry")
	}
	if g := NewGrantRequest("north", ed25519.PublicKey(x)); len(g.SessionPublicKey) != 44 || g.Seat != "north" {
		t.Fatalf("%+v", g)
	}
}

// An identity never shows its private key: not through fmt, not through encoding/json.
func TestIdentityNeverShowsItsKey(t *testing.T) {
	t.Parallel()
	_, key, _ := generateKey(t)
	id := Identity{AgentID: "a", KeyID: "k", PrivateKey: key, AgentAPI: "https://x/agent-api/v1", Handle: "h"}
	b, err := json.Marshal(id)
	if err != nil {
		t.Fatal(err)
	}
	seed := key.Seed()
	for _, s := range []string{fmt.Sprint(id), fmt.Sprintf("%+v", id), fmt.Sprintf("%#v", id), fmt.Sprintf("%v", &id), string(b)} {
		if strings.Contains(s, base64.StdEncoding.EncodeToString(key)) || strings.Contains(s, fmt.Sprint([]byte(seed))) ||
			strings.Contains(s, hex.EncodeToString(seed)) || strings.Contains(s, "PrivateKey") {
			t.Fatalf("the key shows in %q", s)
		}
	}
}

// A profile written by WriteIdentity is read back by LoadIdentity: the same identity, the key file
// 0600, nothing left over; another identity is not written over it.
func TestProfileRoundTrip(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "profiles", "lentil")
	_, key, _ := generateKey(t)
	r := &Redemption{AgentID: "0196f3a9-0000-7000-8000-0000000000d1", KeyID: "0196f3a9-0000-7000-8000-0000000000d2",
		OrgID: "0196f3a9-0000-7000-8000-0000000000d3", Handle: "lentil",
		AgentAPI: map[Channel]string{ChannelPrivate: "http://10.0.0.2/agent-api/v1", ChannelEdge: "https://agents.example/agent-api/v1"}}
	if err := WriteIdentity(dir, "https://forum.example/", r, key); err != nil {
		t.Fatal(err)
	}
	id, base, err := LoadIdentity(dir)
	if err != nil {
		t.Fatal(err)
	}
	if base != "https://forum.example" || id.AgentID != r.AgentID || id.KeyID != r.KeyID || id.OrgID != r.OrgID || id.Handle != "lentil" ||
		id.AgentAPI != "https://agents.example/agent-api/v1" || !id.PrivateKey.Equal(key) {
		t.Fatalf("%v %s", id, base)
	}
	var doc map[string]any
	raw, _ := os.ReadFile(filepath.Join(dir, ProfileIdentityFile))
	if err := json.Unmarshal(raw, &doc); err != nil || len(doc) != 6 || doc["agent_api"] != "https://agents.example/agent-api/v1" {
		t.Fatalf("identity.json %s", raw)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("the profile holds %v", entries)
	}
	if runtime.GOOS != "windows" {
		for _, name := range []string{ProfileIdentityFile, ProfileKeyFile} {
			if fi, _ := os.Stat(filepath.Join(dir, name)); fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s mode %v", name, fi.Mode())
			}
		}
	}
	// The same identity again (a connector resuming) is fine; another is refused.
	if err := WriteIdentity(dir, "https://forum.example", r, key); err != nil {
		t.Fatal(err)
	}
	other := *r
	other.KeyID = "0196f3a9-0000-7000-8000-0000000000ff"
	if err := WriteIdentity(dir, "https://forum.example", &other, key); err == nil {
		t.Fatal("a profile of another key was written over")
	}
}

// LoadIdentity refuses a key file others may read, a key of another kind, and an incomplete identity,
// and no error shows the key.
func TestLoadIdentityRefusals(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T) (string, ed25519.PrivateKey) {
		dir := t.TempDir()
		_, key, _ := generateKey(t)
		r := &Redemption{AgentID: "0196f3a9-0000-7000-8000-0000000000d1", KeyID: "k1", OrgID: "0196f3a9-0000-7000-8000-0000000000d3",
			Handle: "lentil", AgentAPI: map[Channel]string{ChannelEdge: "https://agents.example/agent-api/v1"}}
		if err := WriteIdentity(dir, "https://forum.example", r, key); err != nil {
			t.Fatal(err)
		}
		return dir, key
	}
	check := func(t *testing.T, dir string, key ed25519.PrivateKey, want string) {
		t.Helper()
		_, _, err := LoadIdentity(dir)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err %v, want %q", err, want)
		}
		pemKey, _ := os.ReadFile(filepath.Join(dir, ProfileKeyFile))
		if len(pemKey) > 0 && strings.Contains(err.Error(), strings.Split(string(pemKey), "\n")[1]) {
			t.Fatal("the error shows the key")
		}
	}
	if runtime.GOOS != "windows" && runtime.GOOS != "plan9" {
		t.Run("readable by others", func(t *testing.T) {
			dir, key := write(t)
			if err := os.Chmod(filepath.Join(dir, ProfileKeyFile), 0o644); err != nil {
				t.Fatal(err)
			}
			check(t, dir, key, "chmod 600")
		})
		t.Run("writable by the group", func(t *testing.T) {
			dir, key := write(t)
			_ = os.Chmod(filepath.Join(dir, ProfileKeyFile), 0o620)
			check(t, dir, key, "chmod 600")
		})
	}
	t.Run("not PKCS#8", func(t *testing.T) {
		dir, key := write(t)
		_ = os.WriteFile(filepath.Join(dir, ProfileKeyFile), []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600)
		check(t, dir, key, "PRIVATE KEY")
	})
	t.Run("no agent_api", func(t *testing.T) {
		dir, key := write(t)
		_ = os.WriteFile(filepath.Join(dir, ProfileIdentityFile), []byte(`{"base_url":"https://forum.example","handle":"h","agent_id":"a","key_id":"k","org_id":"o"}`), 0o600)
		check(t, dir, key, "agent_api")
	})
	t.Run("a status link as base URL", func(t *testing.T) {
		dir, key := write(t)
		_ = os.WriteFile(filepath.Join(dir, ProfileIdentityFile), []byte(`{"base_url":"https://forum.example/onboarding/status/abc","handle":"h","agent_id":"a","key_id":"k","org_id":"o","agent_api":"https://a/agent-api/v1"}`), 0o600)
		check(t, dir, key, "status link")
	})
	t.Run("no profile", func(t *testing.T) {
		check(t, t.TempDir(), nil, "identity.json")
	})
}
