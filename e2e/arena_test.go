package e2e

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/svcforum/svc/sdk"
)

// TestScenarioArenaClaimRace is the arena on two replicas of the built image over one PostgreSQL: the
// operator opens a match from a one-off container; the seat's agent, through the Go SDK, gets a grant
// ticket on one replica that verifies with the JWKS the other publishes; then 50 runners of the agent,
// each having polled, claim the seat's one start intent at once, half through each replica, and exactly
// one claim wins: every other runner gets 409 intent_already_claimed.
func TestScenarioArenaClaimRace(t *testing.T) {
	t.Parallel()
	ctx := begin(t)
	nw := newNetwork(t, ctx)
	startPostgres(t, ctx, nw)
	grantKey := base64.StdEncoding.EncodeToString(make([]byte, 32)) // a fixed seed: the test's own key
	env := map[string]string{"SVC_DATABASE_URL": databaseURL, "SVC_BASE_URL": baseURL, "SVC_ARENA_GRANT_KEY": grantKey,
		// 50 runners of one agent poll and claim at once: more than an agent's default rate.
		"SVC_SIGV1_ATTEMPTS_PER_WINDOW": "100000", "SVC_SIGV1_WRITES_PER_WINDOW": "100000"}
	run := func(cmd ...string) result { return runOnce(t, ctx, nw, env, cmd...) }
	if res := run("migrate"); res.ExitCode != 0 {
		t.Fatalf("migrate: exit %d: %s", res.ExitCode, res.Stderr)
	}
	org, _ := admin(t, ctx, run, "org", "create", "--name", "Arena Team")["org_id"].(string)
	player := addAgent(t, ctx, run, org, "player")
	match := admin(t, ctx, run, "arena", "match", "create", "--seat", "white="+player.AgentID)
	matchID, _ := match["match_id"].(string)
	intents, _ := match["intents"].([]any)
	if matchID == "" || len(intents) != 1 {
		t.Fatalf("match create: %v", match)
	}
	intentID := intents[0].(map[string]any)["intent_id"].(string)

	a := startService(t, ctx, nw, env)
	b := startService(t, ctx, nw, env)
	players := []*sdk.Client{sdkClient(t, ctx, a, player), sdkClient(t, ctx, b, player)}

	// A ticket issued by one replica verifies with the keys the other publishes.
	session, _, _ := ed25519.GenerateKey(rand.Reader)
	var granted sdk.ResponseInfo
	ticket, err := players[0].RequestGrant(ctx, matchID, sdk.NewGrantRequest("white", session), sdk.WithIdempotencyKey("grant-1"), sdk.WithResponseInfo(&granted))
	if err != nil || granted.Status != http.StatusCreated {
		t.Fatalf("grant: %d %v", granted.Status, err)
	}
	var jwks jose.JSONWebKeySet
	if err := json.Unmarshal(mustFetch(t, ctx, b.URL+"/arena/grant-keys.json").Body, &jwks); err != nil || len(jwks.Keys) != 1 {
		t.Fatalf("JWKS of the other replica: %v %v", err, jwks)
	}
	tok, err := jwt.ParseSigned(ticket.Ticket, []jose.SignatureAlgorithm{jose.EdDSA})
	if err != nil {
		t.Fatalf("ticket: %v", err)
	}
	var claims jwt.Claims
	if err := tok.Claims(jwks.Keys[0].Public(), &claims); err != nil || claims.Subject != player.AgentID || !claims.Audience.Contains(matchID) {
		t.Fatalf("the ticket does not verify with the other replica's JWKS: %v %+v", err, claims)
	}

	// 50 runners, each polled, claim at once across both replicas.
	const runners = 50
	ids := make([]string, runners)
	for i := range ids {
		ids[i] = fmt.Sprintf("01a22000-0000-7000-8000-%012d", i)
		list, err := players[i%2].PollStartIntents(ctx, sdk.RunnerPoll{RunnerID: ids[i], Availability: sdk.RunnerOnline})
		if err != nil || len(list.Intents) != 1 {
			t.Fatalf("runner %d sees %+v (%v)", i, list, err)
		}
	}
	failed := make([]error, runners)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			<-start
			_, failed[i] = players[i%2].ClaimStartIntent(ctx, intentID, sdk.ClaimRequest{RunnerID: id}, sdk.WithIdempotencyKey("claim-"+id))
		})
	}
	close(start)
	wg.Wait()
	won := 0
	for i, err := range failed {
		var p *sdk.Problem
		switch {
		case err == nil:
			won++
		case !errors.As(err, &p) || p.Status != http.StatusConflict || p.Code != sdk.CodeIntentAlreadyClaimed:
			t.Errorf("runner %d: %v", i, err)
		}
	}
	if won != 1 {
		t.Fatalf("%d claims won, want exactly 1", won)
	}
	shown := admin(t, ctx, run, "arena", "match", "show", "--match", matchID)
	if it := shown["intents"].([]any)[0].(map[string]any); it["state"] != "claimed" || it["runner_id"] == nil {
		t.Fatalf("the intent after the race: %v", it)
	}
}
