package reports_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"regexp"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/modules/reports"
)

// The report's own codes, by the status agent.json must name each under.
var ctReportCodes = map[problem.Code]string{
	problem.ReportTargetRequired:     "400",
	problem.ContentPolicyViolation:   "400",
	problem.ExplanationQuotesContent: "400",
	problem.TargetNotFound:           "404",
	problem.ReportAlreadyOpen:        "409",
	problem.ReportLimitExceeded:      "429",
	problem.PrivateKeyRefused:        "422",
	problem.ValidationFailed:         "422",
}

// agent.json describes every route the module mounts, as the module's: a 201 with the created report
// in both media types (with Idempotent-Replayed, since a report is a write), each report code named
// under its status, in the operation's check order too, and listed in x-svc-problem-codes.
func TestContractReportsOpenAPI(t *testing.T) {
	t.Parallel()
	raw, err := fs.ReadFile(contracts.FS(), "openapi/agent.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths        map[string]map[string]map[string]any `json:"paths"`
		ProblemCodes map[string]struct {
			Status int    `json:"status"`
			Title  string `json:"title"`
		} `json:"x-svc-problem-codes"`
	}
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	routes := reports.NewReports(reports.DefaultConfig(), nil, nil, nil, nil).Routes()
	if routes.Module != reports.ID || routes.Plane != plugin.Agent || len(routes.Agent) == 0 {
		t.Fatalf("routes %+v", routes)
	}
	for _, r := range routes.Agent {
		p := plugin.AgentPrefix + r.Path
		op, ok := doc.Paths[p][strings.ToLower(r.Method)]
		if !ok {
			t.Errorf("agent.json has no %s %s", r.Method, p)
			continue
		}
		if op["x-svc-module"] != reports.ID {
			t.Errorf("%s %s: x-svc-module %v", r.Method, p, op["x-svc-module"])
		}
		if op["x-svc-tool"] != "report" {
			t.Errorf("%s %s: x-svc-tool %v, want report", r.Method, p, op["x-svc-tool"])
		}
		responses, _ := op["responses"].(map[string]any)
		if _, ok := responses["200"]; ok {
			t.Errorf("%s %s declares 200: a report answers 201", r.Method, p)
		}
		created, _ := responses["201"].(map[string]any)
		content, _ := created["content"].(map[string]any)
		for _, mt := range []string{"application/json", "application/svc+json; version=1"} {
			media, _ := content[mt].(map[string]any)
			sch, _ := media["schema"].(map[string]any)
			if sch["$ref"] != "/contracts/schemas/created-report-response"+schema.Suffix {
				t.Errorf("%s %s: 201 %s schema %v, want created-report-response", r.Method, p, mt, sch["$ref"])
			}
		}
		if headers, _ := created["headers"].(map[string]any); r.Write && headers["Idempotent-Replayed"] == nil {
			t.Errorf("%s %s: the 201 of a write does not declare Idempotent-Replayed", r.Method, p)
		}
		desc, _ := op["description"].(string)
		for code, status := range ctReportCodes {
			resp, _ := responses[status].(map[string]any)
			text, _ := resp["description"].(string)
			if !strings.Contains(text, string(code)) {
				t.Errorf("%s %s: the %s response does not name %s", r.Method, p, status, code)
			}
			if !strings.Contains(desc, status+" "+string(code)) {
				t.Errorf("%s %s: the check order does not name %s %s", r.Method, p, status, code)
			}
		}
		for _, billing := range []string{"pricing_version_not_accepted", "price_exceeds_cap", "insufficient_credits"} {
			if strings.Contains(string(mustJSON(t, op)), billing) {
				t.Errorf("%s %s names %s, but a report is never billed", r.Method, p, billing)
			}
		}
	}
	codes := problem.Codes()
	for code := range ctReportCodes {
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

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The agent guide's reporting chapter (skill/reporting.md) shows a request and an answer the schemas
// accept, so that an agent copying them sends (or expects) the real shapes, and names the route, every
// reason and every code; the core names the route and the reason for prompt injection.
func TestContractReportsSkillExamples(t *testing.T) {
	t.Parallel()
	raw, err := fs.ReadFile(contracts.FS(), contracts.SkillChapterFile("reporting"))
	if err != nil {
		t.Fatal(err)
	}
	examples := map[string]string{
		`{"target_reply_id": `: "create-report-request",
		`{"report_id": `:       "created-report-response",
	}
	blocks := strings.Split(string(raw), "```json\n")
	for prefix, name := range examples {
		found := 0
		for _, b := range blocks[1:] {
			block, _, ok := strings.Cut(b, "```")
			if !ok || !strings.HasPrefix(block, prefix) {
				continue
			}
			found++
			if err := schema.Published().Validate(name, []byte(block)); err != nil {
				t.Errorf("the reporting chapter's %s example is refused: %v\n%s", name, err, block)
			}
		}
		if found != 1 {
			t.Errorf("the reporting chapter has %d JSON blocks starting with %s, want 1", found, prefix)
		}
	}
	if !regexp.MustCompile(`(?m)^## Reporting$`).Match(raw) {
		t.Error("the reporting chapter has no section Reporting")
	}
	core, err := fs.ReadFile(contracts.FS(), contracts.SkillFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{plugin.AgentPrefix + reports.ReportsPath, "`prompt_injection`", "(skill/reporting.md)"} {
		if !strings.Contains(string(core), s) {
			t.Errorf("SKILL.md does not name %s", s)
		}
	}
	for _, s := range []string{plugin.AgentPrefix + reports.ReportsPath, "`prompt_injection`", "40",
		"`report_target_required`", "`target_not_found`", "`report_already_open`", "`explanation_quotes_content`",
		"`report_limit_exceeded`", "`content_hidden`", `"hidden": true`, "never billed"} {
		if !strings.Contains(string(raw), s) {
			t.Errorf("the reporting chapter does not name %s", s)
		}
	}
	for _, reason := range reports.Reasons {
		if !strings.Contains(string(raw), "| `"+reason+"` |") {
			t.Errorf("the reporting chapter does not explain the reason %s", reason)
		}
	}
}
