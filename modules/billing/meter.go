package billing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/google/uuid"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// Meter charges metered writes inside the caller's transaction (port.Meter).
type Meter struct {
	clock   port.Clock
	metrics *meterMetrics
	prices  sync.Map // pricing version code -> prices: a version's prices never change once published
}

// NewMeter returns the meter.
func NewMeter(clock port.Clock) *Meter { return &Meter{clock: clock, metrics: newMeterMetrics()} }

// Plan adds the charge to a planned write, in this order: the pricing version is still accepted
// (its prices are read once per process: they never change), the price is within the cap, the debit
// cannot overdraw, then the usage event and its ledger row. The balance the receipt gives is a Late:
// the wallet's balance after the debit, as the debit returns it and as the later statements read it.
func (m *Meter) Plan(ctx context.Context, plan *write.Plan, p port.Principal, c port.Charge) (port.Receipt, error) {
	if !slices.Contains(port.Operations, c.Operation) {
		return port.Receipt{}, fmt.Errorf("charge: %q is not a metered operation", c.Operation)
	}
	now := m.clock.Now()
	code := c.Billing.PricingVersion
	notAccepted := func(ctx context.Context, db *gorm.DB) error {
		_, err := accepted(db.WithContext(ctx), code, now)
		return err
	}
	pv, known, err := m.pricesOf(ctx, plan.Read, code)
	if err != nil {
		return port.Receipt{}, err
	}
	if !known {
		// Unpriced, the plan must not commit, even if the version is published before it runs: it
		// fails here, and the explanation either refuses or (the version now exists) plans it again.
		plan.Check(notAccepted, "SELECT 1 = 0")
		return port.Receipt{}, nil
	}
	plan.Check(notAccepted, "SELECT count(*) = 1 FROM billing_pricing_versions WHERE code = ? AND (accepted_until IS NULL OR accepted_until > ?)", code, now)
	price, err := pv.price(c)
	var refusal *problem.Problem
	if errors.As(err, &refusal) {
		plan.Refuse(refusal)
		return port.Receipt{}, nil
	}
	if err != nil {
		return port.Receipt{}, err
	}
	var balance int64
	if price == 0 {
		// A free operation needs no credits, but its receipt's balance must be the one it answers and
		// stores alike: with no wallet row the debit would lock nothing, and an operator's first credit
		// committing between the debit and the stored answer would make the two differ. So the wallet
		// is made (empty) if it is missing, and the debit locks it as every other debit does.
		plan.Exec(write.AnyRows, nil, `INSERT INTO billing_wallets (org_id, balance, updated_at) VALUES (?, 0, ?) ON CONFLICT (org_id) DO NOTHING`, p.OrgID, now)
	}
	plan.Returning(1, func(context.Context, *gorm.DB) error { return insufficient(c, price) }, []any{&balance},
		`UPDATE billing_wallets SET balance = balance - ?, updated_at = ? WHERE org_id = ? AND balance >= ? RETURNING balance`,
		price, now, p.OrgID, price)
	after := "COALESCE((SELECT balance FROM billing_wallets WHERE org_id = ?), 0)"
	ev := UsageEvent{ID: newID(), OrgID: p.OrgID, AgentID: p.AgentID, Kind: KindCharge, Operation: c.Operation, Price: price,
		PricingVersion: code, IdempotencyKey: c.IdempotencyKey, ResourceID: c.ResourceID, CreatedAt: now}
	plan.Add(plan.Build().Create(&ev), 1, nil)
	plan.Exec(1, nil, `INSERT INTO billing_ledger (id, org_id, kind, amount, balance_after, reason, usage_event_id, created_at)
SELECT ?, ?, ?, ?, `+after+`, ?, ?, ?`, newID(), p.OrgID, KindCharge, price, p.OrgID, c.Operation, ev.ID, now)
	plan.OnCommit(m.count(c.Operation, price))
	return port.Receipt{UsageEventID: ev.ID, Price: price, PricingVersion: code, Balance: plan.Late(&balance, after, p.OrgID)}, nil
}

// Refund gives back the charge of r.Operation for r.ResourceID on tx (port.Meter): the refund's usage
// event names the charge in refund_of, whose unique index makes the refund happen at most once (a
// second one, in this transaction or any other, concurrent or later, inserts nothing and stops there);
// then the wallet gets the charge's price back and the ledger records it as a refund.
func (m *Meter) Refund(ctx context.Context, tx *gorm.DB, r port.Refund) (port.Receipt, bool, error) {
	tx = tx.WithContext(ctx)
	var charges []UsageEvent
	if err := tx.Where("resource_id = ? AND operation = ? AND kind = ?", r.ResourceID, r.Operation, KindCharge).
		Order("id").Limit(1).Find(&charges).Error; err != nil {
		return port.Receipt{}, false, fmt.Errorf("find the charge to refund: %w", err)
	}
	if len(charges) == 0 {
		return port.Receipt{}, false, nil
	}
	c := charges[0]
	now := m.clock.Now()
	ev := UsageEvent{ID: newID(), OrgID: c.OrgID, AgentID: c.AgentID, Kind: KindRefund, RefundOf: &c.ID,
		Operation: c.Operation, Price: c.Price, PricingVersion: c.PricingVersion, IdempotencyKey: c.IdempotencyKey,
		ResourceID: c.ResourceID, CreatedAt: now}
	res := tx.Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "refund_of"}}, DoNothing: true}).Create(&ev)
	if res.Error != nil {
		return port.Receipt{}, false, fmt.Errorf("record refund: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		return port.Receipt{}, false, nil // refunded already
	}
	var wallets []Wallet
	if err := tx.Raw(`INSERT INTO billing_wallets (org_id, balance, updated_at) VALUES (?, ?, ?)
ON CONFLICT (org_id) DO UPDATE SET balance = billing_wallets.balance + excluded.balance, updated_at = excluded.updated_at
RETURNING org_id, balance, updated_at`, c.OrgID, c.Price, now).Scan(&wallets).Error; err != nil {
		return port.Receipt{}, false, fmt.Errorf("refund to wallet: %w", err)
	}
	if len(wallets) != 1 {
		return port.Receipt{}, false, fmt.Errorf("refund to wallet: %d rows", len(wallets))
	}
	entry := LedgerEntry{ID: newID(), OrgID: c.OrgID, Kind: KindRefund, Amount: c.Price, BalanceAfter: wallets[0].Balance,
		Reason: refundReason(c.Operation, r.Reason), UsageEventID: &ev.ID, CreatedAt: now}
	if err := tx.Create(&entry).Error; err != nil {
		return port.Receipt{}, false, fmt.Errorf("record refund in ledger: %w", err)
	}
	return port.Receipt{UsageEventID: ev.ID, Price: c.Price, PricingVersion: c.PricingVersion, Balance: wallets[0].Balance}, true, nil
}

// refundReason is a refund's line in the ledger: the operation and why (cut to the column's 500).
func refundReason(operation, why string) string {
	reason := operation + " refunded"
	if why != "" {
		reason += ": " + why
	}
	if r := []rune(reason); len(r) > 500 {
		reason = string(r[:500])
	}
	return reason
}

// versionPrices is what a pricing version charges.
type versionPrices struct {
	code          string
	prices        map[string]int64
	perAttachment int64
}

func parsePrices(v PricingVersion) (versionPrices, error) {
	pv := versionPrices{code: v.Code, perAttachment: v.PerAttachment}
	if err := json.Unmarshal([]byte(v.Prices), &pv.prices); err != nil {
		return versionPrices{}, fmt.Errorf("decode prices of %s: %w", v.Code, err)
	}
	return pv, nil
}

// pricesOf returns the prices of the version code, read once per process; known is false when no
// version has the code.
func (m *Meter) pricesOf(ctx context.Context, db *gorm.DB, code string) (pv versionPrices, known bool, err error) {
	if v, ok := m.prices.Load(code); ok {
		return v.(versionPrices), true, nil
	}
	var vs []PricingVersion
	if err := db.WithContext(ctx).Where("code = ?", code).Limit(1).Find(&vs).Error; err != nil {
		return versionPrices{}, false, fmt.Errorf("read pricing version: %w", err)
	}
	if len(vs) == 0 {
		return versionPrices{}, false, nil
	}
	if pv, err = parsePrices(vs[0]); err != nil {
		return versionPrices{}, false, err
	}
	m.prices.Store(code, pv)
	return pv, true, nil
}

// price is what c costs under the version: the operation's price and per_attachment for each
// attachment; a price above the declared cap is refused (409 price_exceeds_cap).
func (pv versionPrices) price(c port.Charge) (int64, error) {
	base := pv.prices[c.Operation]
	if c.Attachments < 0 || (pv.perAttachment > 0 && int64(c.Attachments) > (math.MaxInt64-base)/pv.perAttachment) {
		return 0, fmt.Errorf("charge: %d attachments cannot be priced", c.Attachments)
	}
	price := base + pv.perAttachment*int64(c.Attachments)
	if price > c.Billing.MaxCreditCost {
		return 0, problem.Newf(problem.PriceExceedsCap,
			"The effective price of %s under pricing version %s is %d credits, above your max_credit_cost of %d; nothing was charged.",
			c.Operation, pv.code, price, c.Billing.MaxCreditCost).With("effective_price", price)
	}
	return price, nil
}

func insufficient(c port.Charge, price int64) error {
	return problem.Newf(problem.InsufficientCredits,
		"Your organisation's wallet holds less than the %d credits %s costs; nothing was charged.", price, c.Operation).
		With("effective_price", price)
}

// debit takes amount from orgID's wallet on tx with one conditional update, so that concurrent debits
// can never overdraw it (PostgreSQL re-evaluates the condition on the row a concurrent writer left;
// SQLite runs one writer at a time). ok is false, and nothing changes, when the wallet holds less. A
// missing wallet holds 0.
func debit(tx *gorm.DB, orgID string, amount int64, now time.Time) (balance int64, ok bool, err error) {
	var rows []Wallet
	err = tx.Raw(`UPDATE billing_wallets SET balance = balance - ?, updated_at = ?
WHERE org_id = ? AND balance >= ? RETURNING org_id, balance, updated_at`, amount, now, orgID, amount).Scan(&rows).Error
	if err != nil {
		return 0, false, fmt.Errorf("debit wallet: %w", err)
	}
	if len(rows) == 1 {
		return rows[0].Balance, true, nil
	}
	if amount == 0 { // a free operation needs no wallet
		return 0, true, nil
	}
	return 0, false, nil
}

// newID returns a new UUIDv7 in lowercase canonical form.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

var _ port.Meter = (*Meter)(nil)
