package reports_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/modules/reports"
	"github.com/svcforum/svc/testkit"
)

// The report's own codes, by the status agent.json must name each under.
var reportCodes = map[problem.Code]string{
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
	doc := testkit.LoadOpenAPI(t, "openapi/agent.json")
	routes := reports.NewReports(reports.DefaultConfig(), nil, nil, nil, nil).Routes()
	if routes.Module != reports.ID || routes.Plane != plugin.Agent || len(routes.Agent) == 0 {
		t.Fatalf("routes %+v", routes)
	}
	for _, r := range routes.Agent {
		p := plugin.AgentPrefix + r.Path
		where := r.Method + " " + p
		op, ok := doc.Paths[p][strings.ToLower(r.Method)]
		if !ok {
			t.Errorf("agent.json has no %s", where)
			continue
		}
		if op.Module != reports.ID {
			t.Errorf("%s: x-svc-module %v", where, op.Module)
		}
		testkit.CheckTool(t, where, op, "report")
		if _, ok := op.Responses["200"]; ok {
			t.Errorf("%s declares 200: a report answers 201", where)
		}
		testkit.CheckAnswerSchema(t, where, op, "201", "created-report-response")
		if r.Write && op.Headers("201")["Idempotent-Replayed"] == nil {
			t.Errorf("%s: the 201 of a write does not declare Idempotent-Replayed", where)
		}
		for code, status := range reportCodes {
			if text, _ := op.Responses[status]["description"].(string); !strings.Contains(text, string(code)) {
				t.Errorf("%s: the %s response does not name %s", where, status, code)
			}
			if !strings.Contains(op.Description, status+" "+string(code)) {
				t.Errorf("%s: the check order does not name %s %s", where, status, code)
			}
		}
		for _, billing := range []string{"pricing_version_not_accepted", "price_exceeds_cap", "insufficient_credits"} {
			if op.Names(billing) {
				t.Errorf("%s names %s, but a report is never billed", where, billing)
			}
		}
	}
	var codes []problem.Code
	for code := range reportCodes {
		codes = append(codes, code)
	}
	testkit.CheckProblemCodes(t, doc, codes...)
}

// The agent guide's reporting chapter (skill/reporting.md) shows a request and an answer the schemas
// accept, so that an agent copying them sends (or expects) the real shapes, and names the route, every
// reason and every code; the core names the route and the reason for prompt injection.
func TestContractReportsSkillExamples(t *testing.T) {
	t.Parallel()
	chapter := string(testkit.ReadContract(t, contracts.SkillChapterFile("reporting")))
	testkit.CheckExamples(t, "the reporting chapter", chapter, map[string]string{
		`{"target_reply_id": `: "create-report-request",
		`{"report_id": `:       "created-report-response",
	})
	if !regexp.MustCompile(`(?m)^## Reporting$`).MatchString(chapter) {
		t.Error("the reporting chapter has no section Reporting")
	}
	testkit.CheckNames(t, "SKILL.md", string(testkit.ReadContract(t, contracts.SkillFile)),
		plugin.AgentPrefix+reports.ReportsPath, "`prompt_injection`", "(skill/reporting.md)")
	testkit.CheckNames(t, "the reporting chapter", chapter, plugin.AgentPrefix+reports.ReportsPath, "`prompt_injection`", "40",
		"`report_target_required`", "`target_not_found`", "`report_already_open`", "`explanation_quotes_content`",
		"`report_limit_exceeded`", "`content_hidden`", `"hidden": true`, "never billed")
	for _, reason := range reports.Reasons {
		if !strings.Contains(chapter, "| `"+reason+"` |") {
			t.Errorf("the reporting chapter does not explain the reason %s", reason)
		}
	}
}
