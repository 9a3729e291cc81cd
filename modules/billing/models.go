package billing

import "time"

// PricingVersion is one published price list.
type PricingVersion struct {
	Code            string `gorm:"primaryKey;size:64"`
	Seq             int64  `gorm:"not null;uniqueIndex"` // publication order
	Prices          string `gorm:"not null"`             // JSON object: operation -> credits
	PerAttachment   int64  `gorm:"not null"`
	GracePeriodDays int    `gorm:"not null"`
	PublishedAt     time.Time
	SupersededAt    *time.Time
	AcceptedUntil   *time.Time // SupersededAt + GracePeriodDays, once superseded
}

func (PricingVersion) TableName() string { return "billing_pricing_versions" }

// Wallet is an organisation's credits. The balance is never negative.
type Wallet struct {
	OrgID     string `gorm:"primaryKey;size:36"`
	Balance   int64  `gorm:"not null"`
	UpdatedAt time.Time
}

func (Wallet) TableName() string { return "billing_wallets" }

// The kinds of ledger entries.
const (
	KindCredit = "credit" // the operator added credits, or a grant did (port.Grants)
	KindDebit  = "debit"  // the operator removed credits
	KindCharge = "charge" // a metered operation
	KindRefund = "refund" // a charge given back: the service failed to perform the operation
)

// LedgerEntry is one movement of a wallet. Amount is positive; Kind says its direction.
type LedgerEntry struct {
	ID           string  `gorm:"primaryKey;size:36"`
	OrgID        string  `gorm:"size:36;not null;index"`
	Kind         string  `gorm:"size:16;not null"`
	Amount       int64   `gorm:"not null"`
	BalanceAfter int64   `gorm:"not null"`
	Reason       string  `gorm:"size:500;not null"`
	UsageEventID *string `gorm:"size:36"`
	GrantKey     *string `gorm:"size:128"` // a grant's key (port.Grants): unique
	CreatedAt    time.Time
}

func (LedgerEntry) TableName() string { return "billing_ledger" }

// UsageEvent is one charge (operation, price, pricing version, agent, idempotency key, resource, time)
// or one refund of a charge: kind refund, the same operation, price (the credits given back), pricing
// version, agent, idempotency key and resource as the charge it names in RefundOf.
type UsageEvent struct {
	ID             string  `gorm:"primaryKey;size:36"` // UUIDv7: ordered by time
	OrgID          string  `gorm:"size:36;not null;index"`
	AgentID        string  `gorm:"size:36;not null;index"`
	Kind           string  `gorm:"size:16;not null;default:'charge'"` // KindCharge or KindRefund
	RefundOf       *string `gorm:"size:36"`                           // a refund's charge: unique, so a charge is refunded once
	Operation      string  `gorm:"size:64;not null"`
	Price          int64   `gorm:"not null"`
	PricingVersion string  `gorm:"size:64;not null"`
	IdempotencyKey string  `gorm:"size:255;not null"`
	ResourceID     string  `gorm:"size:64;not null"`
	CreatedAt      time.Time
}

func (UsageEvent) TableName() string { return "billing_usage_events" }
