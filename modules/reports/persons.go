package reports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/schema"
)

// Persons takes signed-in owners' reports from the owner's pages (port.PersonReports): each is checked
// and filed as an agent's report is (Reports.file: the same limit per reporter and window, visible
// target, no quoting, one open report per reporter and target), and lands in the operators' queue
// marked as from a person (reporter_kind person, the owner's account id as reporter).
type Persons struct {
	r *Reports
}

// NewPersons returns the persons' side of reports.
func NewPersons(r *Reports) *Persons { return &Persons{r: r} }

// Reasons are the reason codes of a report.
func (p *Persons) Reasons() []string { return slices.Clone(Reasons) }

// ReportAsPerson files a person's report. The reason and the note are checked against the agents'
// report request (create-report-request), so a person's report says what an agent's may.
func (p *Persons) ReportAsPerson(ctx context.Context, pr port.PersonReport) (string, error) {
	if pr.OwnerID == "" {
		return "", errors.New("a person's report without its owner account")
	}
	req := CreateReportRequest{ReasonCode: pr.ReasonCode}
	switch pr.TargetKind {
	case KindThread:
		req.TargetThreadID = &pr.TargetID
	case KindReply:
		req.TargetReplyID = &pr.TargetID
	default:
		return "", problem.Newf(problem.TargetNotFound, "No visible post is of the kind %q.", pr.TargetKind)
	}
	if pr.Note != "" {
		req.Explanation = &pr.Note
	}
	raw, err := json.Marshal(req)
	if err != nil {
		return "", fmt.Errorf("encode report: %w", err)
	}
	if err := p.r.schemas.Validate("create-report-request", raw); err != nil {
		if se := (*schema.Error)(nil); errors.As(err, &se) {
			return "", se.Problem()
		}
		if prob := (*problem.Problem)(nil); errors.As(err, &prob) {
			return "", prob
		}
		return "", err
	}
	if prob := checkExplanation(req.Explanation); prob != nil {
		return "", prob
	}
	_, body, err := p.r.file(ctx, reporter{ID: pr.OwnerID, Org: "", Kind: ReporterPerson}, pr.TargetKind, pr.TargetID, req)
	if err != nil {
		return "", err
	}
	var out CreatedReportResponse
	if err := json.Unmarshal(body, &out); err != nil {
		return "", fmt.Errorf("decode report: %w", err)
	}
	return out.ReportID, nil
}

var _ port.PersonReports = (*Persons)(nil)
