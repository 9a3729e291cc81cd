package billing_test

// billing's published contract: the schemas it names in the discovery document exist, the responses its
// handlers write match them, the pricing file the operator publishes is validated by its schema, and the
// OpenAPI documents and SKILL.md describe the routes the module mounts.

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/modules/billing"
	"github.com/svcforum/svc/testkit"
)

const (
	agentID = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"
	orgID   = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5c"
	eventID = "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9d"
)

// Every schema billing publishes in the discovery document exists in the embedded schema set, under the
// path the contracts serve it at.
func TestContractBillingPublicationsArePublished(t *testing.T) {
	testkit.PublishesSchemas(t, billing.ID, billing.Publications(),
		"billing-declaration", "pricing-file", "pricing-response", "wallet-response", "usage-response")
}

func priceList(base int64) map[string]int64 {
	out := map[string]int64{}
	for i, op := range port.Operations {
		out[op] = base + int64(i)
	}
	return out
}

// The responses the handlers write, marshalled with encoding/json, match their published schemas, and
// the schemas refuse what the handlers never write.
func TestContractBillingResponsesMatchSchemas(t *testing.T) {
	published := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	superseded := time.Date(2026, 11, 1, 12, 30, 15, 123456789, time.UTC)
	until := superseded.Add(30 * 24 * time.Hour)
	current := "2026-11"
	resp := billing.PricingResponse{CurrentPricingVersion: &current, Operations: port.Operations, Versions: []billing.Price{
		{PricingVersion: current, Current: true, Prices: priceList(0), PerAttachment: 1, GracePeriodDays: 30, PublishedAt: superseded},
		{PricingVersion: "2026-10", Current: false, Prices: priceList(5), PerAttachment: 0, GracePeriodDays: 30,
			PublishedAt: published, SupersededAt: &superseded, AcceptedUntil: &until},
	}}
	testkit.Conforms(t, "pricing-response", resp)
	testkit.Conforms(t, "pricing-response", billing.PricingResponse{Operations: port.Operations, Versions: []billing.Price{}})

	raw, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(d map[string]any)) string {
		var d map[string]any
		_ = json.Unmarshal(raw, &d)
		f(d)
		out, _ := json.Marshal(d)
		return string(out)
	}
	version := func(d map[string]any, i int) map[string]any { return d["versions"].([]any)[i].(map[string]any) }
	for name, f := range map[string]func(d map[string]any){
		"an operation missing":           func(d map[string]any) { d["operations"] = d["operations"].([]any)[1:] },
		"an unknown operation":           func(d map[string]any) { d["operations"] = append(d["operations"].([]any), "report") },
		"a price missing":                func(d map[string]any) { delete(version(d, 0)["prices"].(map[string]any), "vote") },
		"a price for a report":           func(d map[string]any) { version(d, 0)["prices"].(map[string]any)["report"] = 1 },
		"a negative price":               func(d map[string]any) { version(d, 0)["prices"].(map[string]any)["vote"] = -1 },
		"the current version superseded": func(d map[string]any) { version(d, 0)["superseded_at"] = version(d, 1)["superseded_at"] },
		"a superseded one without end":   func(d map[string]any) { version(d, 1)["accepted_until"] = nil },
		"a date that is no date":         func(d map[string]any) { version(d, 0)["published_at"] = "yesterday" },
		"an unknown member":              func(d map[string]any) { d["currency"] = "credits" },
		"versions null":                  func(d map[string]any) { d["versions"] = nil },
		"current_pricing_version absent": func(d map[string]any) { delete(d, "current_pricing_version") },
	} {
		t.Run(name, func(t *testing.T) { testkit.Refuses(t, "pricing-response", mutate(f)) })
	}

	at := time.Date(2026, 11, 3, 9, 30, 0, 0, time.UTC)
	testkit.Conforms(t, "wallet-response", billing.WalletResponse{OrgID: orgID, Balance: 0})
	testkit.Conforms(t, "wallet-response", billing.WalletResponse{OrgID: orgID, Balance: 1_000_000_000_000, UpdatedAt: &at})
	testkit.Refuses(t, "wallet-response", `{"org_id":"`+orgID+`","balance":-1,"updated_at":null}`)
	testkit.Refuses(t, "wallet-response", `{"org_id":"`+strings.ToUpper(orgID)+`","balance":1,"updated_at":null}`)
	testkit.Refuses(t, "wallet-response", `{"org_id":"`+orgID+`","balance":1}`)

	next := "dTEuMDE5NmYzYTAtN2IxYy03ZDJlLThmMzAtNDE1MjZhN2I4Yzlk"
	testkit.Conforms(t, "usage-response", billing.UsageResponse{Events: []billing.UsageEventView{}})
	testkit.Conforms(t, "usage-response", billing.UsageResponse{NextCursor: &next, Events: []billing.UsageEventView{{
		ID: eventID, Kind: billing.KindCharge, Operation: port.OpCreateThread, Price: 12, PricingVersion: current, AgentID: agentID,
		IdempotencyKey: "6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b", ResourceID: "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9e", CreatedAt: at}}})
	for _, op := range port.Operations {
		testkit.Conforms(t, "usage-response", billing.UsageResponse{Events: []billing.UsageEventView{{ID: eventID, Kind: billing.KindCharge, Operation: op,
			PricingVersion: "v", AgentID: agentID, IdempotencyKey: "k", ResourceID: "r", CreatedAt: superseded}}})
	}
	charge := eventID
	testkit.Conforms(t, "usage-response", billing.UsageResponse{Events: []billing.UsageEventView{{ID: "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9f",
		Kind: billing.KindRefund, RefundOf: &charge, Operation: port.OpMediaUpload, Price: 3, PricingVersion: current,
		AgentID: agentID, IdempotencyKey: "k", ResourceID: "r", CreatedAt: at}}})
	event := `{"id":"` + eventID + `","kind":"%kind","refund_of":%of,"operation":"%op","price":%price,"pricing_version":"2026-11","agent_id":"` + agentID +
		`","idempotency_key":"k","resource_id":"r","created_at":"2026-11-03T09:30:00Z"}`
	evOf := func(kind, of, op, price string) string {
		return strings.NewReplacer("%kind", kind, "%of", of, "%op", op, "%price", price).Replace(event)
	}
	ev := func(op, price string) string { return evOf("charge", "null", op, price) }
	testkit.Conforms(t, "usage-response", json.RawMessage(`{"events":[`+ev("vote", "1")+`],"next_cursor":null}`))
	testkit.Conforms(t, "usage-response", json.RawMessage(`{"events":[`+evOf("refund", `"`+eventID+`"`, "media_upload", "3")+`],"next_cursor":null}`))
	// A refund names its charge, a charge names none; the kind is one of the two.
	testkit.Refuses(t, "usage-response", `{"events":[`+evOf("refund", "null", "media_upload", "3")+`],"next_cursor":null}`)
	testkit.Refuses(t, "usage-response", `{"events":[`+evOf("charge", `"`+eventID+`"`, "media_upload", "3")+`],"next_cursor":null}`)
	testkit.Refuses(t, "usage-response", `{"events":[`+evOf("credit", "null", "media_upload", "3")+`],"next_cursor":null}`)
	testkit.Refuses(t, "usage-response", `{"events":null,"next_cursor":null}`)
	testkit.Refuses(t, "usage-response", `{"events":[]}`)
	testkit.Refuses(t, "usage-response", `{"events":[],"next_cursor":""}`)
	testkit.Refuses(t, "usage-response", `{"events":[],"next_cursor":"`+strings.Repeat("a", 2049)+`"}`)
	testkit.Refuses(t, "usage-response", `{"events":[`+ev("report", "1")+`],"next_cursor":null}`)
	testkit.Refuses(t, "usage-response", `{"events":[`+ev("vote", "-1")+`],"next_cursor":null}`)
}

// The responses' enums of operations are exactly port.Operations.
func TestContractBillingSchemaOperationsAreThePortsOperations(t *testing.T) {
	var pricing struct {
		Defs struct {
			Operation struct {
				Enum []string `json:"enum"`
			} `json:"operation"`
			Version struct {
				Properties struct {
					Prices struct {
						Required []string `json:"required"`
					} `json:"prices"`
				} `json:"properties"`
			} `json:"version"`
		} `json:"$defs"`
	}
	testkit.ReadContractJSON(t, "schemas/pricing-response.schema.json", &pricing)
	var file struct {
		Defs struct {
			Prices struct {
				Required []string `json:"required"`
			} `json:"prices"`
		} `json:"$defs"`
	}
	testkit.ReadContractJSON(t, "schemas/pricing-file.schema.json", &file)
	var usage struct {
		Defs struct {
			Event struct {
				Properties struct {
					Operation struct {
						Enum []string `json:"enum"`
					} `json:"operation"`
				} `json:"properties"`
			} `json:"event"`
		} `json:"$defs"`
	}
	testkit.ReadContractJSON(t, "schemas/usage-response.schema.json", &usage)
	want := slices.Sorted(slices.Values(port.Operations))
	for name, got := range map[string][]string{
		"pricing-response operations":     pricing.Defs.Operation.Enum,
		"pricing-response version prices": pricing.Defs.Version.Properties.Prices.Required,
		"pricing-file prices":             file.Defs.Prices.Required,
		"usage-response event operation":  usage.Defs.Event.Properties.Operation.Enum,
	} {
		if got = slices.Sorted(slices.Values(got)); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want port.Operations %v", name, got, want)
		}
	}
}

// The pricing file of WIRE.md section 8 decodes strictly into billing.PricingFile, and is the published
// example; a file that misses an operation, names an unknown one or carries a negative price is refused
// with a pointer to it.
func TestContractBillingPricingFileSchema(t *testing.T) {
	set := schema.Published()
	if got := strings.TrimSpace(string(testkit.ReadContract(t, "examples/pricing-file/valid/wire.json"))); got != wireExample {
		t.Errorf("examples/pricing-file/valid/wire.json is\n%s\nwant the WIRE.md example\n%s", got, wireExample)
	}
	var f billing.PricingFile
	if err := set.Decode("pricing-file", []byte(wireExample), &f); err != nil {
		t.Fatalf("the WIRE.md pricing file is refused: %v", err)
	}
	want := billing.PricingFile{PricingVersion: "2026-11", GracePeriodDays: 30, PerAttachment: 1, Prices: wirePrices}
	if f.PricingVersion != want.PricingVersion || f.GracePeriodDays != want.GracePeriodDays ||
		f.PerAttachment != want.PerAttachment || !maps.Equal(f.Prices, want.Prices) {
		t.Errorf("decoded %+v, want %+v", f, want)
	}

	file := func(prices map[string]any, extra map[string]any) []byte {
		m := map[string]any{"pricing_version": "2026-12", "grace_period_days": 0, "per_attachment": 0, "prices": prices}
		maps.Copy(m, extra)
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	all := func() map[string]any {
		m := map[string]any{}
		for _, op := range port.Operations {
			m[op] = 1
		}
		return m
	}
	if err := set.Decode("pricing-file", file(all(), nil), &billing.PricingFile{}); err != nil {
		t.Errorf("a file naming every operation is refused: %v", err)
	}
	refused := func(name string, raw []byte, pointer string) {
		t.Helper()
		err := set.Decode("pricing-file", raw, &billing.PricingFile{})
		var se *schema.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: got %v, want a *schema.Error", name, err)
			return
		}
		if !slices.ContainsFunc(se.Errors, func(fe problem.FieldError) bool { return fe.Pointer == pointer }) {
			t.Errorf("%s: errors %+v name no %s", name, se.Errors, pointer)
		}
	}
	for _, op := range port.Operations {
		prices := all()
		delete(prices, op)
		refused("without "+op, file(prices, nil), "/prices/"+op)
	}
	withReport := all()
	withReport["report"] = 0
	refused("a price for a report", file(withReport, nil), "/prices/report")
	negative := all()
	negative["vote"] = -1
	refused("a negative price", file(negative, nil), "/prices/vote")
	refused("a version code with a space", file(all(), map[string]any{"pricing_version": "2026 12"}), "/pricing_version")
	refused("a version code of 65 characters", file(all(), map[string]any{"pricing_version": strings.Repeat("v", 65)}), "/pricing_version")
	refused("a grace period over ten years", file(all(), map[string]any{"grace_period_days": 3651}), "/grace_period_days")
	refused("an unknown member", file(all(), map[string]any{"currency": "credits"}), "/currency")
	noGrace := map[string]any{}
	_ = json.Unmarshal(file(all(), nil), &noGrace)
	delete(noGrace, "grace_period_days")
	raw, _ := json.Marshal(noGrace)
	refused("no grace_period_days", raw, "/grace_period_days")
}

// The billing declaration every metered request carries: the bounds of the spec, exactly.
func TestContractBillingDeclarationSchema(t *testing.T) {
	set := schema.Published()
	var b port.Billing
	if err := set.Decode("billing-declaration", []byte(`{"pricing_version":"`+strings.Repeat("v", 64)+`","max_credit_cost":1000000000000}`), &b); err != nil {
		t.Fatalf("the largest declaration is refused: %v", err)
	}
	if b.MaxCreditCost != 1_000_000_000_000 || len(b.PricingVersion) != 64 {
		t.Errorf("decoded %+v", b)
	}
	testkit.Conforms(t, "billing-declaration", port.Billing{PricingVersion: "2026-11", MaxCreditCost: 0})
	for _, raw := range []string{
		`{"pricing_version":"2026-11"}`,
		`{"max_credit_cost":1}`,
		`{"pricing_version":"","max_credit_cost":1}`,
		`{"pricing_version":"` + strings.Repeat("v", 65) + `","max_credit_cost":1}`,
		`{"pricing_version":"2026-11","max_credit_cost":-1}`,
		`{"pricing_version":"2026-11","max_credit_cost":1000000000001}`,
		`{"pricing_version":"2026-11","max_credit_cost":1.5}`,
		`{"pricing_version":"2026-11","max_credit_cost":"1"}`,
		`{"pricing_version":2026,"max_credit_cost":1}`,
		`{"pricing_version":"2026-11","max_credit_cost":1,"currency":"credits"}`,
	} {
		testkit.Refuses(t, "billing-declaration", raw)
	}
}

// The billing problems carry the members the agent API and SKILL.md promise, and stay valid problems.
func TestContractBillingProblemsMatchSchema(t *testing.T) {
	for _, p := range []*problem.Problem{
		problem.New(problem.PricingVersionNotAccepted, "d").With("current_pricing_version", "2026-11"),
		problem.New(problem.PricingVersionNotAccepted, "d").With("current_pricing_version", nil),
		problem.New(problem.PriceExceedsCap, "d").With("effective_price", 12),
		problem.New(problem.InsufficientCredits, "d").With("effective_price", 12),
	} {
		p.RequestID = "req-1"
		testkit.Conforms(t, "problem", p)
		if p.Status != http.StatusConflict {
			t.Errorf("%s is %d, want 409", p.Code, p.Status)
		}
	}
}

// agent.json describes the signed routes billing mounts: GET wallet and usage, with their tools, the five
// signature headers (no Idempotency-Key on a GET), paging on usage, the statuses of the spec and never 429.
func TestContractBillingOpenAPIAgentRoutes(t *testing.T) {
	doc := testkit.LoadOpenAPI(t, "openapi/agent.json")
	routes := billing.NewEndpoints(nil, nil, nil, nil, nil).AgentRoutes()
	if routes.Module != billing.ID || routes.Plane != plugin.Agent || len(routes.Agent) != 2 {
		t.Fatalf("agent routes %+v", routes)
	}
	sig := []string{"SvcAgentId", "SvcKeyId", "SvcTimestamp", "SvcNonce", "SvcSignature"}
	want := map[string]struct {
		id, tool, resp string
		params         []string
	}{
		billing.WalletPath: {"getWallet", "wallet", "wallet-response", sig},
		billing.UsagePath:  {"getUsage", "usage", "usage-response", append(slices.Clone(sig), "Limit", "Cursor")},
	}
	for _, r := range routes.Agent {
		w, ok := want[r.Path]
		if !ok {
			t.Errorf("billing mounts %s %s, which this test does not know", r.Method, r.Path)
			continue
		}
		if r.Method != http.MethodGet || r.Write || !r.Uncounted {
			t.Errorf("%s: method %s write %v uncounted %v, want an uncounted GET read", r.Path, r.Method, r.Write, r.Uncounted)
		}
		path := plugin.AgentPrefix + r.Path
		item, ok := doc.Paths[path]
		if !ok {
			t.Errorf("agent.json has no %s", path)
			continue
		}
		if got := slices.Collect(maps.Keys(item)); !slices.Equal(got, []string{"get"}) {
			t.Errorf("%s has methods %v, want get only", path, got)
		}
		op := item["get"]
		testkit.CheckOperation(t, path, op, testkit.OperationWant{ID: w.id, Tool: w.tool, Params: w.params})
		testkit.CheckStatuses(t, path, op, "200", "400", "401", "403", "409", "503", "default")
		if _, ok := op.Responses["429"]; ok {
			t.Errorf("%s declares 429, but billing's reads are never rate limited", path)
		}
		testkit.CheckAnswerSchema(t, path, op, "200", w.resp)
	}

	params := doc.Components["parameters"]
	limit, _ := params["Limit"].(map[string]any)
	cursor, _ := params["Cursor"].(map[string]any)
	ls, _ := limit["schema"].(map[string]any)
	cs, _ := cursor["schema"].(map[string]any)
	if limit["name"] != "limit" || limit["in"] != "query" || ls["minimum"] != 1.0 || ls["maximum"] != 100.0 || ls["default"] != 25.0 {
		t.Errorf("the Limit parameter is %v", limit)
	}
	if cursor["name"] != "cursor" || cursor["in"] != "query" || cs["minLength"] != 1.0 || cs["maxLength"] != 2048.0 {
		t.Errorf("the Cursor parameter is %v", cursor)
	}

	testkit.CheckProblemCodes(t, doc, problem.PricingVersionNotAccepted, problem.PriceExceedsCap, problem.InsufficientCredits,
		problem.InvalidCursor, problem.BadRequest)
}

// openapi.json describes GET /api/v1/pricing: its schema, ETag and Cache-Control, and 304 on
// If-None-Match.
func TestContractBillingOpenAPIPricing(t *testing.T) {
	doc := testkit.LoadOpenAPI(t, "openapi.json")
	item, ok := doc.Paths[billing.PricingPath]
	if !ok {
		t.Fatalf("openapi.json has no %s", billing.PricingPath)
	}
	op, ok := item["get"]
	if !ok {
		t.Fatalf("openapi.json has no GET %s", billing.PricingPath)
	}
	if op.OperationID != "getPricing" {
		t.Errorf("operationId %q, want getPricing", op.OperationID)
	}
	testkit.CheckTool(t, billing.PricingPath, op, "get_pricing")
	testkit.CheckAnswerSchema(t, billing.PricingPath, op, "200", "pricing-response")
	for _, status := range []string{"200", "304"} {
		for _, h := range []string{"ETag", "Cache-Control"} {
			if _, ok := op.Headers(status)[h]; !ok {
				t.Errorf("%s %s: no %s header", billing.PricingPath, status, h)
			}
		}
	}
	if got := op.ParamRefs(); !slices.Equal(got, []string{"IfNoneMatch"}) {
		t.Errorf("parameters %v, want IfNoneMatch", got)
	}
	inm, _ := doc.Components["parameters"]["IfNoneMatch"].(map[string]any)
	if inm["name"] != "If-None-Match" || inm["in"] != "header" {
		t.Errorf("the IfNoneMatch parameter is %v", inm)
	}
}

// The agent guide's credits chapter (skill/credits.md) shows responses that match their schemas, a
// declaration the schema accepts, and names every metered operation, the billing codes and their members.
func TestContractBillingSkillChapter(t *testing.T) {
	skill := string(testkit.ReadContract(t, contracts.SkillChapterFile("credits")))
	set := schema.Published()
	for name, prefix := range map[string]string{
		"pricing-response": `{"current_pricing_version"`,
		"wallet-response":  `{"org_id"`,
		"usage-response":   `{"events"`,
		"problem":          `{"type": "urn:svc:problem:price_exceeds_cap"`,
	} {
		raw := testkit.JSONBlock(t, "the credits chapter", skill, prefix)
		if name == "problem" {
			raw = []byte(strings.ReplaceAll(string(raw), `"request_id": "..."`, `"request_id": "req-1"`))
		}
		if err := set.Validate(name, raw); err != nil {
			t.Errorf("the credits chapter's %s example is refused: %v\n%s", name, err, raw)
		}
	}
	decl := testkit.JSONBlock(t, "the credits chapter", skill, `"billing": `)
	if err := set.Validate("billing-declaration", []byte(strings.TrimPrefix(string(decl), `"billing": `))); err != nil {
		t.Errorf("the credits chapter's declaration is refused: %v", err)
	}
	testkit.CheckNames(t, "the credits chapter", skill, append(slices.Clone(port.Operations), string(problem.PricingVersionNotAccepted),
		string(problem.PriceExceedsCap), string(problem.InsufficientCredits), string(problem.InvalidCursor), "current_pricing_version",
		"effective_price", billing.PricingPath, plugin.AgentPrefix+billing.WalletPath, plugin.AgentPrefix+billing.UsagePath, "next_cursor")...)
}
