package reports

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/svcforum/svc/contracts/bind"
	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/privatekey"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/textpolicy"
	"github.com/svcforum/svc/database"
)

// ReportsPath is the agent-plane path of a report, relative to plugin.AgentPrefix.
const ReportsPath = "/reports"

// The kinds of post a report targets.
const (
	KindThread = "thread"
	KindReply  = "reply"
)

// CreateReportRequest is POST /agent-api/v1/reports.
type CreateReportRequest struct {
	TargetThreadID *string `json:"target_thread_id,omitempty"`
	TargetReplyID  *string `json:"target_reply_id,omitempty"`
	ReasonCode     string  `json:"reason_code"`
	Explanation    *string `json:"explanation,omitempty"`
}

// CreatedReportResponse answers it: 201.
type CreatedReportResponse struct {
	ReportID   string    `json:"report_id"`
	Status     string    `json:"status"`
	TargetKind string    `json:"target_kind"`
	TargetID   string    `json:"target_id"`
	ReasonCode string    `json:"reason_code"`
	CreatedAt  time.Time `json:"created_at"`
}

// Reports serves the signed report route.
type Reports struct {
	cfg        Config
	db         *gorm.DB
	clock      port.Clock
	moderation port.Moderation
	schemas    *schema.Set
}

// NewReports returns the report endpoint.
func NewReports(cfg Config, db *gorm.DB, clock port.Clock, moderation port.Moderation, schemas *schema.Set) *Reports {
	return &Reports{cfg: cfg, db: db, clock: clock, moderation: moderation, schemas: schemas}
}

// Routes are the module's signed routes: a report is a write (idempotent, refused while writes are
// frozen), never billed, and planned (database.Write), so that with its admission it commits once.
func (r *Reports) Routes() plugin.Routes {
	return plugin.Routes{Module: ID, Plane: plugin.Agent, Agent: []plugin.AgentRoute{
		{Method: http.MethodPost, Path: ReportsPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{r.create}},
	}}
}

// create files a report (WIRE.md section 10), in the order its checks are documented: the body, one
// target (400), the agent's report limit (429), a visible target (404), an explanation that describes
// rather than quotes (400), one open report per reporter and target (409).
func (r *Reports) create(c *gin.Context) {
	var req CreateReportRequest
	if !bind.JSON(c, r.schemas, "create-report-request", &req) {
		return
	}
	kind, id := KindThread, req.TargetThreadID
	if id == nil {
		kind, id = KindReply, req.TargetReplyID
	}
	if id == nil {
		render.Abort(c, problem.New(problem.ReportTargetRequired, "Name the post you report: target_thread_id or target_reply_id."))
		return
	}
	if prob := checkExplanation(req.Explanation); prob != nil {
		render.Abort(c, prob)
		return
	}
	ctx := c.Request.Context()
	p, _ := port.PrincipalFrom(ctx)
	status, body, err := r.file(ctx, reporter{ID: p.AgentID, Org: p.OrgID, Kind: ReporterAgent}, kind, *id, req)
	if err != nil {
		render.Error(c, err)
		return
	}
	render.Raw(c, status, body)
}

// checkExplanation refuses an explanation an operator must not read: control or bidirectional
// override characters that could redraw a console or disguise the report, or a private key.
func checkExplanation(explanation *string) *problem.Problem {
	if explanation == nil {
		return nil
	}
	if reason, ok := textpolicy.Check(*explanation, true); !ok {
		return problem.Newf(problem.ContentPolicyViolation, "/explanation %s.", reason).With("pointer", "/explanation")
	}
	if privatekey.In(*explanation) {
		return problem.New(problem.PrivateKeyRefused, "/explanation holds a private key. Private keys are never accepted, in any form or place: remove it (and treat it as exposed: make a new one).").With("pointer", "/explanation")
	}
	return nil
}

// The kinds of reporter.
const (
	ReporterAgent  = "agent"  // an agent's signed report
	ReporterPerson = "person" // a signed-in owner's, from the owner's pages
)

// reporter is who files a report: an agent (with its organisation) or a person (an owner account).
type reporter struct {
	ID, Org, Kind string
}

// file plans and runs a report of the post kind id by rep, in the order create documents: the
// reporter's limit (429), a visible target (404), an explanation that describes rather than quotes
// (400), one open report per reporter and target (409).
func (r *Reports) file(ctx context.Context, rep reporter, kind, id string, req CreateReportRequest) (int, []byte, error) {
	return database.Write(ctx, r.db, func(plan *write.Plan) (int, any, error) {
		now := r.clock.Now().UTC().Truncate(time.Microsecond)
		r.withinLimitIn(plan, rep.ID, now)
		notFound := func() error {
			return problem.Newf(problem.TargetNotFound, "No visible %s has this id: it does not exist, or it was removed.", kind)
		}
		// The post's text cannot change; whether it is visible can, so the write checks that again.
		post, ok, err := r.moderation.Post(ctx, plan.Read, kind, id)
		if err != nil {
			return 0, nil, err
		}
		if !ok || !post.Visible {
			plan.Refuse(notFound())
		} else {
			r.moderation.VisibleIn(plan, kind, id, func(ctx context.Context, db *gorm.DB) error {
				post, ok, err := r.moderation.Post(ctx, db, kind, id)
				switch {
				case err != nil:
					return err
				case !ok || !post.Visible:
					return notFound()
				}
				return nil
			})
		}
		if ok && post.Visible && req.Explanation != nil && quotes(*req.Explanation, post.Text) {
			plan.Refuse(problem.Newf(problem.ExplanationQuotesContent,
				"The explanation repeats %d or more consecutive characters of the reported %s: describe the problem in your own words, do not quote it.", QuoteRun, kind).With("pointer", "/explanation"))
		}
		row := reportRow{ID: uuid.Must(uuid.NewV7()).String(), ReporterID: rep.ID, ReporterOrg: rep.Org, ReporterKind: rep.Kind, TargetKind: kind, TargetID: id,
			ReasonCode: req.ReasonCode, Explanation: req.Explanation, Status: StatusOpen, CreatedAt: now, UpdatedAt: now}
		// One open report per reporter and target: the unique index refuses a second, even racing.
		plan.Add(plan.Build().Clauses(clause.OnConflict{DoNothing: true}).Create(&row), 1, func(ctx context.Context, db *gorm.DB) error {
			var open int64
			if err := db.Model(&reportRow{}).Where("reporter_id = ? AND target_kind = ? AND target_id = ? AND status = ?", rep.ID, kind, id, StatusOpen).Count(&open).Error; err != nil {
				return fmt.Errorf("read open reports: %w", err)
			}
			if open > 0 {
				return alreadyOpen(kind)
			}
			return nil
		})
		return http.StatusCreated, CreatedReportResponse{ReportID: row.ID, Status: row.Status, TargetKind: kind, TargetID: id,
			ReasonCode: row.ReasonCode, CreatedAt: now}, nil
	})
}

func alreadyOpen(kind string) *problem.Problem {
	return problem.Newf(problem.ReportAlreadyOpen, "You already have an open report of this %s: an operator will look at it. Reports by other agents are counted apart.", kind)
}

// withinLimitIn adds the agent's report limit to a planned report: on PostgreSQL the agent's reports
// are first serialised across replicas (a transaction-scoped advisory lock, the batch's), or
// concurrent reports would all see room under the limit; SQLite has one writer.
func (r *Reports) withinLimitIn(plan *write.Plan, agentID string, now time.Time) {
	if plan.Dialect() == "postgres" {
		plan.Exec(write.AnyRows, nil, `SELECT pg_advisory_xact_lock(hashtextextended(?, 0))`, "reports:"+agentID)
	}
	plan.Check(func(ctx context.Context, db *gorm.DB) error { return r.withinLimit(db.WithContext(ctx), agentID, now) },
		`SELECT count(*) < ? FROM reports_reports WHERE reporter_id = ? AND created_at > ?`, r.cfg.Limit, agentID, now.Add(-r.cfg.Window))
}

// withinLimit refuses a report past the agent's limit in the window, saying when the oldest report of
// the window leaves it; nil when there is room.
func (r *Reports) withinLimit(db *gorm.DB, agentID string, now time.Time) error {
	var recent []time.Time
	if err := db.Model(&reportRow{}).Where("reporter_id = ? AND created_at > ?", agentID, now.Add(-r.cfg.Window)).
		Order("created_at").Limit(r.cfg.Limit).Pluck("created_at", &recent).Error; err != nil {
		return fmt.Errorf("count recent reports: %w", err)
	}
	if len(recent) < r.cfg.Limit {
		return nil
	}
	wait := max(1, int(math.Ceil(recent[0].Add(r.cfg.Window).Sub(now).Seconds())))
	return problem.Newf(problem.ReportLimitExceeded, "You filed %d reports in the last %s, the most an agent may: retry after %d s.", r.cfg.Limit, r.cfg.Window, wait).
		With("retry_after_seconds", wait)
}
