package sigv1_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/testkit"
)

// The published artifacts, as the contracts module embeds them.
const (
	agentAPI       = "openapi/agent.json"
	signingVectors = "signing/svc-sig-v1-vectors.json"
)

// Every schema sigv1 publishes in the discovery document exists in the embedded schema set, under the
// path the contracts serve it at.
func TestContractPublicationsArePublished(t *testing.T) {
	testkit.PublishesSchemas(t, sigv1.ID, sigv1.Publications(),
		"signed-envelope", "conformance-request", "conformance-response", "write-admission-request", "write-admission-response")
}

// The responses the handlers write, marshalled as render does (encoding/json), match their published
// schemas; a blocker without one of its required members does not.
func TestContractResponsesMatchSchemas(t *testing.T) {
	const (
		agentID = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"
		orgID   = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5c"
		keyID   = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5d"
	)
	testkit.Conforms(t, "conformance-response", sigv1.ConformanceResponse{AgentID: agentID, KeyID: keyID, OrgID: orgID, Handle: "agent-one", Echo: "hello"})
	testkit.Conforms(t, "conformance-response", sigv1.ConformanceResponse{AgentID: agentID, KeyID: "ed25519:a1", OrgID: orgID, Handle: "a_1", Echo: ""})
	testkit.Conforms(t, "conformance-response", sigv1.ConformanceResponse{AgentID: agentID, KeyID: keyID, OrgID: orgID, Handle: "agent-one", Echo: strings.Repeat("é", 200)})
	testkit.Refuses(t, "conformance-response", `{"agent_id":"`+strings.ToUpper(agentID)+`","key_id":"k","org_id":"`+orgID+`","handle":"agent-one","echo":""}`)
	testkit.Refuses(t, "conformance-response", `{"agent_id":"`+agentID+`","key_id":"k","org_id":"`+orgID+`","echo":""}`)

	for _, channel := range sigv1.Channels {
		testkit.Conforms(t, "write-admission-response", sigv1.WriteAdmissionResponse{Admitted: true, Channel: channel})
		for _, scope := range []string{sigv1.ScopeAll, sigv1.ScopeOrg, sigv1.ScopeAgent} {
			testkit.Conforms(t, "write-admission-response", sigv1.WriteAdmissionResponse{Channel: channel, BlockedBy: &sigv1.Blocker{
				Status: 403, Code: string(problem.WritesFrozen), Detail: "Writes are frozen.", Scope: scope}})
		}
		testkit.Conforms(t, "write-admission-response", sigv1.WriteAdmissionResponse{Channel: channel, BlockedBy: &sigv1.Blocker{
			Status: 503, Code: string(problem.WritesUnavailable), Detail: "Paused.", RetryAfterSeconds: 30}})
		testkit.Conforms(t, "write-admission-response", sigv1.WriteAdmissionResponse{Channel: channel, BlockedBy: &sigv1.Blocker{
			Status: 429, Code: string(problem.RateLimited), Detail: "Used up.", Scope: sigv1.ScopeAgent, RetryAfterSeconds: 1}})
	}
	// blocked_by is always present: null when admitted.
	raw, err := json.Marshal(sigv1.WriteAdmissionResponse{Admitted: true, Channel: plugin.ChannelEdge})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"admitted":true,"channel":"edge","blocked_by":null}`; string(raw) != want {
		t.Errorf("admitted response is %s, want %s", raw, want)
	}

	blocked := `{"admitted":false,"channel":"edge","blocked_by":%s}`
	for _, b := range []string{
		`{"code":"writes_frozen","detail":"d","scope":"all"}`,
		`{"status":403,"detail":"d","scope":"all"}`,
		`{"status":403,"code":"writes_frozen","scope":"all"}`,
		`{"status":403,"code":"writes_frozen","detail":"d","scope":"everyone"}`,
		`{"status":503,"code":"writes_unavailable","detail":"d","retry_after_seconds":0}`,
		`{"status":200,"code":"ok","detail":"d"}`,
		`{"status":403,"code":"writes_frozen","detail":"d","extra":1}`,
	} {
		testkit.Refuses(t, "write-admission-response", strings.Replace(blocked, "%s", b, 1))
	}
	testkit.Refuses(t, "write-admission-response", `{"admitted":true,"channel":"edge"}`)
	testkit.Refuses(t, "write-admission-response", `{"admitted":true,"channel":"public","blocked_by":null}`)
}

// The write-admission example agents copy is exactly the two bytes the server accepts.
func TestContractWriteAdmissionExampleIsExactlyEmptyObject(t *testing.T) {
	raw := testkit.ReadContract(t, "examples/write-admission-request/valid/empty.json")
	if string(raw) != "{}" {
		t.Errorf("the valid write-admission example is %q, want exactly {}", raw)
	}
}

// agent.json lists exactly the module's routes, as the module mounts them.
func TestContractOpenAPIPaths(t *testing.T) {
	doc := testkit.LoadOpenAPI(t, agentAPI)
	conformance := plugin.AgentPrefix + sigv1.ConformancePath
	admission := plugin.AgentPrefix + sigv1.WriteAdmissionPath
	// Other modules add their operations to the same document: check sigv1's own.
	for _, path := range []string{conformance, admission} {
		item, ok := doc.Paths[path]
		if !ok {
			t.Fatalf("agent.json has no %s", path)
		}
		if got := slices.Collect(maps.Keys(item)); !slices.Equal(got, []string{"post"}) {
			t.Errorf("%s has methods %v, want post only", path, got)
		}
	}
	params := []string{"SvcAgentId", "SvcKeyId", "SvcTimestamp", "SvcNonce", "IdempotencyKey", "SvcSignature"}
	for path, want := range map[string]struct {
		id, tool, req, resp string
		statuses            []string
	}{
		conformance: {"conformance", "conformance", "conformance-request", "conformance-response", []string{"200", "400", "401", "403", "409", "413", "415", "422", "429", "503"}},
		admission:   {"writeAdmission", "write_admission", "write-admission-request", "write-admission-response", []string{"200", "400", "401", "403", "409", "413", "415", "422", "503"}},
	} {
		op := doc.Paths[path]["post"]
		testkit.CheckOperation(t, path, op, testkit.OperationWant{ID: want.id, Tool: want.tool, Params: params, Request: want.req})
		testkit.CheckStatuses(t, path, op, want.statuses...)
		if _, ok := op.Responses["429"]; ok && want.id == "writeAdmission" {
			t.Errorf("%s declares 429, but write-admission is not rate limited", path)
		}
		testkit.CheckAnswerSchema(t, path, op, "200", want.resp)
	}
}

// Every problem code agent.json lists exists in the catalog with the same status and title, and the
// codes of the signed plane (WIRE.md sections 1 to 3) are all listed.
func TestContractOpenAPIProblemCodes(t *testing.T) {
	doc := testkit.LoadOpenAPI(t, agentAPI)
	codes := problem.Codes()
	if len(doc.ProblemCodes) == 0 {
		t.Fatal("agent.json has no x-svc-problem-codes")
	}
	for code, def := range doc.ProblemCodes {
		want, ok := codes[problem.Code(code)]
		switch {
		case !ok:
			t.Errorf("x-svc-problem-codes lists %s, which contracts/problem does not define", code)
		case def.Status != want.Status || def.Title != want.Title:
			t.Errorf("x-svc-problem-codes %s = %d %q, contracts/problem says %d %q", code, def.Status, def.Title, want.Status, want.Title)
		}
	}
	testkit.CheckProblemCodes(t, doc,
		problem.ChannelClosed, problem.BodyTooLarge, problem.UnsupportedMediaType, problem.MalformedSignatureHeaders,
		problem.UnsupportedSignatureVersion, problem.StaleTimestamp, problem.UnknownKey, problem.SignatureMismatch,
		problem.AgentSuspended, problem.KeyRevoked, problem.WritesFrozen, problem.AgentPaused, problem.WritesUnavailable, problem.NonceReplayed,
		problem.RateLimited, problem.ValidationFailed, problem.NotReady, problem.IdempotencyKeyConflict,
		problem.IdempotencyRequestInFlight, problem.PricingVersionNotAccepted, problem.PriceExceedsCap,
		problem.InsufficientCredits, problem.RequestTimeout, problem.NotAcceptable)
}

type vectorCase struct {
	Name       string `json:"name"`
	ServerTime int64  `json:"server_time"`
	Key        struct {
		SeedHex         string `json:"seed_hex"`
		PublicKeyBase64 string `json:"public_key_base64"`
	} `json:"key"`
	Request struct {
		Method  string            `json:"method"`
		Target  string            `json:"target"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	} `json:"request"`
	Canonical  *string `json:"canonical"`
	BodySHA256 string  `json:"body_sha256"`
	Signature  string  `json:"signature"`
	Expected   struct {
		Status int    `json:"status"`
		Code   string `json:"code"`
	} `json:"expected"`
}

// The signed-envelope schema describes the signing vectors' requests: every accepted case matches it,
// every case refused with 400 does not.
func TestContractSchemaSignedEnvelopeMatchesVectors(t *testing.T) {
	var file struct {
		Cases []vectorCase `json:"cases"`
	}
	testkit.ReadContractJSON(t, signingVectors, &file)
	if len(file.Cases) == 0 {
		t.Fatal("no signing vectors")
	}
	set := schema.Published()
	for _, c := range file.Cases {
		env := map[string]string{"method": c.Request.Method, "target": c.Request.Target, "body_sha256": c.BodySHA256, "idempotency_key": ""}
		for member, header := range map[string]string{"agent_id": sigv1.HeaderAgentID, "key_id": sigv1.HeaderKeyID,
			"timestamp": sigv1.HeaderTimestamp, "nonce": sigv1.HeaderNonce, "idempotency_key": sigv1.HeaderIdempotencyKey,
			"signature": sigv1.HeaderSignature} {
			if v, ok := c.Request.Headers[header]; ok {
				env[member] = v
			}
		}
		raw, err := json.Marshal(env)
		if err != nil {
			t.Fatal(err)
		}
		err = set.Validate("signed-envelope", raw)
		switch c.Expected.Status {
		case 200:
			if err != nil {
				t.Errorf("%s: accepted by the verifier, refused by signed-envelope: %v", c.Name, err)
			}
		case 400:
			if err == nil {
				t.Errorf("%s: refused by the verifier (%s), accepted by signed-envelope", c.Name, c.Expected.Code)
			}
		}
	}
}

// The agent guide's signing chapter (skill/signing.md) gives the vectors' post-json case as its worked
// example, verbatim.
func TestContractSkillQuotesTheVectors(t *testing.T) {
	var file struct {
		Cases []vectorCase `json:"cases"`
	}
	testkit.ReadContractJSON(t, signingVectors, &file)
	i := slices.IndexFunc(file.Cases, func(c vectorCase) bool { return c.Name == "post-json" })
	if i < 0 {
		t.Fatal("the vectors have no post-json case")
	}
	c := file.Cases[i]
	skill := string(testkit.ReadContract(t, contracts.SkillChapterFile("signing")))
	if c.Canonical == nil {
		t.Fatal("post-json has no canonical string")
	}
	quotes := []string{"```\n" + *c.Canonical + "\n```", c.Key.SeedHex, c.Key.PublicKeyBase64, c.BodySHA256,
		c.Signature, c.Request.Body, c.Request.Method + " " + c.Request.Target}
	for name, v := range c.Request.Headers {
		quotes = append(quotes, name+": "+v)
	}
	for _, q := range quotes {
		if !strings.Contains(skill, q) {
			t.Errorf("the signing chapter does not quote %q from the post-json vector", q)
		}
	}
	if strings.Count(skill, "```")%2 != 0 {
		t.Error("the signing chapter has an unclosed code fence")
	}
}

// Every signing vector is also a valid request: the method and path it was signed for (the second and
// third lines of signed_canonical, before any tampering) name an operation of agent.json, and the
// body sent is one that operation's request schema accepts (none for an operation without a body).
// So a vector sent as it is fails only where its signature does, never as a 422 that would hide it.
func TestContractVectorsAreValidRequests(t *testing.T) {
	doc := testkit.LoadOpenAPI(t, agentAPI)
	var file struct {
		Cases []struct {
			vectorCase
			SignedCanonical string `json:"signed_canonical"`
		} `json:"cases"`
	}
	testkit.ReadContractJSON(t, signingVectors, &file)
	set := schema.Published()
	// operation finds the operation of method and the raw path: a {parameter} matches one segment.
	operation := func(method, path string) (testkit.Operation, string, bool) {
		segs := strings.Split(path, "/")
		for tmpl, item := range doc.Paths {
			op, ok := item[strings.ToLower(method)]
			want := strings.Split(tmpl, "/")
			if !ok || len(want) != len(segs) {
				continue
			}
			match := true
			for i, w := range want {
				if strings.HasPrefix(w, "{") && strings.HasSuffix(w, "}") {
					match = match && segs[i] != ""
				} else {
					match = match && segs[i] == w
				}
			}
			if match {
				return op, tmpl, true
			}
		}
		return testkit.Operation{}, "", false
	}
	for _, c := range file.Cases {
		lines := strings.Split(c.SignedCanonical, "\n")
		if len(lines) != 9 {
			t.Errorf("%s: signed_canonical has %d lines, want 9", c.Name, len(lines))
			continue
		}
		method, target := lines[1], lines[2]
		path, _, _ := strings.Cut(target, "?")
		op, tmpl, ok := operation(method, path)
		if !ok {
			t.Errorf("%s: %s %s names no operation of agent.json", c.Name, method, path)
			continue
		}
		if len(op.RequestBody.Content) == 0 {
			if c.Request.Body != "" {
				t.Errorf("%s: %s %s takes no body, the vector sends %q", c.Name, method, tmpl, c.Request.Body)
			}
			continue
		}
		ref := op.RequestBody.Content["application/json"].Schema.Ref
		name := testkit.SchemaName(ref)
		if !set.Has(name) {
			t.Errorf("%s: %s %s has no JSON request schema (%q)", c.Name, method, tmpl, ref)
			continue
		}
		if err := set.Validate(name, []byte(c.Request.Body)); err != nil {
			t.Errorf("%s: the body is not a valid %s request (%s): %v\n%s", c.Name, op.OperationID, name, err, c.Request.Body)
		}
	}
}
