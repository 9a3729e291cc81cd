package onboarding

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
)

// queueOperatorMail queues, on tx, the operator's notice that the application row waits for approval
// (its address was just confirmed), when the deployment has an --operator-email. Its body is worded by
// the sender (operatorMail), from the application as it is then. The confirmation happens once per
// application, so the notice does too; a notice already queued is not queued again.
func (a *Applications) queueOperatorMail(ctx context.Context, tx *gorm.DB, row applicationRow) error {
	if a.deployment.OperatorEmail == "" {
		return nil
	}
	var n int64
	if err := tx.Model(&mailRow{}).Where("application_id = ? AND kind = ?", row.ID, MailOperatorApplication).Count(&n).Error; err != nil {
		return fmt.Errorf("read operator mail: %w", err)
	}
	if n > 0 {
		return nil
	}
	return a.mailer.Queue(ctx, tx, row.ID, MailOperatorApplication, a.deployment.OperatorEmail, "svc: the application for "+row.Handle+" waits for approval", "")
}

// wordOperatorMail words m, an operator's notice, from its application.
func (s *Sender) wordOperatorMail(db *gorm.DB, m *mailRow) error {
	var app applicationRow
	if err := db.Take(&app, "id = ?", *m.ApplicationID).Error; err != nil {
		return fmt.Errorf("read application: %w", err)
	}
	m.Body = operatorMail(s.deployment.BaseURL, app)
	return nil
}

// operatorMail tells the operator an application waits. It quotes nothing the applicant wrote but the
// handle (whose alphabet is closed) and the scope (one of two words): the rest is read with the admin
// command, not trusted to mail.
func operatorMail(baseURL string, app applicationRow) string {
	return fmt.Sprintf(`Hello,

the application %[1]s at %[2]s, for the agent %[3]q (%[4]s), has its address confirmed and waits for your decision.

Read it:     svc admin application show --application %[1]s
Approve it:  svc admin application approve --application %[1]s
Reject it:   svc admin application reject --application %[1]s --reason TEXT

svc
`, app.ID, baseURL, app.Handle, app.SetupScope)
}

// The states of the applications gauge: the admin's statuses, with "pending" split in two so that an
// application waiting for the operator stands apart from one waiting for its applicant.
const (
	GaugeAwaitingConfirmation = "awaiting_confirmation" // pending, its address not confirmed yet
	GaugeAwaitingApproval     = "awaiting_approval"     // pending, its address confirmed: the operator decides
)

// gaugeStates are the states the gauge always reports (0 when none is in it).
var gaugeStates = []string{GaugeAwaitingConfirmation, GaugeAwaitingApproval, StateApproved, StateRejected, StateRedeemed, StateExpired}

var applicationsDesc = prometheus.NewDesc("svc_onboarding_applications",
	"Applications by state, counted from the database at each scrape: awaiting_confirmation, awaiting_approval (the operator's queue), approved, rejected, redeemed, expired.",
	[]string{"state"}, nil)

// applicationCounts is the gauge's collector.
type applicationCounts struct{ a *Applications }

// Metrics is the applications gauge, for the host's /metrics.
func (a *Applications) Metrics() plugin.Metrics {
	return plugin.Metrics{Module: ID, Collectors: []prometheus.Collector{applicationCounts{a}}}
}

func (g applicationCounts) Describe(ch chan<- *prometheus.Desc) { ch <- applicationsDesc }

func (g applicationCounts) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := g.a.Counts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(applicationsDesc, err)
		return
	}
	for _, st := range gaugeStates {
		ch <- prometheus.MustNewConstMetric(applicationsDesc, prometheus.GaugeValue, float64(counts[st]), st)
	}
}

// Counts counts the applications by the gauge's states, with one grouped count. Expiry is read at the
// clock's time, as the admin's list shows it, whether or not the sweep has written it yet.
func (a *Applications) Counts(ctx context.Context) (map[string]int64, error) {
	now := a.clock.Now()
	var rows []struct {
		State string
		N     int64
	}
	if err := a.db.WithContext(ctx).Raw(`SELECT CASE
    WHEN state = ? AND invitation_expiry <= ? THEN ?
    WHEN state = ? AND email_confirmed_at IS NULL AND created_at <= ? THEN ?
    WHEN state = ? AND email_confirmed_at IS NULL THEN ?
    WHEN state = ? THEN ?
    ELSE state END AS state, COUNT(*) AS n
FROM `+applicationRow{}.TableName()+` GROUP BY 1`,
		StateApproved, now, StateExpired,
		StatePending, now.Add(-a.cfg.ConfirmTTL), StateExpired,
		StatePending, GaugeAwaitingConfirmation,
		StatePending, GaugeAwaitingApproval).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("count applications: %w", err)
	}
	out := make(map[string]int64, len(gaugeStates))
	for _, r := range rows {
		out[r.State] += r.N
	}
	return out, nil
}
