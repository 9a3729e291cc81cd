package sigv1_test

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/modules/sigv1"
)

// The published artifacts, as the repository holds them (the contracts module embeds the same files).
const (
	contractAgentAPI = "../../contracts/openapi/agent.json"
	contractVectors  = "../../contracts/signing/svc-sig-v1-vectors.json"
	contractExamples = "../../contracts/examples/"
)

func contractReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Every schema sigv1 publishes in the discovery document exists in the embedded schema set, under the
// path the contracts serve it at.
func TestContractPublicationsArePublished(t *testing.T) {
	set := schema.Published()
	var schemas []string
	for _, p := range sigv1.Publications() {
		if p.Module != sigv1.ID {
			t.Errorf("publication %s belongs to %q, want %q", p.Name, p.Module, sigv1.ID)
		}
		if !p.Schema {
			continue
		}
		schemas = append(schemas, p.Name)
		if !set.Has(p.Name) {
			t.Errorf("publication %s names no published schema (have %v)", p.Name, set.Names())
		}
		if want := "/contracts/schemas/" + p.Name + schema.Suffix; p.Path != want {
			t.Errorf("publication %s is at %s, want %s", p.Name, p.Path, want)
		}
	}
	for _, want := range []string{"signed-envelope", "conformance-request", "conformance-response", "write-admission-request", "write-admission-response"} {
		if !slices.Contains(schemas, want) {
			t.Errorf("sigv1 does not publish the schema %s (publishes %v)", want, schemas)
		}
	}
}

// The responses the handlers write, marshalled as render does (encoding/json), match their published
// schemas; a blocker without one of its required members does not.
func TestContractResponsesMatchSchemas(t *testing.T) {
	set := schema.Published()
	const (
		agentID = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"
		orgID   = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5c"
		keyID   = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5d"
	)
	valid := func(name string, v any) {
		t.Helper()
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := set.Validate(name, raw); err != nil {
			t.Errorf("%s refuses %s: %v", name, raw, err)
		}
	}
	invalid := func(name, raw string) {
		t.Helper()
		if err := set.Validate(name, []byte(raw)); err == nil {
			t.Errorf("%s accepts %s", name, raw)
		}
	}

	valid("conformance-response", sigv1.ConformanceResponse{AgentID: agentID, KeyID: keyID, OrgID: orgID, Handle: "agent-one", Echo: "hello"})
	valid("conformance-response", sigv1.ConformanceResponse{AgentID: agentID, KeyID: "ed25519:a1", OrgID: orgID, Handle: "a_1", Echo: ""})
	valid("conformance-response", sigv1.ConformanceResponse{AgentID: agentID, KeyID: keyID, OrgID: orgID, Handle: "agent-one", Echo: strings.Repeat("é", 200)})
	invalid("conformance-response", `{"agent_id":"`+strings.ToUpper(agentID)+`","key_id":"k","org_id":"`+orgID+`","handle":"agent-one","echo":""}`)
	invalid("conformance-response", `{"agent_id":"`+agentID+`","key_id":"k","org_id":"`+orgID+`","echo":""}`)

	for _, channel := range sigv1.Channels {
		valid("write-admission-response", sigv1.WriteAdmissionResponse{Admitted: true, Channel: channel})
		for _, scope := range []string{sigv1.ScopeAll, sigv1.ScopeOrg, sigv1.ScopeAgent} {
			valid("write-admission-response", sigv1.WriteAdmissionResponse{Channel: channel, BlockedBy: &sigv1.Blocker{
				Status: 403, Code: string(problem.WritesFrozen), Detail: "Writes are frozen.", Scope: scope}})
		}
		valid("write-admission-response", sigv1.WriteAdmissionResponse{Channel: channel, BlockedBy: &sigv1.Blocker{
			Status: 503, Code: string(problem.WritesUnavailable), Detail: "Paused.", RetryAfterSeconds: 30}})
		valid("write-admission-response", sigv1.WriteAdmissionResponse{Channel: channel, BlockedBy: &sigv1.Blocker{
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
		invalid("write-admission-response", strings.Replace(blocked, "%s", b, 1))
	}
	invalid("write-admission-response", `{"admitted":true,"channel":"edge"}`)
	invalid("write-admission-response", `{"admitted":true,"channel":"public","blocked_by":null}`)
}

// The write-admission example agents copy is exactly the two bytes the server accepts.
func TestContractWriteAdmissionExampleIsExactlyEmptyObject(t *testing.T) {
	raw, err := os.ReadFile(contractExamples + "write-admission-request/valid/empty.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != "{}" {
		t.Errorf("the valid write-admission example is %q, want exactly {}", raw)
	}
}

type contractOperation struct {
	OperationID string         `json:"operationId"`
	Tool        *string        `json:"x-svc-tool"`
	Parameters  []contractRef  `json:"parameters"`
	RequestBody contractBody   `json:"requestBody"`
	Responses   map[string]any `json:"responses"`
}

type contractRef struct {
	Ref string `json:"$ref"`
}

type contractBody struct {
	Content map[string]struct {
		Schema contractRef `json:"schema"`
	} `json:"content"`
}

type contractAgentDoc struct {
	Paths        map[string]map[string]contractOperation `json:"paths"`
	ProblemCodes map[string]struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
	} `json:"x-svc-problem-codes"`
}

// agent.json lists exactly the module's routes, as the module mounts them.
func TestContractOpenAPIPaths(t *testing.T) {
	var doc contractAgentDoc
	contractReadJSON(t, contractAgentAPI, &doc)
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
		if op.OperationID != want.id {
			t.Errorf("%s: operationId %q, want %q", path, op.OperationID, want.id)
		}
		switch {
		case want.tool == "" && op.Tool != nil:
			t.Errorf("%s: x-svc-tool %q, want none", path, *op.Tool)
		case want.tool != "" && (op.Tool == nil || *op.Tool != want.tool):
			t.Errorf("%s: x-svc-tool %v, want %q", path, op.Tool, want.tool)
		}
		var got []string
		for _, p := range op.Parameters {
			got = append(got, strings.TrimPrefix(p.Ref, "#/components/parameters/"))
		}
		if !slices.Equal(got, params) {
			t.Errorf("%s: parameters %v, want %v", path, got, params)
		}
		if ref := op.RequestBody.Content["application/json"].Schema.Ref; ref != "/contracts/schemas/"+want.req+schema.Suffix {
			t.Errorf("%s: request schema %q, want %s", path, ref, want.req)
		}
		for _, status := range want.statuses {
			if _, ok := op.Responses[status]; !ok {
				t.Errorf("%s: no %s response", path, status)
			}
		}
		if _, ok := op.Responses["429"]; ok && want.id == "writeAdmission" {
			t.Errorf("%s declares 429, but write-admission is not rate limited", path)
		}
		ok, _ := op.Responses["200"].(map[string]any)
		content, _ := ok["content"].(map[string]any)
		for _, mt := range []string{"application/json", "application/svc+json; version=1"} {
			s, _ := content[mt].(map[string]any)
			sch, _ := s["schema"].(map[string]any)
			if sch["$ref"] != "/contracts/schemas/"+want.resp+schema.Suffix {
				t.Errorf("%s: 200 %s schema %v, want %s", path, mt, sch["$ref"], want.resp)
			}
		}
	}
}

// Every problem code agent.json lists exists in the catalog with the same status and title, and the
// codes of the signed plane (WIRE.md sections 1 to 3) are all listed.
func TestContractOpenAPIProblemCodes(t *testing.T) {
	var doc contractAgentDoc
	contractReadJSON(t, contractAgentAPI, &doc)
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
	for _, code := range []problem.Code{
		problem.ChannelClosed, problem.BodyTooLarge, problem.UnsupportedMediaType, problem.MalformedSignatureHeaders,
		problem.UnsupportedSignatureVersion, problem.StaleTimestamp, problem.UnknownKey, problem.SignatureMismatch,
		problem.AgentSuspended, problem.KeyRevoked, problem.WritesFrozen, problem.AgentPaused, problem.WritesUnavailable, problem.NonceReplayed,
		problem.RateLimited, problem.ValidationFailed, problem.NotReady, problem.IdempotencyKeyConflict,
		problem.IdempotencyRequestInFlight, problem.PricingVersionNotAccepted, problem.PriceExceedsCap,
		problem.InsufficientCredits, problem.RequestTimeout, problem.NotAcceptable,
	} {
		if _, ok := doc.ProblemCodes[string(code)]; !ok {
			t.Errorf("x-svc-problem-codes does not list %s", code)
		}
	}
}

type contractVectorCase struct {
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
		Cases []contractVectorCase `json:"cases"`
	}
	contractReadJSON(t, contractVectors, &file)
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
		Cases []contractVectorCase `json:"cases"`
	}
	contractReadJSON(t, contractVectors, &file)
	i := slices.IndexFunc(file.Cases, func(c contractVectorCase) bool { return c.Name == "post-json" })
	if i < 0 {
		t.Fatal("the vectors have no post-json case")
	}
	c := file.Cases[i]
	raw, err := fs.ReadFile(contracts.FS(), contracts.SkillChapterFile("signing"))
	if err != nil {
		t.Fatal(err)
	}
	skill := string(raw)
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
	var doc contractAgentDoc
	contractReadJSON(t, contractAgentAPI, &doc)
	var file struct {
		Cases []struct {
			contractVectorCase
			SignedCanonical string `json:"signed_canonical"`
		} `json:"cases"`
	}
	contractReadJSON(t, contractVectors, &file)
	set := schema.Published()
	// operation finds the operation of method and the raw path: a {parameter} matches one segment.
	operation := func(method, path string) (contractOperation, string, bool) {
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
		return contractOperation{}, "", false
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
		name := strings.TrimSuffix(strings.TrimPrefix(ref, "/contracts/schemas/"), schema.Suffix)
		if !set.Has(name) {
			t.Errorf("%s: %s %s has no JSON request schema (%q)", c.Name, method, tmpl, ref)
			continue
		}
		if err := set.Validate(name, []byte(c.Request.Body)); err != nil {
			t.Errorf("%s: the body is not a valid %s request (%s): %v\n%s", c.Name, op.OperationID, name, err, c.Request.Body)
		}
	}
}
