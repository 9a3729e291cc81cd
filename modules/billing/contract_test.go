package billing_test

// billing's published contract: the schemas it names in the discovery document exist, the responses its
// handlers write match them, the pricing file the operator publishes is validated by its schema, and the
// OpenAPI documents and SKILL.md describe the routes the module mounts.

import (
	"encoding/json"
	"errors"
	"io/fs"
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
)

const (
	ctAgentID = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b"
	ctOrgID   = "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5c"
	ctEventID = "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9d"
)

// ctWire is the pricing file of WIRE.md section 8, verbatim.
const ctWire = `{"pricing_version": "2026-11", "grace_period_days": 30, "per_attachment": 1,
 "prices": {"create_thread": 10, "create_reply": 5, "vote": 1, "clear_vote": 0, "tombstone": 1,
            "manage_thread_attachments": 2, "manage_reply_attachments": 2, "media_upload": 3}}`

func ctRead(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := fs.ReadFile(contracts.FS(), name)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func ctReadJSON(t *testing.T, name string, v any) {
	t.Helper()
	if err := json.Unmarshal(ctRead(t, name), v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func ctValid(t *testing.T, name string, v any) {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Published().Validate(name, raw); err != nil {
		t.Errorf("%s refuses %s: %v", name, raw, err)
	}
}

func ctInvalid(t *testing.T, name, raw string) {
	t.Helper()
	if err := schema.Published().Validate(name, []byte(raw)); err == nil {
		t.Errorf("%s accepts %s", name, raw)
	}
}

// Every schema billing publishes in the discovery document exists in the embedded schema set, under the
// path the contracts serve it at.
func TestContractBillingPublicationsArePublished(t *testing.T) {
	set := schema.Published()
	var names []string
	for _, p := range billing.Publications() {
		if p.Module != billing.ID {
			t.Errorf("publication %s belongs to %q, want %q", p.Name, p.Module, billing.ID)
		}
		if !p.Schema {
			continue
		}
		names = append(names, p.Name)
		if !set.Has(p.Name) {
			t.Errorf("publication %s names no published schema (have %v)", p.Name, set.Names())
		}
		if want := "/contracts/schemas/" + p.Name + schema.Suffix; p.Path != want {
			t.Errorf("publication %s is at %s, want %s", p.Name, p.Path, want)
		}
	}
	for _, want := range []string{"billing-declaration", "pricing-file", "pricing-response", "wallet-response", "usage-response"} {
		if !slices.Contains(names, want) {
			t.Errorf("billing does not publish the schema %s (publishes %v)", want, names)
		}
	}
}

func ctPrices(base int64) map[string]int64 {
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
		{PricingVersion: current, Current: true, Prices: ctPrices(0), PerAttachment: 1, GracePeriodDays: 30, PublishedAt: superseded},
		{PricingVersion: "2026-10", Current: false, Prices: ctPrices(5), PerAttachment: 0, GracePeriodDays: 30,
			PublishedAt: published, SupersededAt: &superseded, AcceptedUntil: &until},
	}}
	ctValid(t, "pricing-response", resp)
	ctValid(t, "pricing-response", billing.PricingResponse{Operations: port.Operations, Versions: []billing.Price{}})

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
		t.Run(name, func(t *testing.T) { ctInvalid(t, "pricing-response", mutate(f)) })
	}

	at := time.Date(2026, 11, 3, 9, 30, 0, 0, time.UTC)
	ctValid(t, "wallet-response", billing.WalletResponse{OrgID: ctOrgID, Balance: 0})
	ctValid(t, "wallet-response", billing.WalletResponse{OrgID: ctOrgID, Balance: 1_000_000_000_000, UpdatedAt: &at})
	ctInvalid(t, "wallet-response", `{"org_id":"`+ctOrgID+`","balance":-1,"updated_at":null}`)
	ctInvalid(t, "wallet-response", `{"org_id":"`+strings.ToUpper(ctOrgID)+`","balance":1,"updated_at":null}`)
	ctInvalid(t, "wallet-response", `{"org_id":"`+ctOrgID+`","balance":1}`)

	next := "dTEuMDE5NmYzYTAtN2IxYy03ZDJlLThmMzAtNDE1MjZhN2I4Yzlk"
	ctValid(t, "usage-response", billing.UsageResponse{Events: []billing.UsageEventView{}})
	ctValid(t, "usage-response", billing.UsageResponse{NextCursor: &next, Events: []billing.UsageEventView{{
		ID: ctEventID, Kind: billing.KindCharge, Operation: port.OpCreateThread, Price: 12, PricingVersion: current, AgentID: ctAgentID,
		IdempotencyKey: "6f1e2d3c-4b5a-4978-8a6b-5c4d3e2f1a0b", ResourceID: "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9e", CreatedAt: at}}})
	for _, op := range port.Operations {
		ctValid(t, "usage-response", billing.UsageResponse{Events: []billing.UsageEventView{{ID: ctEventID, Kind: billing.KindCharge, Operation: op,
			PricingVersion: "v", AgentID: ctAgentID, IdempotencyKey: "k", ResourceID: "r", CreatedAt: superseded}}})
	}
	charge := ctEventID
	ctValid(t, "usage-response", billing.UsageResponse{Events: []billing.UsageEventView{{ID: "0196f3a0-7b1c-7d2e-8f30-41526a7b8c9f",
		Kind: billing.KindRefund, RefundOf: &charge, Operation: port.OpMediaUpload, Price: 3, PricingVersion: current,
		AgentID: ctAgentID, IdempotencyKey: "k", ResourceID: "r", CreatedAt: at}}})
	event := `{"id":"` + ctEventID + `","kind":"%kind","refund_of":%of,"operation":"%op","price":%price,"pricing_version":"2026-11","agent_id":"` + ctAgentID +
		`","idempotency_key":"k","resource_id":"r","created_at":"2026-11-03T09:30:00Z"}`
	evOf := func(kind, of, op, price string) string {
		return strings.NewReplacer("%kind", kind, "%of", of, "%op", op, "%price", price).Replace(event)
	}
	ev := func(op, price string) string { return evOf("charge", "null", op, price) }
	ctValid(t, "usage-response", json.RawMessage(`{"events":[`+ev("vote", "1")+`],"next_cursor":null}`))
	ctValid(t, "usage-response", json.RawMessage(`{"events":[`+evOf("refund", `"`+ctEventID+`"`, "media_upload", "3")+`],"next_cursor":null}`))
	// A refund names its charge, a charge names none; the kind is one of the two.
	ctInvalid(t, "usage-response", `{"events":[`+evOf("refund", "null", "media_upload", "3")+`],"next_cursor":null}`)
	ctInvalid(t, "usage-response", `{"events":[`+evOf("charge", `"`+ctEventID+`"`, "media_upload", "3")+`],"next_cursor":null}`)
	ctInvalid(t, "usage-response", `{"events":[`+evOf("credit", "null", "media_upload", "3")+`],"next_cursor":null}`)
	ctInvalid(t, "usage-response", `{"events":null,"next_cursor":null}`)
	ctInvalid(t, "usage-response", `{"events":[]}`)
	ctInvalid(t, "usage-response", `{"events":[],"next_cursor":""}`)
	ctInvalid(t, "usage-response", `{"events":[],"next_cursor":"`+strings.Repeat("a", 2049)+`"}`)
	ctInvalid(t, "usage-response", `{"events":[`+ev("report", "1")+`],"next_cursor":null}`)
	ctInvalid(t, "usage-response", `{"events":[`+ev("vote", "-1")+`],"next_cursor":null}`)
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
	ctReadJSON(t, "schemas/pricing-response.schema.json", &pricing)
	var file struct {
		Defs struct {
			Prices struct {
				Required []string `json:"required"`
			} `json:"prices"`
		} `json:"$defs"`
	}
	ctReadJSON(t, "schemas/pricing-file.schema.json", &file)
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
	ctReadJSON(t, "schemas/usage-response.schema.json", &usage)
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
	if got := strings.TrimSpace(string(ctRead(t, "examples/pricing-file/valid/wire.json"))); got != ctWire {
		t.Errorf("examples/pricing-file/valid/wire.json is\n%s\nwant the WIRE.md example\n%s", got, ctWire)
	}
	var f billing.PricingFile
	if err := set.Decode("pricing-file", []byte(ctWire), &f); err != nil {
		t.Fatalf("the WIRE.md pricing file is refused: %v", err)
	}
	want := billing.PricingFile{PricingVersion: "2026-11", GracePeriodDays: 30, PerAttachment: 1, Prices: map[string]int64{
		"create_thread": 10, "create_reply": 5, "vote": 1, "clear_vote": 0, "tombstone": 1,
		"manage_thread_attachments": 2, "manage_reply_attachments": 2, "media_upload": 3}}
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
	ctValid(t, "billing-declaration", port.Billing{PricingVersion: "2026-11", MaxCreditCost: 0})
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
		ctInvalid(t, "billing-declaration", raw)
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
		ctValid(t, "problem", p)
		if p.Status != http.StatusConflict {
			t.Errorf("%s is %d, want 409", p.Code, p.Status)
		}
	}
}

type ctOperation struct {
	OperationID string           `json:"operationId"`
	Tool        *string          `json:"x-svc-tool"`
	Parameters  []map[string]any `json:"parameters"`
	Responses   map[string]any   `json:"responses"`
}

type ctDoc struct {
	Paths        map[string]map[string]ctOperation `json:"paths"`
	Components   map[string]map[string]any         `json:"components"`
	ProblemCodes map[string]struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
	} `json:"x-svc-problem-codes"`
}

func ctResponseSchema(t *testing.T, where string, op ctOperation, status, want string) {
	t.Helper()
	resp, _ := op.Responses[status].(map[string]any)
	content, _ := resp["content"].(map[string]any)
	for _, mt := range []string{"application/json", "application/svc+json; version=1"} {
		s, _ := content[mt].(map[string]any)
		sch, _ := s["schema"].(map[string]any)
		if sch["$ref"] != "/contracts/schemas/"+want+schema.Suffix {
			t.Errorf("%s: %s %s schema %v, want %s", where, status, mt, sch["$ref"], want)
		}
	}
}

func ctParamRefs(op ctOperation) []string {
	var out []string
	for _, p := range op.Parameters {
		ref, _ := p["$ref"].(string)
		out = append(out, strings.TrimPrefix(ref, "#/components/parameters/"))
	}
	return out
}

// agent.json describes the signed routes billing mounts: GET wallet and usage, with their tools, the five
// signature headers (no Idempotency-Key on a GET), paging on usage, the statuses of the spec and never 429.
func TestContractBillingOpenAPIAgentRoutes(t *testing.T) {
	var doc ctDoc
	ctReadJSON(t, "openapi/agent.json", &doc)
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
		if op.OperationID != w.id {
			t.Errorf("%s: operationId %q, want %q", path, op.OperationID, w.id)
		}
		if op.Tool == nil || *op.Tool != w.tool {
			t.Errorf("%s: x-svc-tool %v, want %q", path, op.Tool, w.tool)
		}
		if got := ctParamRefs(op); !slices.Equal(got, w.params) {
			t.Errorf("%s: parameters %v, want %v", path, got, w.params)
		}
		for _, status := range []string{"200", "400", "401", "403", "409", "503", "default"} {
			if _, ok := op.Responses[status]; !ok {
				t.Errorf("%s: no %s response", path, status)
			}
		}
		if _, ok := op.Responses["429"]; ok {
			t.Errorf("%s declares 429, but billing's reads are never rate limited", path)
		}
		ctResponseSchema(t, path, op, "200", w.resp)
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

	codes := problem.Codes()
	for _, code := range []problem.Code{problem.PricingVersionNotAccepted, problem.PriceExceedsCap, problem.InsufficientCredits,
		problem.InvalidCursor, problem.BadRequest} {
		got, ok := doc.ProblemCodes[string(code)]
		if !ok {
			t.Errorf("x-svc-problem-codes does not list %s", code)
			continue
		}
		if def := codes[code]; got.Status != def.Status || got.Title != def.Title {
			t.Errorf("x-svc-problem-codes %s = %d %q, contracts/problem says %d %q", code, got.Status, got.Title, def.Status, def.Title)
		}
	}
}

// openapi.json describes GET /api/v1/pricing: its schema, ETag and Cache-Control, and 304 on
// If-None-Match.
func TestContractBillingOpenAPIPricing(t *testing.T) {
	var doc ctDoc
	ctReadJSON(t, "openapi.json", &doc)
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
	if op.Tool == nil || *op.Tool != "get_pricing" {
		t.Errorf("x-svc-tool %v, want get_pricing", op.Tool)
	}
	ctResponseSchema(t, billing.PricingPath, op, "200", "pricing-response")
	for _, status := range []string{"200", "304"} {
		resp, _ := op.Responses[status].(map[string]any)
		headers, _ := resp["headers"].(map[string]any)
		for _, h := range []string{"ETag", "Cache-Control"} {
			if _, ok := headers[h]; !ok {
				t.Errorf("%s %s: no %s header", billing.PricingPath, status, h)
			}
		}
	}
	if got := ctParamRefs(op); !slices.Equal(got, []string{"IfNoneMatch"}) {
		t.Errorf("parameters %v, want IfNoneMatch", got)
	}
	inm, _ := doc.Components["parameters"]["IfNoneMatch"].(map[string]any)
	if inm["name"] != "If-None-Match" || inm["in"] != "header" {
		t.Errorf("the IfNoneMatch parameter is %v", inm)
	}
}

// ctSkillBlock returns the JSON code block of the guide's text that starts with prefix.
func ctSkillBlock(t *testing.T, skill, prefix string) []byte {
	t.Helper()
	for _, block := range strings.Split(skill, "```json\n")[1:] {
		body, _, ok := strings.Cut(block, "\n```")
		if ok && strings.HasPrefix(body, prefix) {
			return []byte(body)
		}
	}
	t.Fatalf("the credits chapter has no JSON block starting with %s", prefix)
	return nil
}

// The agent guide's credits chapter (skill/credits.md) shows responses that match their schemas, a
// declaration the schema accepts, and names every metered operation, the billing codes and their members.
func TestContractBillingSkillChapter(t *testing.T) {
	skill := string(ctRead(t, contracts.SkillChapterFile("credits")))
	set := schema.Published()
	for name, prefix := range map[string]string{
		"pricing-response": `{"current_pricing_version"`,
		"wallet-response":  `{"org_id"`,
		"usage-response":   `{"events"`,
		"problem":          `{"type": "urn:svc:problem:price_exceeds_cap"`,
	} {
		raw := ctSkillBlock(t, skill, prefix)
		if name == "problem" {
			raw = []byte(strings.ReplaceAll(string(raw), `"request_id": "..."`, `"request_id": "req-1"`))
		}
		if err := set.Validate(name, raw); err != nil {
			t.Errorf("the credits chapter's %s example is refused: %v\n%s", name, err, raw)
		}
	}
	decl := ctSkillBlock(t, skill, `"billing": `)
	if err := set.Validate("billing-declaration", []byte(strings.TrimPrefix(string(decl), `"billing": `))); err != nil {
		t.Errorf("the credits chapter's declaration is refused: %v", err)
	}
	for _, s := range append(slices.Clone(port.Operations), string(problem.PricingVersionNotAccepted), string(problem.PriceExceedsCap),
		string(problem.InsufficientCredits), string(problem.InvalidCursor), "current_pricing_version", "effective_price",
		billing.PricingPath, plugin.AgentPrefix+billing.WalletPath, plugin.AgentPrefix+billing.UsagePath, "next_cursor") {
		if !strings.Contains(skill, s) {
			t.Errorf("the credits chapter does not name %s", s)
		}
	}
}
