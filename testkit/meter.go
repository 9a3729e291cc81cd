package testkit

import (
	"context"
	"fmt"
	"sync"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// ChargeRow is the row Meter adds to the write's own plan for each charge it accepts: it
// exists exactly when the write committed. Migrate its table with the module's (db.AutoMigrate).
type ChargeRow struct {
	ID             string `gorm:"primaryKey;size:36"`
	AgentID        string `gorm:"size:36"`
	OrgID          string `gorm:"size:36"`
	Operation      string `gorm:"size:32"`
	ResourceID     string `gorm:"size:64"`
	IdempotencyKey string `gorm:"size:128"`
	PricingVersion string `gorm:"size:64"`
	MaxCreditCost  int64
	Attachments    int
}

// TableName is the charges' table.
func (ChargeRow) TableName() string { return "testkit_charges" }

// RefundRow is the row Meter writes on the caller's transaction for each refund it makes: one per
// refunded charge, keyed by operation and resource, so that, as with the real meter, a charge is
// refunded at most once whatever the number of calls. Migrate its table with the module's.
type RefundRow struct {
	Operation  string `gorm:"primaryKey;size:32"`
	ResourceID string `gorm:"primaryKey;size:64"`
	Reason     string `gorm:"size:64"`
}

// TableName is the refunds' table.
func (RefundRow) TableName() string { return "testkit_refunds" }

// MeterCall is one call of Meter, as it received it.
type MeterCall struct {
	Principal port.Principal
	Charge    port.Charge
	Refused   bool
}

// Meter is a recording test double of port.Meter, for the tests of a module that charges through it
// without owning billing: it records every call, adds a ChargeRow to the caller's planned write (so a
// rolled-back write leaves none, as with the real meter), prices every operation at Price, refuses a
// price above the declared cap like the real one, and can be told to refuse every charge.
type Meter struct {
	mu      sync.Mutex
	price   int64
	calls   []MeterCall
	refunds []port.Refund
	refuse  *problem.Problem
	fail    error
}

// NewMeter returns a meter charging price for every operation.
func NewMeter(price int64) *Meter { return &Meter{price: price} }

// Plan adds c's row to plan, or a refusal where the real meter would refuse: before its rows. A
// planned charge is recorded when it is decided: when its plan commits, or when its refusal is the
// answer (a refusal planned after a step that fails is never reached, as in a transaction).
func (m *Meter) Plan(ctx context.Context, plan *write.Plan, p port.Principal, c port.Charge) (port.Receipt, error) {
	row, rc, refusal, refused := m.decide(p, c)
	if refusal != nil {
		plan.Check(func(context.Context, *gorm.DB) error { m.record(p, c, refused); return refusal }, "SELECT 1 = 0")
		return port.Receipt{}, nil
	}
	plan.Add(plan.Build().Create(&row), 1, nil)
	plan.OnCommit(func() { m.record(p, c, false) })
	return rc, nil
}

// decide is what the meter does with c: the row and receipt of an accepted charge, or the refusal
// (refused: the meter was told to refuse, rather than the price being above the cap).
func (m *Meter) decide(p port.Principal, c port.Charge) (ChargeRow, port.Receipt, *problem.Problem, bool) {
	m.mu.Lock()
	refuse, price := m.refuse, m.price
	m.mu.Unlock()
	if refuse != nil {
		cp := *refuse
		return ChargeRow{}, port.Receipt{}, &cp, true
	}
	if price > c.Billing.MaxCreditCost {
		return ChargeRow{}, port.Receipt{}, problem.New(problem.PriceExceedsCap, "The effective price exceeds max_credit_cost.").With("effective_price", price), false
	}
	row := ChargeRow{ID: uuid.Must(uuid.NewV7()).String(), AgentID: p.AgentID, OrgID: p.OrgID, Operation: c.Operation,
		ResourceID: c.ResourceID, IdempotencyKey: c.IdempotencyKey, PricingVersion: c.Billing.PricingVersion,
		MaxCreditCost: c.Billing.MaxCreditCost, Attachments: c.Attachments}
	return row, port.Receipt{UsageEventID: row.ID, Price: price, PricingVersion: c.Billing.PricingVersion, Balance: 1000}, nil, false
}

func (m *Meter) record(p port.Principal, c port.Charge, refused bool) {
	m.mu.Lock()
	m.calls = append(m.calls, MeterCall{Principal: p, Charge: c, Refused: refused})
	m.mu.Unlock()
}

// Refund records r and, unless its charge was refunded already (a RefundRow exists), writes its row on
// tx; it does not look for the charge, which the tests of a module without billing do not keep. A
// refund fails with the error FailRefunds set.
func (m *Meter) Refund(ctx context.Context, tx *gorm.DB, r port.Refund) (port.Receipt, bool, error) {
	m.mu.Lock()
	m.refunds = append(m.refunds, r)
	fail, price := m.fail, m.price
	m.mu.Unlock()
	if fail != nil {
		return port.Receipt{}, false, fail
	}
	res := tx.WithContext(ctx).Clauses(clause.OnConflict{DoNothing: true}).
		Create(&RefundRow{Operation: r.Operation, ResourceID: r.ResourceID, Reason: r.Reason})
	if res.Error != nil {
		return port.Receipt{}, false, fmt.Errorf("record test refund: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return port.Receipt{}, false, nil
	}
	return port.Receipt{UsageEventID: uuid.Must(uuid.NewV7()).String(), Price: price, Balance: 1000}, true, nil
}

// FailRefunds makes every later refund fail with err (nil: refund again).
func (m *Meter) FailRefunds(err error) {
	m.mu.Lock()
	m.fail = err
	m.mu.Unlock()
}

// Refunds returns the refunds asked for so far, made or not.
func (m *Meter) Refunds() []port.Refund {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]port.Refund(nil), m.refunds...)
}

// Refuse makes every later charge fail with p (nil: accept again).
func (m *Meter) Refuse(p *problem.Problem) {
	m.mu.Lock()
	m.refuse = p
	m.mu.Unlock()
}

// Calls returns the calls so far.
func (m *Meter) Calls() []MeterCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MeterCall(nil), m.calls...)
}

var _ port.Meter = (*Meter)(nil)
