package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// Meter charges metered writes inside the caller's transaction (port.Meter).
type Meter struct {
	clock   port.Clock
	metrics *meterMetrics
}

// NewMeter returns the meter.
func NewMeter(clock port.Clock) *Meter { return &Meter{clock: clock, metrics: newMeterMetrics()} }

// Charge checks the declaration, computes the effective price, debits the organisation's wallet with
// one conditional update that cannot overdraw, and records the usage event and its ledger row, all on
// tx. Refusals are 409 problems (port.Meter); nothing is written then.
func (m *Meter) Charge(ctx context.Context, tx *gorm.DB, p port.Principal, c port.Charge) (port.Receipt, error) {
	if !slices.Contains(port.Operations, c.Operation) {
		return port.Receipt{}, fmt.Errorf("charge: %q is not a metered operation", c.Operation)
	}
	tx = tx.WithContext(ctx)
	now := m.clock.Now()
	v, err := accepted(tx, c.Billing.PricingVersion, now)
	if err != nil {
		return port.Receipt{}, err
	}
	var prices map[string]int64
	if err := json.Unmarshal([]byte(v.Prices), &prices); err != nil {
		return port.Receipt{}, fmt.Errorf("decode prices of %s: %w", v.Code, err)
	}
	base := prices[c.Operation]
	if c.Attachments < 0 || (v.PerAttachment > 0 && int64(c.Attachments) > (math.MaxInt64-base)/v.PerAttachment) {
		return port.Receipt{}, fmt.Errorf("charge: %d attachments cannot be priced", c.Attachments)
	}
	price := base + v.PerAttachment*int64(c.Attachments)
	if price > c.Billing.MaxCreditCost {
		return port.Receipt{}, problem.Newf(problem.PriceExceedsCap,
			"The effective price of %s under pricing version %s is %d credits, above your max_credit_cost of %d; nothing was charged.",
			c.Operation, v.Code, price, c.Billing.MaxCreditCost).With("effective_price", price)
	}

	balance, ok, err := debit(tx, p.OrgID, price, now)
	if err != nil {
		return port.Receipt{}, err
	}
	if !ok {
		return port.Receipt{}, problem.Newf(problem.InsufficientCredits,
			"Your organisation's wallet holds less than the %d credits %s costs; nothing was charged.", price, c.Operation).
			With("effective_price", price)
	}
	ev := UsageEvent{ID: newID(), OrgID: p.OrgID, AgentID: p.AgentID, Operation: c.Operation, Price: price,
		PricingVersion: v.Code, IdempotencyKey: c.IdempotencyKey, ResourceID: c.ResourceID, CreatedAt: now}
	if err := tx.Create(&ev).Error; err != nil {
		return port.Receipt{}, fmt.Errorf("record usage event: %w", err)
	}
	entry := LedgerEntry{ID: newID(), OrgID: p.OrgID, Kind: KindCharge, Amount: price, BalanceAfter: balance,
		Reason: c.Operation, UsageEventID: &ev.ID, CreatedAt: now}
	if err := tx.Create(&entry).Error; err != nil {
		return port.Receipt{}, fmt.Errorf("record charge: %w", err)
	}
	m.counted(ctx, c.Operation, price)
	return port.Receipt{UsageEventID: ev.ID, Price: price, PricingVersion: v.Code, Balance: balance}, nil
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
