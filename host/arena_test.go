package host

import (
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/arena"
)

// The arena on the assembled service (WIRE.md section 12, issue 15), on both databases: the operator
// opens a match with two seats from the command line; each seat's agent gets a grant ticket for a
// session key it made, which the test verifies with the JWKS the service publishes and the session key;
// a second key is refused while the ticket lives; each agent's runner polls, claims its intent and
// reports starting then running; a third agent sees nothing and can claim nothing.
func TestArenaMatchGrantsAndRunners(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		grantKey, keyID, err := arena.NewGrantKey()
		if err != nil {
			t.Fatal(err)
		}
		cfg := testConfig(t, dialect)
		cfg.Settings = settings{testSettings(), map[string]any{"arena-grant-key": grantKey}}
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		r := start(t, cfg, allModules(t))
		public := "http://" + r.listeners.Addr(ListenerPublic)
		edge := "http://" + r.listeners.Addr(ListenerAgentEdge)

		north, south, third := provision(t, env, "north-"+dialect), provision(t, env, "south-"+dialect), provision(t, env, "third-"+dialect)
		// A seat for an agent no one registered is refused.
		nobody := "0b9d4c1e-3f6a-4e2b-9c71-5d8e2a4f6b13"
		if code, _, stderr := runMain(t, env, "admin", "--json", "arena", "match", "create", "--seat", "north="+north.agentID, "--seat", "south="+nobody); code == 0 ||
			!strings.Contains(stderr, "no agent has the id "+nobody) {
			t.Fatalf("a match with an unregistered agent's seat: exit %d, %s", code, stderr)
		}
		match := admin(t, env, "arena", "match", "create", "--seat", "north="+north.agentID, "--seat", "south="+south.agentID)
		matchID, _ := match["match_id"].(string)
		if match["grants_now"] != true || len(match["intents"].([]any)) != 2 {
			t.Fatalf("the match as opened: %v", match)
		}

		// The JWKS is named in discovery and holds the grant key.
		disc := decodeBody(t, do(t, http.MethodGet, public+"/.well-known/svc", nil), http.StatusOK, "discovery")
		if loc, _ := disc["locations"].(map[string]any)["arena_grant_keys"].(string); !strings.HasSuffix(loc, arena.JWKSPath) {
			t.Fatalf("discovery names the JWKS at %v", disc["locations"])
		}
		var jwks jose.JSONWebKeySet
		if err := json.Unmarshal(do(t, http.MethodGet, public+arena.JWKSPath, nil).body, &jwks); err != nil || len(jwks.Key(keyID)) != 1 {
			t.Fatalf("JWKS: %v, keys %v, want %s", err, jwks.Keys, keyID)
		}

		grant := func(id identity, key, seat string, session ed25519.PublicKey) response {
			body := `{"seat":"` + seat + `","session_public_key":"` + base64.StdEncoding.EncodeToString(session) + `"}`
			return signedWrite(t, id, http.MethodPost, edge, "/arena/matches/"+matchID+"/grant", key, body)
		}
		for _, seat := range []struct {
			id   identity
			name string
		}{{north, "north"}, {south, "south"}} {
			session, _, _ := ed25519.GenerateKey(rand.Reader)
			got := decodeBody(t, grant(seat.id, "grant-"+seat.name, seat.name, session), http.StatusCreated, "grant-ticket")
			tok, err := jwt.ParseSigned(got["ticket"].(string), []jose.SignatureAlgorithm{jose.EdDSA})
			if err != nil || len(tok.Headers) != 1 || tok.Headers[0].KeyID != keyID {
				t.Fatalf("ticket: %v %+v", err, tok)
			}
			var claims struct {
				jwt.Claims
				Seat string `json:"seat"`
				Cnf  struct {
					JKT string `json:"jkt"`
				} `json:"cnf"`
			}
			if err := tok.Claims(jwks.Key(keyID)[0].Public(), &claims); err != nil {
				t.Fatalf("the ticket does not verify with the published key: %v", err)
			}
			if err := claims.Validate(jwt.Expected{Issuer: cfg.BaseURL, Subject: seat.id.agentID, AnyAudience: jwt.Audience{matchID}, Time: time.Now()}); err != nil {
				t.Fatalf("claims %+v: %v", claims, err)
			}
			jkt, err := (&jose.JSONWebKey{Key: session}).Thumbprint(crypto.SHA256)
			if err != nil || claims.Cnf.JKT != base64.RawURLEncoding.EncodeToString(jkt) || claims.Seat != seat.name {
				t.Fatalf("the ticket is not bound to the session key: %+v", claims)
			}
			// Another session key while the ticket lives: 409.
			other, _, _ := ed25519.GenerateKey(rand.Reader)
			checkProblem(t, grant(seat.id, "grant-other-"+seat.name, seat.name, other), http.StatusConflict, "ticket_live_for_other_key")
		}
		// A seat that is not the caller's.
		session, _, _ := ed25519.GenerateKey(rand.Reader)
		checkProblem(t, grant(third, "grant-third", "north", session), http.StatusForbidden, "seat_not_granted")

		// Each runner polls, claims its own intent and reports starting, then running.
		runner := func(id identity, key, runnerID string) []any {
			got := decodeBody(t, signedWrite(t, id, http.MethodPost, edge, "/arena/start-intents/poll", key, `{"runner_id":"`+runnerID+`","availability":"online"}`), http.StatusOK, "start-intent-list")
			return got["intents"].([]any)
		}
		var northIntent string
		for i, seat := range []identity{north, south} {
			runnerID := []string{"01a21000-0000-7000-8000-000000000001", "01a21000-0000-7000-8000-000000000002"}[i]
			intents := runner(seat, "poll-"+seat.agentID, runnerID)
			if len(intents) != 1 {
				t.Fatalf("the runner sees %v", intents)
			}
			intentID := intents[0].(map[string]any)["intent_id"].(string)
			if i == 0 {
				northIntent = intentID
			}
			claim := decodeBody(t, signedWrite(t, seat, http.MethodPost, edge, "/arena/start-intents/"+intentID+"/claim", "claim-"+intentID, `{"runner_id":"`+runnerID+`","declared_model":"local-model"}`), http.StatusOK, "claim-response")
			if claim["state"] != "claimed" || claim["runner_id"] != runnerID {
				t.Fatalf("claim: %v", claim)
			}
			for _, state := range []string{"starting", "running"} {
				st := decodeBody(t, signedWrite(t, seat, http.MethodPost, edge, "/arena/start-intents/"+intentID+"/status", state+"-"+intentID, `{"runner_id":"`+runnerID+`","state":"`+state+`"}`), http.StatusOK, "status-response")
				if st["state"] != state {
					t.Fatalf("status: %v", st)
				}
			}
		}
		// The third agent sees nothing and can claim nothing.
		if intents := runner(third, "poll-third", "01a21000-0000-7000-8000-000000000003"); len(intents) != 0 {
			t.Fatalf("a third agent sees %v", intents)
		}
		checkProblem(t, signedWrite(t, third, http.MethodPost, edge, "/arena/start-intents/"+northIntent+"/claim", "claim-third", `{"runner_id":"01a21000-0000-7000-8000-000000000003"}`),
			http.StatusNotFound, "intent_not_found")

		// A claim retried with its Idempotency-Key is the stored answer; frozen writes stop grants,
		// claims and statuses, never polls.
		again := signedWrite(t, north, http.MethodPost, edge, "/arena/start-intents/"+northIntent+"/claim", "claim-"+northIntent, `{"runner_id":"01a21000-0000-7000-8000-000000000001","declared_model":"local-model"}`)
		if again.status != http.StatusOK || again.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("the claim retried: %d %v", again.status, again.header)
		}
		admin(t, env, "writes", "freeze", "--agent", third.agentID)
		checkProblem(t, grant(third, "grant-frozen", "north", session), http.StatusForbidden, "writes_frozen")
		if intents := runner(third, "poll-frozen", "01a21000-0000-7000-8000-000000000003"); len(intents) != 0 {
			t.Fatalf("a frozen agent's poll: %v", intents)
		}

		shown := admin(t, env, "arena", "match", "show", "--match", matchID)
		for _, it := range shown["intents"].([]any) {
			if it.(map[string]any)["state"] != "running" {
				t.Fatalf("the match as the operator sees it: %v", shown)
			}
		}
	})
}
