package billing

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
)

// Wallets keeps the organisations' wallets and their ledger.
type Wallets struct {
	db        *gorm.DB
	clock     port.Clock
	directory port.Directory
}

// NewWallets returns the wallets on db; directory tells which organisations exist.
func NewWallets(db *gorm.DB, clock port.Clock, directory port.Directory) *Wallets {
	return &Wallets{db: db, clock: clock, directory: directory}
}

// maxMovement bounds one credit or debit, so that a typo cannot overflow a balance.
const maxMovement = 1_000_000_000_000

// Credit adds credits to orgID's wallet (creating it) and records why.
func (w *Wallets) Credit(ctx context.Context, orgID string, credits int64, reason string) (Wallet, error) {
	if err := w.check(ctx, orgID, credits, reason); err != nil {
		return Wallet{}, err
	}
	var out Wallet
	err := w.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		now := w.clock.Now()
		var rows []Wallet
		if err := tx.Raw(`INSERT INTO billing_wallets (org_id, balance, updated_at) VALUES (?, ?, ?)
ON CONFLICT (org_id) DO UPDATE SET balance = billing_wallets.balance + excluded.balance, updated_at = excluded.updated_at
RETURNING org_id, balance, updated_at`, orgID, credits, now).Scan(&rows).Error; err != nil {
			return fmt.Errorf("credit wallet: %w", err)
		}
		if len(rows) != 1 {
			return fmt.Errorf("credit wallet: %d rows", len(rows))
		}
		out = rows[0]
		return tx.Create(&LedgerEntry{ID: newID(), OrgID: orgID, Kind: KindCredit, Amount: credits,
			BalanceAfter: out.Balance, Reason: reason, CreatedAt: now}).Error
	})
	return out, err
}

// Grant adds a grant's credits to its organisation's wallet on tx (port.Grants): a credit entry of the
// ledger keyed by the grant's key, so that a second grant with the key adds nothing. The ledger entry
// goes first: its key is unique, and on PostgreSQL a concurrent grant with the same key waits for this
// transaction and then finds it there.
func (w *Wallets) Grant(ctx context.Context, tx *gorm.DB, g port.Grant) (balance int64, granted bool, err error) {
	if err := checkMovement(g.Credits, g.Reason); err != nil {
		return 0, false, err
	}
	if g.OrgID == "" || g.Key == "" || len(g.Key) > 128 {
		return 0, false, fmt.Errorf("grant: an organisation and a key of 1 to 128 bytes are required")
	}
	tx = tx.WithContext(ctx)
	now, id := w.clock.Now(), newID()
	res := tx.Exec(`INSERT INTO billing_ledger (id, org_id, kind, amount, balance_after, reason, grant_key, created_at)
VALUES (?, ?, ?, ?, 0, ?, ?, ?) ON CONFLICT (grant_key) DO NOTHING`, id, g.OrgID, KindCredit, g.Credits, g.Reason, g.Key, now)
	if res.Error != nil {
		return 0, false, fmt.Errorf("record grant: %w", res.Error)
	}
	if res.RowsAffected == 0 {
		var wl Wallet
		if err := tx.Where("org_id = ?", g.OrgID).Limit(1).Find(&wl).Error; err != nil {
			return 0, false, fmt.Errorf("read wallet: %w", err)
		}
		return wl.Balance, false, nil
	}
	var rows []Wallet
	if err := tx.Raw(`INSERT INTO billing_wallets (org_id, balance, updated_at) VALUES (?, ?, ?)
ON CONFLICT (org_id) DO UPDATE SET balance = billing_wallets.balance + excluded.balance, updated_at = excluded.updated_at
RETURNING org_id, balance, updated_at`, g.OrgID, g.Credits, now).Scan(&rows).Error; err != nil {
		return 0, false, fmt.Errorf("grant credits: %w", err)
	}
	if len(rows) != 1 {
		return 0, false, fmt.Errorf("grant credits: %d rows", len(rows))
	}
	if err := tx.Model(&LedgerEntry{}).Where("id = ?", id).Update("balance_after", rows[0].Balance).Error; err != nil {
		return 0, false, fmt.Errorf("record grant: %w", err)
	}
	return rows[0].Balance, true, nil
}

// Debit removes credits from orgID's wallet, never below zero, and records why.
func (w *Wallets) Debit(ctx context.Context, orgID string, credits int64, reason string) (Wallet, error) {
	if err := w.check(ctx, orgID, credits, reason); err != nil {
		return Wallet{}, err
	}
	var out Wallet
	err := w.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		now := w.clock.Now()
		balance, ok, err := debit(tx, orgID, credits, now)
		if err != nil {
			return err
		}
		if !ok {
			return problem.Newf(problem.InsufficientCredits, "the wallet holds less than %d credits; a balance never goes negative", credits)
		}
		out = Wallet{OrgID: orgID, Balance: balance, UpdatedAt: now}
		return tx.Create(&LedgerEntry{ID: newID(), OrgID: orgID, Kind: KindDebit, Amount: credits,
			BalanceAfter: balance, Reason: reason, CreatedAt: now}).Error
	})
	return out, err
}

// Get returns orgID's wallet; an organisation without one holds 0 credits.
func (w *Wallets) Get(ctx context.Context, orgID string) (Wallet, error) {
	var rows []Wallet
	if err := w.db.WithContext(ctx).Where("org_id = ?", orgID).Limit(1).Find(&rows).Error; err != nil {
		return Wallet{}, fmt.Errorf("read wallet: %w", err)
	}
	if len(rows) == 0 {
		return Wallet{OrgID: orgID}, nil
	}
	return rows[0], nil
}

func (w *Wallets) check(ctx context.Context, orgID string, credits int64, reason string) error {
	if err := checkMovement(credits, reason); err != nil {
		return err
	}
	ok, err := w.directory.OrgExists(ctx, orgID)
	if err != nil {
		return err
	}
	if !ok {
		return problem.Newf(problem.NotFound, "no organisation has the id %q", orgID)
	}
	return nil
}

// checkMovement checks the credits and the reason of a credit, a debit or a grant.
func checkMovement(credits int64, reason string) error {
	if credits < 1 || credits > maxMovement {
		return problem.Newf(problem.ValidationFailed, "credits must be 1 to %d, got %d", int64(maxMovement), credits)
	}
	if n := utf8.RuneCountInString(reason); !utf8.ValidString(reason) || n < 1 || n > 500 ||
		strings.TrimSpace(reason) == "" || strings.ContainsFunc(reason, unicode.IsControl) {
		return problem.New(problem.ValidationFailed, "the reason must be 1 to 500 characters without control characters")
	}
	return nil
}

// Discrepancy is an organisation whose wallet disagrees with its ledger or its usage events.
type Discrepancy struct {
	OrgID         string `json:"org_id"`
	Balance       int64  `json:"balance"`        // the wallet's balance
	LedgerBalance int64  `json:"ledger_balance"` // credits - debits - charges + refunds in the ledger
	LedgerCharges int64  `json:"ledger_charges"` // charges less refunds in the ledger
	UsageCharges  int64  `json:"usage_charges"`  // prices of the charges less the refunds among the usage events
}

// Audit checks, for orgID or (when "") every organisation with a wallet or a ledger entry, that the
// balance equals credits minus debits minus charges plus refunds in the ledger, and that the ledger's
// charges less its refunds equal the usage events' (their charges' prices less their refunds'). It returns how many organisations it checked and each discrepancy.
func (w *Wallets) Audit(ctx context.Context, orgID string) (checked int, found []Discrepancy, err error) {
	type sums struct {
		OrgID                             string
		Credits, Debits, Charges, Refunds int64
	}
	if orgID != "" {
		ok, err := w.directory.OrgExists(ctx, orgID)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			return 0, nil, problem.Newf(problem.NotFound, "no organisation has the id %q", orgID)
		}
	}
	// The three reads share one snapshot, so that a charge committing meanwhile is seen by all of them
	// or by none: a read-only transaction, repeatable read on PostgreSQL; on SQLite a deferred read
	// transaction (it never blocks writers) is a snapshot already.
	opts := &sql.TxOptions{ReadOnly: true}
	if w.db.Dialector.Name() == "postgres" {
		opts.Isolation = sql.LevelRepeatableRead
	}
	var (
		ledger []sums
		usage  []struct {
			OrgID string
			Total int64
		}
		wallets []Wallet
	)
	err = w.db.WithContext(ctx).Transaction(func(db *gorm.DB) error {
		scope := func(q *gorm.DB) *gorm.DB {
			if orgID != "" {
				return q.Where("org_id = ?", orgID)
			}
			return q
		}
		if err := scope(db.Model(&LedgerEntry{})).Select(`org_id,
  COALESCE(SUM(CASE WHEN kind = ? THEN amount ELSE 0 END), 0) AS credits,
  COALESCE(SUM(CASE WHEN kind = ? THEN amount ELSE 0 END), 0) AS debits,
  COALESCE(SUM(CASE WHEN kind = ? THEN amount ELSE 0 END), 0) AS charges,
  COALESCE(SUM(CASE WHEN kind = ? THEN amount ELSE 0 END), 0) AS refunds`, KindCredit, KindDebit, KindCharge, KindRefund).
			Group("org_id").Scan(&ledger).Error; err != nil {
			return fmt.Errorf("sum ledger: %w", err)
		}
		if err := scope(db.Model(&UsageEvent{})).Select("org_id, COALESCE(SUM(CASE WHEN kind = ? THEN -price ELSE price END), 0) AS total", KindRefund).Group("org_id").Scan(&usage).Error; err != nil {
			return fmt.Errorf("sum usage: %w", err)
		}
		if err := scope(db.Model(&Wallet{})).Find(&wallets).Error; err != nil {
			return fmt.Errorf("read wallets: %w", err)
		}
		return nil
	}, opts)
	if err != nil {
		return 0, nil, err
	}
	all := map[string]*Discrepancy{}
	get := func(id string) *Discrepancy {
		if all[id] == nil {
			all[id] = &Discrepancy{OrgID: id}
		}
		return all[id]
	}
	for _, wl := range wallets {
		get(wl.OrgID).Balance = wl.Balance
	}
	for _, l := range ledger {
		d := get(l.OrgID)
		d.LedgerBalance, d.LedgerCharges = l.Credits-l.Debits-l.Charges+l.Refunds, l.Charges-l.Refunds
	}
	for _, u := range usage {
		get(u.OrgID).UsageCharges = u.Total
	}
	if orgID != "" {
		get(orgID)
	}
	ids := make([]string, 0, len(all))
	for id := range all {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		d := all[id]
		if d.Balance != d.LedgerBalance || d.LedgerCharges != d.UsageCharges || d.Balance < 0 {
			found = append(found, *d)
		}
	}
	return len(all), found, nil
}

var _ port.Grants = (*Wallets)(nil)
