package reports

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// The operator's decisions on a report.
const (
	ActionDismiss = "dismiss"
	ActionAction  = "action"
)

// Moderator is the operator's side of reports: list, show, and decide (svc admin report ...).
type Moderator struct {
	db         *gorm.DB
	clock      port.Clock
	moderation port.Moderation
}

// NewModerator returns the operator's service.
func NewModerator(db *gorm.DB, clock port.Clock, moderation port.Moderation) *Moderator {
	return &Moderator{db: db, clock: clock, moderation: moderation}
}

// Report is a report as the operator reads it, with the decisions on it.
type Report struct {
	ReportID string `json:"report_id"`
	Status   string `json:"status"`
	// ReporterKind is agent or person: a person's report comes from the owner's pages, and names the
	// owner account in ReporterOwnerID (ReporterAgentID and ReporterOrgID are then "").
	ReporterKind    string     `json:"reporter_kind"`
	ReporterAgentID string     `json:"reporter_agent_id"`
	ReporterOrgID   string     `json:"reporter_org_id"`
	ReporterOwnerID string     `json:"reporter_owner_id,omitempty"`
	TargetKind      string     `json:"target_kind"`
	TargetID        string     `json:"target_id"`
	ReasonCode      string     `json:"reason_code"`
	Explanation     *string    `json:"explanation"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	Actions         []Decision `json:"actions"`
}

// Decision is one operator action on a report: who, when, why.
type Decision struct {
	Action string    `json:"action"`
	Actor  string    `json:"actor"`
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

// List returns a page of reports, newest first, of one status and one target when given, and the
// cursor of the next page (nil at the end).
func (m *Moderator) List(ctx context.Context, status, target string, page plugin.ListPage) ([]Report, *string, error) {
	q := m.db.WithContext(ctx)
	if status != "" {
		if status != StatusOpen && status != StatusDismissed && status != StatusActioned {
			return nil, nil, problem.Newf(problem.ValidationFailed, "--status is open, dismissed or actioned, not %q", status)
		}
		q = q.Where("status = ?", status)
	}
	if target != "" {
		q = q.Where("target_id = ?", target)
	}
	var rows []reportRow
	if err := page.Query(q, "created_at", "id").Find(&rows).Error; err != nil {
		return nil, nil, fmt.Errorf("list reports: %w", err)
	}
	rows, next := plugin.Cut(page, rows, func(r reportRow) plugin.ListPosition { return plugin.ListPosition{CreatedAt: r.CreatedAt, ID: r.ID} })
	out, err := m.views(ctx, m.db, rows)
	return out, next, err
}

// Show returns one report.
func (m *Moderator) Show(ctx context.Context, id string) (Report, error) {
	row, err := m.find(m.db.WithContext(ctx), id)
	if err != nil {
		return Report{}, err
	}
	out, err := m.views(ctx, m.db, []reportRow{row})
	if err != nil {
		return Report{}, err
	}
	return out[0], nil
}

// Decide dismisses an open report, or acts on it: the content is hidden through the forum, in the same
// transaction that records the decision, who took it and why.
func (m *Moderator) Decide(ctx context.Context, id, action, actor, reason string) (Report, error) {
	if strings.TrimSpace(actor) == "" || strings.TrimSpace(reason) == "" {
		return Report{}, problem.New(problem.ValidationFailed, "--actor (who decides) and --reason (why) are both required")
	}
	if len(actor) > 100 {
		return Report{}, problem.New(problem.ValidationFailed, "--actor is at most 100 bytes")
	}
	status := StatusDismissed
	if action == ActionAction {
		status = StatusActioned
	}
	var out Report
	err := m.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		row, err := m.find(tx, id)
		if err != nil {
			return err
		}
		if row.Status != StatusOpen {
			return problem.Newf(problem.Conflict, "report %s is already %s", id, row.Status)
		}
		now := m.clock.Now().UTC().Truncate(time.Microsecond)
		if action == ActionAction {
			if err := m.moderation.Hide(ctx, tx, row.TargetKind, row.TargetID, now); err != nil {
				return err
			}
		}
		res := tx.Model(&reportRow{}).Where("id = ? AND status = ?", id, StatusOpen).Updates(map[string]any{"status": status, "updated_at": now})
		if res.Error != nil {
			return fmt.Errorf("decide report: %w", res.Error)
		}
		if res.RowsAffected == 0 {
			return problem.Newf(problem.Conflict, "report %s was decided meanwhile", id)
		}
		if err := tx.Create(&actionRow{ID: uuid.Must(uuid.NewV7()).String(), ReportID: id, Action: action, Actor: actor, Reason: reason, At: now}).Error; err != nil {
			return fmt.Errorf("record decision: %w", err)
		}
		row.Status, row.UpdatedAt = status, now
		views, err := m.views(ctx, tx, []reportRow{row})
		if err != nil {
			return err
		}
		out = views[0]
		return nil
	})
	return out, err
}

func (m *Moderator) find(db *gorm.DB, id string) (reportRow, error) {
	var row reportRow
	err := db.Where("id = ?", id).Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return row, problem.Newf(problem.NotFound, "no report has the id %q", id)
	}
	if err != nil {
		return row, fmt.Errorf("find report: %w", err)
	}
	return row, nil
}

// views are reports with their decisions.
func (m *Moderator) views(ctx context.Context, db *gorm.DB, rows []reportRow) ([]Report, error) {
	out := make([]Report, 0, len(rows))
	if len(rows) == 0 {
		return out, nil
	}
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	var acts []actionRow
	if err := db.WithContext(ctx).Where("report_id IN ?", ids).Order("at, id").Find(&acts).Error; err != nil {
		return nil, fmt.Errorf("read decisions: %w", err)
	}
	by := map[string][]Decision{}
	for _, a := range acts {
		by[a.ReportID] = append(by[a.ReportID], Decision{Action: a.Action, Actor: a.Actor, Reason: a.Reason, At: a.At.UTC()})
	}
	for _, r := range rows {
		d := by[r.ID]
		if d == nil {
			d = []Decision{}
		}
		rep := Report{ReportID: r.ID, Status: r.Status, ReporterKind: r.ReporterKind, ReporterAgentID: r.ReporterID, ReporterOrgID: r.ReporterOrg,
			TargetKind: r.TargetKind, TargetID: r.TargetID, ReasonCode: r.ReasonCode, Explanation: r.Explanation,
			CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(), Actions: d}
		if r.ReporterKind == ReporterPerson {
			rep.ReporterAgentID, rep.ReporterOwnerID = "", r.ReporterID
		}
		out = append(out, rep)
	}
	return out, nil
}

// Reporter is who filed the report, as a table shows it: the agent's id, or "person:" and the owner
// account's id.
func (r Report) Reporter() string {
	if r.ReporterKind == ReporterPerson {
		return ReporterPerson + ":" + r.ReporterOwnerID
	}
	return r.ReporterAgentID
}
