package arena_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/testkit"
)

// ticketClaims are a ticket's signed claims as a verifier reads them.
type ticketClaims struct {
	jwt.Claims
	Seat string `json:"seat"`
	Cnf  struct {
		JKT string `json:"jkt"`
	} `json:"cnf"`
}

// verifyTicket checks ticket as a verifier would, with go-jose: a compact JWS with one EdDSA signature
// and the header typ svc-arena-grant+jwt, signed by the key of its kid in set. It returns the signed
// claims (not yet validated) and the kid.
func verifyTicket(t testing.TB, ticket string, set jose.JSONWebKeySet) (ticketClaims, string) {
	t.Helper()
	tok, err := jwt.ParseSigned(ticket, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatalf("parse ticket: %v", err)
	}
	if len(tok.Headers) != 1 {
		t.Fatalf("%d JWS headers", len(tok.Headers))
	}
	h := tok.Headers[0]
	if h.Algorithm != string(jose.EdDSA) || h.ExtraHeaders[jose.HeaderType] != arena.TicketType {
		t.Fatalf("header alg %s typ %v, want EdDSA %s", h.Algorithm, h.ExtraHeaders[jose.HeaderType], arena.TicketType)
	}
	keys := set.Key(h.KeyID)
	if len(keys) != 1 {
		t.Fatalf("the JWKS has %d keys of kid %q", len(keys), h.KeyID)
	}
	pub, isEd := keys[0].Key.(ed25519.PublicKey)
	if !isEd || keys[0].Algorithm != string(jose.EdDSA) || keys[0].Use != "sig" {
		t.Fatalf("the JWKS key %s: %T alg %s use %s", h.KeyID, keys[0].Key, keys[0].Algorithm, keys[0].Use)
	}
	var c ticketClaims
	if err := tok.Claims(pub, &c); err != nil {
		t.Fatalf("the ticket does not verify with the key of its kid: %v", err)
	}
	return c, h.KeyID
}

// checkClear: the members in the clear are the signed claims.
func checkClear(t testing.TB, got arena.GrantTicket, c ticketClaims) {
	t.Helper()
	if got.Issuer != c.Issuer || got.Sub != c.Subject || len(c.Audience) != 1 || got.Aud != c.Audience[0] || got.Seat != c.Seat ||
		c.IssuedAt == nil || got.Iat != c.IssuedAt.Time().Unix() || c.Expiry == nil || got.Exp != c.Expiry.Time().Unix() || got.Cnf.JKT != c.Cnf.JKT {
		t.Fatalf("in the clear %+v, signed %+v", got, c)
	}
}

// thumbprint is the RFC 7638 thumbprint of an Ed25519 key, written out by hand: SHA-256 of the
// required members in lexicographic order, without whitespace.
func thumbprint(pub ed25519.PublicKey) string {
	sum := sha256.Sum256([]byte(`{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func decodeTicket(t testing.TB, r testkit.Result) arena.GrantTicket {
	t.Helper()
	ok(t, r, http.StatusCreated, "grant-ticket")
	var g arena.GrantTicket
	r.Decode(t, &g)
	return g
}

// TestGrant is WIRE.md section 12's grant on both databases: a ticket verified with the served JWKS and
// bound to the session key; the same key again; another key while it lives, and after it expired.
func TestGrant(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg, kid := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		alice, bob := agent("alice"), agent("bob")
		m := w.open(t, map[string]port.Principal{"north": alice, "south": bob})
		pub, b64 := sessionKey(t)

		w.clock.Add(1500 * time.Millisecond) // iat is whole seconds
		r := w.grant(t, alice, m.MatchID, "north", b64)
		got := decodeTicket(t, r)
		set, raw := w.jwks(t)
		if len(set.Keys) != 1 || set.Keys[0].KeyID != kid || !set.Keys[0].IsPublic() || bytes.Contains(raw, []byte(`"d"`)) {
			t.Fatalf("JWKS %s, want the public key %s only", raw, kid)
		}
		c, signedBy := verifyTicket(t, got.Ticket, set)
		if signedBy != kid || got.KeyID != kid {
			t.Fatalf("signed by %s, key_id %s, want %s", signedBy, got.KeyID, kid)
		}
		now := w.clock.Now()
		if err := c.ValidateWithLeeway(jwt.Expected{Issuer: baseURL, Subject: alice.AgentID, AnyAudience: jwt.Audience{m.MatchID}, Time: now}, 0); err != nil {
			t.Fatalf("claims %+v: %v", c, err)
		}
		if c.Seat != "north" || c.ID == "" || c.IssuedAt.Time().Unix() != now.Unix() || c.NotBefore == nil || c.NotBefore.Time().Unix() != now.Unix() {
			t.Fatalf("claims %+v at %s", c, now)
		}
		if ttl := c.Expiry.Time().Sub(c.IssuedAt.Time()); ttl != cfg.TicketTTL {
			t.Fatalf("exp - iat = %s, want %s", ttl, cfg.TicketTTL)
		}
		jkt, err := arena.Thumbprint(pub)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
		if err != nil {
			t.Fatal(err)
		}
		if independent := base64.RawURLEncoding.EncodeToString(sum); jkt != independent || jkt != thumbprint(pub) || c.Cnf.JKT != jkt {
			t.Fatalf("cnf.jkt %s; Thumbprint %s; go-jose %s; by hand %s", c.Cnf.JKT, jkt, independent, thumbprint(pub))
		}
		checkClear(t, got, c)
		// The ticket verifies with the grant key only, and for this match only.
		other, _ := sessionKey(t)
		tok, err := jwt.ParseSigned(got.Ticket, []jose.SignatureAlgorithm{jose.EdDSA})
		if err != nil {
			t.Fatal(err)
		}
		if err := tok.Claims(other, &ticketClaims{}); err == nil {
			t.Fatal("the ticket verifies with a key that is not the grant key")
		}
		if err := c.ValidateWithLeeway(jwt.Expected{AnyAudience: jwt.Audience{newID()}, Time: now}, 0); err == nil {
			t.Fatal("the ticket is good for another match")
		}
		parts := strings.Split(got.Ticket, ".")
		forged := ticketClaims{Claims: c.Claims, Seat: "south"}
		forged.Cnf = c.Cnf
		payload := base64.RawURLEncoding.EncodeToString(mustJSON(t, forged))
		if tok, err := jwt.ParseSigned(parts[0]+"."+payload+"."+parts[2], []jose.SignatureAlgorithm{jose.EdDSA}); err == nil && tok.Claims(set.Keys[0].Key, &ticketClaims{}) == nil {
			t.Fatal("a ticket with a changed payload verifies")
		}

		// The same session key again, while the ticket lives: the same ticket.
		w.clock.Add(time.Minute)
		again := w.grant(t, alice, m.MatchID, "north", b64)
		ok(t, again, http.StatusCreated, "grant-ticket")
		if !bytes.Equal(again.Body, r.Body) {
			t.Fatalf("the same key again: %s, first %s", again.Body, r.Body)
		}
		// Another session key while it lives: 409 until its exp.
		_, b64b := sessionKey(t)
		refused := w.grant(t, alice, m.MatchID, "north", b64b)
		testkit.Expect(t, refused, http.StatusConflict, string(problem.TicketLiveForOtherKey))
		wait := got.Exp - w.clock.Now().Unix()
		if member(t, refused, "retry_after_seconds") != float64(wait) || refused.Header.Get("Retry-After") != strconv.FormatInt(wait, 10) {
			t.Fatalf("retry after %v (header %q), want %d", member(t, refused, "retry_after_seconds"), refused.Header.Get("Retry-After"), wait)
		}
		// The other seat's agent has its own ticket for its own key.
		bobs := decodeTicket(t, w.grant(t, bob, m.MatchID, "south", b64b))
		if bc, _ := verifyTicket(t, bobs.Ticket, set); bc.Subject != bob.AgentID || bc.Seat != "south" || bc.Cnf.JKT != thumbprint(ed25519.PublicKey(mustB64(t, b64b))) {
			t.Fatalf("bob's ticket %+v", bc)
		}
		// At its exp the ticket is gone: another key gets a new ticket.
		w.clock.Set(time.Unix(got.Exp, 0))
		next := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", b64b))
		nc, _ := verifyTicket(t, next.Ticket, set)
		if next.Ticket == got.Ticket || nc.ID == c.ID || nc.Cnf.JKT == jkt || next.Iat != got.Exp || next.Exp-next.Iat != int64(cfg.TicketTTL/time.Second) {
			t.Fatalf("after expiry: %+v, first %+v", next, got)
		}
		checkClear(t, next, nc)
		// The first key, now other than the live ticket's, is refused.
		testkit.Expect(t, w.grant(t, alice, m.MatchID, "north", b64), http.StatusConflict, string(problem.TicketLiveForOtherKey))
	})
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGrantRefusals: every refusal of a grant, by status and code, in the documented order where two
// apply; none of them counts against the seat's grant requests.
func TestGrantRefusals(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg, _ := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		ctx := context.Background()
		alice, bob := agent("alice"), agent("bob")
		m := w.open(t, map[string]port.Principal{"north": alice, "south": bob})
		_, key := sessionKey(t)
		notGranted := func(p port.Principal, matchID, seat string) {
			t.Helper()
			testkit.Expect(t, w.grant(t, p, matchID, seat, key), http.StatusForbidden, string(problem.SeatNotGranted))
		}
		notGranted(alice, newID(), "north")                    // no such match
		notGranted(alice, "not-a-match", "north")              // a malformed id
		notGranted(alice, strings.ToUpper(m.MatchID), "north") // not the id as issued
		notGranted(alice, m.MatchID, "south")                  // bob's seat
		notGranted(alice, m.MatchID, "west")                   // no such seat
		notGranted(alice, m.MatchID, "North")                  // seat names are exact
		notGranted(agent("carol"), m.MatchID, "north")         // not a seat holder
		closed := w.open(t, map[string]port.Principal{"north": alice})
		if _, err := w.matches.Close(ctx, closed.MatchID); err != nil {
			t.Fatal(err)
		}
		notGranted(alice, closed.MatchID, "north")

		// The grant window: from inclusive, until exclusive.
		now := w.clock.Now()
		later, err := w.matches.Create(ctx, map[string]string{"north": alice.AgentID}, now.Add(10*time.Minute), now.Add(20*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		notGranted(alice, later.MatchID, "north")
		w.clock.Set(now.Add(10*time.Minute - time.Second))
		notGranted(alice, later.MatchID, "north")
		w.clock.Set(now.Add(10 * time.Minute))
		decodeTicket(t, w.grant(t, alice, later.MatchID, "north", key))
		w.clock.Set(now.Add(20 * time.Minute))
		notGranted(alice, later.MatchID, "north")
		w.clock.Set(now)

		// Bodies against grant-request.
		for _, body := range []string{
			`{"seat":"north","session_public_key":"` + key[:43] + `"}`,                      // 43 characters
			`{"seat":"north","session_public_key":"` + key[:43] + `A"}`,                     // no padding
			`{"seat":"no spaces","session_public_key":"` + key + `"}`,                       // the seat's pattern
			`{"seat":"","session_public_key":"` + key + `"}`,                                // empty seat
			`{"seat":"` + strings.Repeat("s", 65) + `","session_public_key":"` + key + `"}`, // 65 characters
			`{"seat":"north"}`, // a missing member
			`{"seat":"north","session_public_key":"` + key + `","billing":{"pricing_version":"v1","max_credit_cost":0}}`, // unknown
			`{"seat":"north","Session_Public_Key":"` + key + `"}`,                                                        // a case variant
			`{"seat":"north","session_public_key":"` + key + `","seat":"south"}`,                                         // a duplicate
			`{"seat":"north","session_public_key":"` + key + `"} {}`,                                                     // trailing data
		} {
			testkit.Expect(t, w.post(t, alice, "/arena/matches/"+m.MatchID+"/grant", body), http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		}
		// Keys that are not usable Ed25519 points: the identity (small order), and a non-canonical
		// encoding (y = p, that is 0).
		identity := base64.StdEncoding.EncodeToString(append([]byte{1}, make([]byte, 31)...))
		nonCanonical := make([]byte, 32)
		nonCanonical[0] = 0xed
		for i := 1; i < 31; i++ {
			nonCanonical[i] = 0xff
		}
		nonCanonical[31] = 0x7f
		for b64, detail := range map[string]string{identity: "small order", base64.StdEncoding.EncodeToString(nonCanonical): "canonical"} {
			r := w.grant(t, alice, m.MatchID, "north", b64)
			testkit.Expect(t, r, http.StatusUnprocessableEntity, string(problem.PublicKeyRejected))
			if d, _ := member(t, r, "detail").(string); !strings.Contains(d, detail) || strings.Contains(string(r.Body), b64) {
				t.Fatalf("public_key_rejected %s, want a detail about %q without the key", r.Body, detail)
			}
			// The key is checked before the match: a small-order key for a seat not held is 422 too.
			testkit.Expect(t, w.grant(t, alice, newID(), "west", b64), http.StatusUnprocessableEntity, string(problem.PublicKeyRejected))
		}
		shown, err := w.matches.Show(ctx, m.MatchID)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range shown.Seats {
			if s.GrantRequests != 0 {
				t.Fatalf("refused grants were counted: %+v", shown.Seats)
			}
		}

		// No grant key configured: 503, after the body and key checks, before the seat.
		w.configure(t, arena.DefaultConfig())
		for _, matchID := range []string{m.MatchID, newID()} {
			r := w.grant(t, alice, matchID, "north", key)
			testkit.Expect(t, r, http.StatusServiceUnavailable, string(problem.GrantKeyUnavailable))
			if r.Header.Get("Retry-After") == "" {
				t.Fatalf("503 grant_key_unavailable without Retry-After: %v", r.Header)
			}
		}
		testkit.Expect(t, w.grant(t, alice, m.MatchID, "north", identity), http.StatusUnprocessableEntity, string(problem.PublicKeyRejected))
		if set, raw := w.jwks(t); len(set.Keys) != 0 || !bytes.Equal(bytes.TrimSpace(raw), []byte(`{"keys":[]}`)) {
			t.Fatalf("JWKS without a grant key: %s", raw)
		}
	})
}

// TestGrantRequestsExhausted: a seat's grant requests are limited per match; every request passing the
// checks counts (the live ticket answered again included), a refused one does not; other seats and
// matches have their own count.
func TestGrantRequestsExhausted(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg, _ := keyedConfig(t)
		cfg.GrantRequests = 3
		w := newWorld(t, dialect, cfg)
		alice, bob := agent("alice"), agent("bob")
		m := w.open(t, map[string]port.Principal{"north": alice, "south": bob})
		_, key := sessionKey(t)
		_, other := sessionKey(t)
		decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key))
		testkit.Expect(t, w.grant(t, alice, m.MatchID, "north", other), http.StatusConflict, string(problem.TicketLiveForOtherKey))
		decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key))
		decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key))
		r := w.grant(t, alice, m.MatchID, "north", key)
		testkit.Expect(t, r, http.StatusTooManyRequests, string(problem.GrantRequestsExhausted))
		if s, err := strconv.Atoi(r.Header.Get("Retry-After")); err != nil || s < 1 || member(t, r, "retry_after_seconds") != float64(s) {
			t.Fatalf("429 Retry-After %q, retry_after_seconds %v", r.Header.Get("Retry-After"), member(t, r, "retry_after_seconds"))
		}
		// Still exhausted once the ticket expired: the limit is per match.
		w.clock.Add(cfg.TicketTTL)
		testkit.Expect(t, w.grant(t, alice, m.MatchID, "north", key), http.StatusTooManyRequests, string(problem.GrantRequestsExhausted))
		decodeTicket(t, w.grant(t, bob, m.MatchID, "south", key))
		second := w.open(t, map[string]port.Principal{"north": alice})
		decodeTicket(t, w.grant(t, alice, second.MatchID, "north", key))
		shown, err := w.matches.Show(context.Background(), m.MatchID)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(shown.Seats) != fmt.Sprint([]arena.Seat{{Name: "north", AgentID: alice.AgentID, GrantRequests: 3}, {Name: "south", AgentID: bob.AgentID, GrantRequests: 1}}) {
			t.Fatalf("seats %+v", shown.Seats)
		}
	})
}

// TestConcurrentGrants: eight session keys asking at once for one seat get one ticket and seven 409s,
// on both databases (on PostgreSQL the seat's row serialises them, as across replicas).
func TestConcurrentGrants(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg, _ := keyedConfig(t)
		w := newWorld(t, dialect, cfg)
		alice := agent("alice")
		m := w.open(t, map[string]port.Principal{"north": alice})
		w.slowReads(t, "arena_matches", 50*time.Millisecond) // between reading the live tickets and issuing one
		w.warm(t, 16)
		var wg sync.WaitGroup
		start := make(chan struct{})
		results := make(chan testkit.Result, 8)
		for range 8 {
			_, key := sessionKey(t)
			wg.Go(func() {
				<-start
				results <- w.grant(t, alice, m.MatchID, "north", key)
			})
		}
		close(start)
		wg.Wait()
		close(results)
		count := map[string]int{}
		for r := range results {
			count[fmt.Sprint(r.Status, r.Code)]++
		}
		if count["201"] != 1 || count["409ticket_live_for_other_key"] != 7 {
			t.Fatalf("statuses %v, want one 201 and seven 409 ticket_live_for_other_key", count)
		}
		var n int64
		if err := w.db.Table("arena_tickets").Count(&n).Error; err != nil || n != 1 {
			t.Fatalf("%d tickets stored (%v), want 1", n, err)
		}
	})
}

// TestGrantKeyRotation: with the keys "B,A", tickets signed by A before the rotation still verify with
// the served JWKS, and new tickets are signed by B.
func TestGrantKeyRotation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfgA, kidA := keyedConfig(t)
		w := newWorld(t, dialect, cfgA)
		alice, bob := agent("alice"), agent("bob")
		m := w.open(t, map[string]port.Principal{"north": alice, "south": bob})
		_, key := sessionKey(t)
		signedByA := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key))

		seedB, kidB, err := arena.NewGrantKey()
		if err != nil {
			t.Fatal(err)
		}
		cfgBA := cfgA
		cfgBA.GrantKeys = seedB + "," + cfgA.GrantKeys
		w.configure(t, cfgBA)
		w.clock.Add(time.Minute)
		set, _ := w.jwks(t)
		if len(set.Keys) != 2 || set.Keys[0].KeyID != kidB || set.Keys[1].KeyID != kidA {
			t.Fatalf("JWKS after the rotation: %+v, want %s then %s", set.Keys, kidB, kidA)
		}
		if c, kid := verifyTicket(t, signedByA.Ticket, set); kid != kidA || c.Subject != alice.AgentID {
			t.Fatalf("A's ticket after the rotation: kid %s, claims %+v", kid, c)
		}
		_, bobKey := sessionKey(t)
		signedByB := decodeTicket(t, w.grant(t, bob, m.MatchID, "south", bobKey))
		if c, kid := verifyTicket(t, signedByB.Ticket, set); kid != kidB || signedByB.KeyID != kidB || kidB == kidA || c.Subject != bob.AgentID {
			t.Fatalf("a new ticket after the rotation: kid %s, key_id %s, A %s", kid, signedByB.KeyID, kidA)
		}
		// The live ticket A signed is still the answer for its key; once it expired a new one is B's.
		if again := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key)); again.Ticket != signedByA.Ticket {
			t.Fatal("the live ticket was not answered again after the rotation")
		}
		w.clock.Add(cfgA.TicketTTL)
		if renewed := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", key)); renewed.KeyID != kidB {
			t.Fatalf("a renewed ticket signed by %s, want %s", renewed.KeyID, kidB)
		}
	})
}

// TestGrantSkipsUnverifiableTickets: the live ticket that decides a grant is the latest one a
// configured key signed. Here A signs a ticket, A is dropped (so a ticket for another session key is
// signed by B and expires later), then B is dropped and A is back: A's ticket, still live and
// verifiable, is answered to its key again and keeps every other key out.
func TestGrantSkipsUnverifiableTickets(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfgA, kidA := keyedConfig(t)
		cfgB, kidB := keyedConfig(t)
		w := newWorld(t, dialect, cfgA)
		alice := agent("alice")
		m := w.open(t, map[string]port.Principal{"north": alice})
		_, first := sessionKey(t)
		signedByA := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", first))
		w.configure(t, cfgB)
		w.clock.Add(time.Minute)
		_, second := sessionKey(t)
		if signedByB := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", second)); signedByB.KeyID != kidB {
			t.Fatalf("with A gone, a ticket signed by %s, want %s", signedByB.KeyID, kidB)
		}
		w.configure(t, cfgA)
		if again := decodeTicket(t, w.grant(t, alice, m.MatchID, "north", first)); again.Ticket != signedByA.Ticket || again.KeyID != kidA {
			t.Fatalf("A's live ticket was not answered again: key %s", again.KeyID)
		}
		_, third := sessionKey(t)
		testkit.Expect(t, w.grant(t, alice, m.MatchID, "north", third), http.StatusConflict, string(problem.TicketLiveForOtherKey))
	})
}

// NewGrantKeys reads comma-separated standard-base64 Ed25519 seeds: none is valid (no key); a malformed
// or short seed, or a key given twice, stops start-up. A key's id is its public key's thumbprint.
func TestNewGrantKeys(t *testing.T) {
	t.Parallel()
	seedA, kidA, err := arena.NewGrantKey()
	if err != nil {
		t.Fatal(err)
	}
	seedB, kidB, err := arena.NewGrantKey()
	if err != nil {
		t.Fatal(err)
	}
	if seedA == seedB || kidA == kidB {
		t.Fatal("NewGrantKey made the same key twice")
	}
	raw := mustB64(t, seedA)
	if len(raw) != ed25519.SeedSize {
		t.Fatalf("seed of %d bytes", len(raw))
	}
	if want := thumbprint(ed25519.NewKeyFromSeed(raw).Public().(ed25519.PublicKey)); kidA != want {
		t.Fatalf("key id %s, the public key's thumbprint %s", kidA, want)
	}
	keys := func(s string) (*arena.GrantKeys, error) {
		c := arena.DefaultConfig()
		c.GrantKeys = s
		return arena.NewGrantKeys(c)
	}
	for _, s := range []string{"", "  "} {
		g, err := keys(s)
		if err != nil || len(g.JWKS().Keys) != 0 {
			t.Fatalf("%q: %v, %v", s, g, err)
		}
	}
	g, err := keys(" " + seedA + " , " + seedB + " ")
	if err != nil {
		t.Fatal(err)
	}
	if set := g.JWKS(); len(set.Keys) != 2 || set.Keys[0].KeyID != kidA || set.Keys[1].KeyID != kidB || !set.Keys[0].IsPublic() || !set.Keys[1].IsPublic() {
		t.Fatalf("JWKS %+v", set)
	}
	short := base64.StdEncoding.EncodeToString(raw[:16])
	long := base64.StdEncoding.EncodeToString(append(raw, 0))
	urlSafe := strings.NewReplacer("+", "-", "/", "_").Replace(seedA)
	for _, s := range []string{"not base64!", short, long, seedA + ",", seedA + "," + seedA, seedA + ", " + seedA + " ", seedB + ",%%%%"} {
		if _, err := keys(s); err == nil {
			t.Errorf("the grant keys %q were accepted", s)
		}
	}
	if urlSafe != seedA {
		if _, err := keys(urlSafe); err == nil {
			t.Error("a seed in base64url was accepted")
		}
	}
}
