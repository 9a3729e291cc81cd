package arena_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/testkit"
)

// operation is what agent.json must say of one arena route: its success and its schemas, and the
// arena's codes, by status, in the order the checks run.
type operation struct {
	success  string
	request  string
	response string
	codes    [][2]string // {status, code}, in check order
}

// tools names each arena operation's tool: the contract's one vocabulary (svc-connector's arena
// runner drives them; its MCP server offers none of them to a model).
var tools = map[string]string{
	arena.GrantPath: "request_grant", arena.PollPath: "poll_start_intents",
	arena.ClaimPath: "claim_start_intent", arena.StatusPath: "report_start_intent_status",
}

var operations = map[string]operation{
	arena.GrantPath: {"201", "grant-request", "grant-ticket", [][2]string{
		{"422", "validation_failed"}, {"422", "public_key_rejected"}, {"503", "grant_key_unavailable"},
		{"403", "seat_not_granted"}, {"409", "ticket_live_for_other_key"}, {"429", "grant_requests_exhausted"}}},
	arena.PollPath: {"200", "runner-poll", "start-intent-list", [][2]string{{"422", "validation_failed"}}},
	arena.ClaimPath: {"200", "claim-request", "claim-response", [][2]string{
		{"422", "validation_failed"}, {"404", "intent_not_found"}, {"409", "runner_not_polling"},
		{"409", "intent_already_claimed"}, {"409", "intent_expired"}}},
	arena.StatusPath: {"200", "status-request", "status-response", [][2]string{
		{"422", "validation_failed"}, {"404", "intent_not_found"}, {"409", "intent_not_claimed"},
		{"409", "intent_already_claimed"}, {"409", "status_not_forward"}}},
}

// agent.json describes every route the module mounts, as the module's: the request and answer schemas
// (the answer in both media types, with Idempotent-Replayed on writes), each arena code under its status
// and in the documented check order, no tool (the spec names none for the arena), no billing code (the
// arena is not metered), and every arena code in x-svc-problem-codes as contracts/problem defines it.
func TestContractArenaOpenAPI(t *testing.T) {
	t.Parallel()
	doc := testkit.LoadOpenAPI(t, "openapi/agent.json")
	routes := arena.AgentRoutes(arena.NewAPI(nil, nil, nil, nil))
	if routes.Module != arena.ID || routes.Plane != plugin.Agent || len(routes.Agent) != len(operations) {
		t.Fatalf("routes %+v", routes)
	}
	allCodes := map[string]bool{}
	for _, r := range routes.Agent {
		want, known := operations[r.Path]
		if !known {
			t.Errorf("the route %s %s is not described by this test", r.Method, r.Path)
			continue
		}
		p := testkit.OpenAPIPath(plugin.AgentPrefix + r.Path)
		op, ok := doc.Paths[p][strings.ToLower(r.Method)]
		if !ok {
			t.Errorf("agent.json has no %s %s", r.Method, p)
			continue
		}
		if op.Module != arena.ID {
			t.Errorf("%s %s: x-svc-module %v", r.Method, p, op.Module)
		}
		testkit.CheckTool(t, r.Method+" "+p, op, tools[r.Path])
		if got := op.RequestSchema(); got != want.request {
			t.Errorf("%s %s: request schema %q, want %s", r.Method, p, got, want.request)
		}
		for _, other := range []string{"200", "201", "202", "204"} {
			if _, ok := op.Responses[other]; ok && other != want.success {
				t.Errorf("%s %s declares %s: it answers %s", r.Method, p, other, want.success)
			}
		}
		testkit.CheckAnswerSchema(t, r.Method+" "+p, op, want.success, want.response)
		if replayed := op.Headers(want.success)["Idempotent-Replayed"] != nil; replayed != r.Write {
			t.Errorf("%s %s: write %v, but its %s declares Idempotent-Replayed: %v", r.Method, p, r.Write, want.success, replayed)
		}
		_, order, found := strings.Cut(op.Description, "Problems, in the order the checks run:")
		if !found {
			t.Errorf("%s %s: the description gives no check order", r.Method, p)
		}
		last := -1
		for _, sc := range want.codes {
			status, code := sc[0], sc[1]
			allCodes[code] = true
			if text, _ := op.Responses[status]["description"].(string); !strings.Contains(text, code) {
				t.Errorf("%s %s: the %s response does not name %s", r.Method, p, status, code)
			}
			at := strings.Index(order, status+" "+code)
			if at < 0 {
				t.Errorf("%s %s: the check order does not name %s %s", r.Method, p, status, code)
				continue
			}
			if at < last {
				t.Errorf("%s %s: the check order names %s %s earlier than the check before it runs", r.Method, p, status, code)
			}
			last = at
		}
		for _, billing := range []string{"pricing_version_not_accepted", "price_exceeds_cap", "insufficient_credits", "max_credit_cost"} {
			if op.Names(billing) {
				t.Errorf("%s %s names %s, but the arena is never billed", r.Method, p, billing)
			}
		}
	}
	testkit.CheckProblemCodes(t, doc, slices.Collect(maps.Keys(allCodes))...)
}

// The module's publications name the JWKS as arena_grant_keys where the public routes serve it, and
// every schema the arena's operations use, those they refer to included, each once and each published.
func TestContractArenaPublications(t *testing.T) {
	t.Parallel()
	names, jwks := testkit.SchemaPublications(t, arena.ID, arena.Publications())
	published := map[string]int{}
	for _, name := range names {
		published[name]++
	}
	if len(jwks) != 1 || jwks[0].Name != "arena_grant_keys" || jwks[0].Path != arena.JWKSPath {
		t.Errorf("locations %+v, want arena_grant_keys at %s", jwks, arena.JWKSPath)
	}
	// Every schema the operations name, and those those schemas refer to.
	used := map[string]bool{}
	var queue []string
	for _, op := range operations {
		queue = append(queue, op.request, op.response)
	}
	queue = append(queue, "grant-keys") // the answer of the public JWKS location
	ref := regexp.MustCompile(`"\$ref":\s*"/contracts/schemas/([a-z0-9-]+)\.schema\.json"`)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		if used[name] {
			continue
		}
		used[name] = true
		raw := testkit.ReadContract(t, "schemas/"+name+schema.Suffix)
		for _, m := range ref.FindAllStringSubmatch(string(raw), -1) {
			queue = append(queue, m[1])
		}
	}
	if !used["start-intent"] {
		t.Error("start-intent-list no longer refers to start-intent: the test does not follow references")
	}
	for name := range used {
		if published[name] != 1 {
			t.Errorf("the schema %s is published %d times, want once", name, published[name])
		}
	}
	for name := range published {
		if !used[name] {
			t.Errorf("the arena publishes the schema %s, which none of its operations uses", name)
		}
	}
}

// The agent guide's arena chapter (skill/arena.md) shows bodies the schemas accept, and its example
// ticket verifies, with go-jose, against its example JWKS, for its base URL, match and session key,
// until its exp.
func TestContractArenaSkillExamples(t *testing.T) {
	t.Parallel()
	chapter := string(testkit.ReadContract(t, contracts.SkillChapterFile("arena")))
	if !strings.Contains(chapter, "\n## The arena\n") {
		t.Fatal("the arena chapter has no section The arena")
	}
	const runner = `"runner_id": "5f0c2a8e-9b1d-4c3e-8a7f-2d6b4e1c9a05", `
	const intent = `"intent_id": "0196f410-3c4d-7e5f-8a6b-7c8d9e0f1a3c", `
	examples := map[string]string{
		`{"seat": `:                       "grant-request",
		`{"ticket": `:                     "grant-ticket",
		`{` + runner + `"availability"`:   "runner-poll",
		`{"intents": `:                    "start-intent-list",
		`{` + runner + `"declared_model"`: "claim-request",
		`{` + intent + `"match_id"`:       "claim-response",
		`{` + runner + `"state"`:          "status-request",
		`{` + intent + `"state"`:          "status-response",
		`{"keys": `:                       "",
	}
	blocks := map[string]string{}
	for _, block := range testkit.JSONBlocks(chapter) {
		matched := 0
		for prefix, name := range examples {
			if !strings.HasPrefix(block, prefix) {
				continue
			}
			matched++
			if _, dup := blocks[prefix]; dup {
				t.Errorf("the arena chapter has two examples starting %s", prefix)
			}
			blocks[prefix] = block
			if name == "" {
				continue
			}
			if err := schema.Published().Validate(name, []byte(block)); err != nil {
				t.Errorf("the arena chapter's %s example is refused: %v\n%s", name, err, block)
			}
		}
		if matched != 1 {
			t.Errorf("the arena chapter has a JSON block this test does not know:\n%s", block)
		}
	}
	for prefix := range examples {
		if _, ok := blocks[prefix]; !ok {
			t.Errorf("the arena chapter has no example starting %s", prefix)
		}
	}
	var request arena.GrantRequest
	var answer arena.GrantTicket
	var set jose.JSONWebKeySet
	for prefix, v := range map[string]any{`{"seat": `: &request, `{"ticket": `: &answer, `{"keys": `: &set} {
		if err := json.Unmarshal([]byte(blocks[prefix]), v); err != nil {
			t.Fatalf("the arena chapter's example %s: %v", prefix, err)
		}
	}
	session, err := base64.StdEncoding.DecodeString(request.SessionPublicKey)
	if err != nil || len(session) != ed25519.PublicKeySize {
		t.Fatalf("the arena chapter's session key %q: %v", request.SessionPublicKey, err)
	}
	claims, kid := verifyTicket(t, answer.Ticket, set)
	if kid != answer.KeyID {
		t.Errorf("the example ticket's kid %s, its key_id %s", kid, answer.KeyID)
	}
	jkt, err := arena.Thumbprint(session)
	if err != nil {
		t.Fatal(err)
	}
	expect := jwt.Expected{Issuer: "https://svc.example", AnyAudience: jwt.Audience{"0196f410-3c4d-7e5f-8a6b-7c8d9e0f1a2b"}, Time: time.Unix(answer.Exp-1, 0)}
	if err := claims.ValidateWithLeeway(expect, 0); err != nil {
		t.Errorf("the arena chapter's example ticket: %v", err)
	}
	if claims.Cnf.JKT != jkt || answer.Cnf.JKT != jkt {
		t.Errorf("the arena chapter's example ticket is bound to %s (in the clear %s), the example session key's thumbprint is %s", claims.Cnf.JKT, answer.Cnf.JKT, jkt)
	}
	checkClear(t, answer, claims)
	if !strings.Contains(chapter, time.Unix(answer.Exp, 0).UTC().Format(time.RFC3339)) {
		t.Errorf("the arena chapter does not give the example ticket's exp as %s", time.Unix(answer.Exp, 0).UTC().Format(time.RFC3339))
	}
	for _, s := range []string{plugin.AgentPrefix + "/arena/matches/{match_id}/grant", plugin.AgentPrefix + arena.PollPath,
		plugin.AgentPrefix + "/arena/start-intents/{intent_id}/claim", plugin.AgentPrefix + "/arena/start-intents/{intent_id}/status",
		arena.JWKSPath, "arena_grant_keys", arena.TicketType} {
		if !strings.Contains(chapter, s) {
			t.Errorf("the arena chapter does not name %s", s)
		}
	}
	for _, op := range operations {
		for _, sc := range op.codes {
			if !strings.Contains(chapter, "| "+sc[0]+" `"+sc[1]+"` |") {
				t.Errorf("the arena chapter does not explain %s %s", sc[0], sc[1])
			}
		}
	}
	for _, reason := range arena.ReasonCodes {
		if !strings.Contains(chapter, "| `"+reason+"` |") {
			t.Errorf("the arena chapter does not explain the reason %s", reason)
		}
	}
	if !slices.Equal(arena.ReasonCodes, reasonEnum(t)) {
		t.Errorf("ReasonCodes %v, status-request's reason_code %v", arena.ReasonCodes, reasonEnum(t))
	}
}

// reasonEnum is status-request's reason_code list, without null.
func reasonEnum(t *testing.T) []string {
	t.Helper()
	var s struct {
		Properties struct {
			ReasonCode struct {
				Enum []any `json:"enum"`
			} `json:"reason_code"`
		} `json:"properties"`
	}
	testkit.ReadContractJSON(t, "schemas/status-request"+schema.Suffix, &s)
	var out []string
	for _, v := range s.Properties.ReasonCode.Enum {
		if str, ok := v.(string); ok {
			out = append(out, str)
		}
	}
	return out
}
