package arena_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/testkit"
)

// What a review of the arena found: the one text a runner sends passes the content policy and is never
// a private key; a private key sent for a session key is refused as such; a live ticket whose key was
// dropped is not answered again; an intent never outlives its match's window, and none is created for a
// match that does not grant.
func TestArenaHardening(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		cfg, _ := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		alice := agent("alice")
		m := w.open(t, map[string]port.Principal{"north": alice})
		intent := intentOf(t, m, "north")
		runner := "01a23000-0000-7000-8000-000000000001"
		w.polled(t, alice, runner)

		testkit.Expect(t, w.claim(t, alice, intent, `{"runner_id":"`+runner+`","declared_model":"model\u202etxt.exe"}`), http.StatusBadRequest, string(problem.ContentPolicyViolation))
		seed := make([]byte, ed25519.SeedSize)
		testkit.Expect(t, w.claim(t, alice, intent, `{"runner_id":"`+runner+`","declared_model":"seed: `+hex.EncodeToString(seed)+`"}`),
			http.StatusUnprocessableEntity, string(problem.PrivateKeyRefused))

		priv := ed25519.NewKeyFromSeed(seed)
		testkit.Expect(t, w.post(t, alice, "/arena/matches/"+m.MatchID+"/grant", `{"seat":"north","session_public_key":"`+privateB64(priv)+`"}`),
			http.StatusUnprocessableEntity, string(problem.PrivateKeyRefused))

		// A ticket signed by a key the operator then dropped is not handed out again.
		_, key := sessionKey(t)
		first := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key))
		other, _ := keyedConfig(t)
		w.configure(t, other)
		second := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key))
		if second.Ticket == first.Ticket || second.KeyID == first.KeyID {
			t.Fatalf("a ticket no configured key verifies was answered again: %s", second.KeyID)
		}

		// Intents end with the window; none is made for a match that no longer grants.
		short, err := w.matches.Create(ctx, map[string]string{"north": alice.AgentID}, w.clock.Now(), w.clock.Now().Add(10*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if got := short.Intents[0].ExpiresAt; !got.Equal(short.GrantsUntil) {
			t.Fatalf("an intent of a 10-minute window expires at %s, the window ends at %s", got, short.GrantsUntil)
		}
		w.clock.Add(11 * time.Minute)
		if _, err := w.matches.CreateIntent(ctx, short.MatchID, "north"); err == nil {
			t.Fatal("an intent was created for a match that no longer grants")
		}
	})
}

// privateB64 is a 64-byte private key (seed and public key) in standard base64: what a careless client
// might send for its session key.
func privateB64(priv ed25519.PrivateKey) string { return base64.StdEncoding.EncodeToString(priv) }

// A claim's declared_model is a whole value: a private key alone in it, the bare seed and public key
// (64 bytes, in base64 or hex) included, is refused as such (422 private_key_refused at
// /declared_model), never stored, echoed or shown to the operator: the intent stays unclaimed, and the
// runner's next claim is the one that counts.
func TestClaimRefusesABareKeyAsModel(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg, _ := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		alice := agent("alice")
		m := w.open(t, map[string]port.Principal{"north": alice})
		intent := intentOf(t, m, "north")
		runner := "01a23000-0000-7000-8000-000000000001"
		w.polled(t, alice, runner)

		seed := make([]byte, ed25519.SeedSize)
		for i := range seed {
			seed[i] = byte(7 * i)
		}
		priv := ed25519.NewKeyFromSeed(seed)
		for _, key := range []string{privateB64(priv), base64.RawURLEncoding.EncodeToString(priv), hex.EncodeToString(priv)} {
			r := w.claim(t, alice, intent, `{"runner_id":"`+runner+`","declared_model":"`+key+`"}`)
			testkit.Expect(t, r, http.StatusUnprocessableEntity, string(problem.PrivateKeyRefused))
			if p, _ := r.JSON(t)["pointer"].(string); p != "/declared_model" {
				t.Fatalf("pointer %q; body %s", p, testkit.Short(r.Body))
			}
			if bytes.Contains(r.Body, []byte(key[:16])) {
				t.Fatalf("the refusal echoes the key: %s", r.Body)
			}
		}
		r := w.claim(t, alice, intent, `{"runner_id":"`+runner+`","declared_model":"model-x"}`)
		if r.Status != http.StatusOK && r.Status != http.StatusCreated {
			t.Fatalf("the claim after the refusals: %d %s", r.Status, testkit.Short(r.Body))
		}
		if got := r.JSON(t)["declared_model"]; got != "model-x" {
			t.Fatalf("the claim holds declared_model %v: a refused claim was stored", got)
		}
	})
}
