package billing

import (
	"fmt"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
)

// Migrations are the module's schema steps: append-only and frozen, each with its own struct copies.
func Migrations() plugin.Migrations {
	return plugin.Migrations{Module: ID, Steps: []*gormigrate.Migration{
		{ID: "billing_0001_pricing_wallets_ledger_usage", Migrate: migrate0001},
		{ID: "billing_0002_usage_refunds", Migrate: migrate0002},
		{ID: "billing_0003_ledger_grant_key", Migrate: migrate0003},
	}}
}

func migrate0001(tx *gorm.DB) error {
	type pricingVersion struct {
		Code            string `gorm:"primaryKey;size:64"`
		Seq             int64  `gorm:"not null;uniqueIndex:idx_billing_pricing_versions_seq"`
		Prices          string `gorm:"not null"`
		PerAttachment   int64  `gorm:"not null"`
		GracePeriodDays int    `gorm:"not null"`
		PublishedAt     time.Time
		SupersededAt    *time.Time
		AcceptedUntil   *time.Time
	}
	type wallet struct {
		OrgID     string `gorm:"primaryKey;size:36"`
		Balance   int64  `gorm:"not null;check:chk_billing_wallets_balance,balance >= 0"`
		UpdatedAt time.Time
	}
	type ledgerEntry struct {
		ID           string  `gorm:"primaryKey;size:36"`
		OrgID        string  `gorm:"size:36;not null;index:idx_billing_ledger_org_id"`
		Kind         string  `gorm:"size:16;not null"`
		Amount       int64   `gorm:"not null"`
		BalanceAfter int64   `gorm:"not null"`
		Reason       string  `gorm:"size:500;not null"`
		UsageEventID *string `gorm:"size:36"`
		CreatedAt    time.Time
	}
	type usageEvent struct {
		ID             string `gorm:"primaryKey;size:36"`
		OrgID          string `gorm:"size:36;not null;index:idx_billing_usage_events_org_id"`
		AgentID        string `gorm:"size:36;not null;index:idx_billing_usage_events_agent_id"`
		Operation      string `gorm:"size:64;not null"`
		Price          int64  `gorm:"not null"`
		PricingVersion string `gorm:"size:64;not null"`
		IdempotencyKey string `gorm:"size:255;not null"`
		ResourceID     string `gorm:"size:64;not null"`
		CreatedAt      time.Time
	}
	for _, t := range []struct {
		name  string
		model any
	}{
		{"billing_pricing_versions", &pricingVersion{}}, {"billing_wallets", &wallet{}},
		{"billing_ledger", &ledgerEntry{}}, {"billing_usage_events", &usageEvent{}},
	} {
		if err := tx.Table(t.name).Migrator().CreateTable(t.model); err != nil {
			return fmt.Errorf("create %s: %w", t.name, err)
		}
	}
	return nil
}

// migrate0002 lets a usage event be a refund: kind (every earlier event is a charge), the charge it
// refunds, unique so that a charge is refunded at most once, and an index to find a resource's charge.
func migrate0002(tx *gorm.DB) error {
	type usageEvent struct {
		Kind       string  `gorm:"size:16;not null;default:'charge'"`
		RefundOf   *string `gorm:"size:36;uniqueIndex:idx_billing_usage_events_refund_of"`
		ResourceID string  `gorm:"size:64;not null;index:idx_billing_usage_events_resource_id"`
	}
	m := tx.Table("billing_usage_events").Migrator()
	for _, column := range []string{"Kind", "RefundOf"} {
		if err := m.AddColumn(&usageEvent{}, column); err != nil {
			return fmt.Errorf("add billing_usage_events.%s: %w", column, err)
		}
	}
	for _, index := range []string{"idx_billing_usage_events_refund_of", "idx_billing_usage_events_resource_id"} {
		if err := m.CreateIndex(&usageEvent{}, index); err != nil {
			return fmt.Errorf("create %s: %w", index, err)
		}
	}
	return nil
}

// migrate0003 gives a ledger entry an optional grant key (port.Grants), unique so that a grant is
// written once whatever the number of calls or transactions; entries without one (NULL) are many.
func migrate0003(tx *gorm.DB) error {
	type ledgerEntry struct {
		GrantKey *string `gorm:"size:128;uniqueIndex:idx_billing_ledger_grant_key"`
	}
	m := tx.Table("billing_ledger").Migrator()
	if err := m.AddColumn(&ledgerEntry{}, "GrantKey"); err != nil {
		return fmt.Errorf("add billing_ledger.grant_key: %w", err)
	}
	if err := m.CreateIndex(&ledgerEntry{}, "idx_billing_ledger_grant_key"); err != nil {
		return fmt.Errorf("create idx_billing_ledger_grant_key: %w", err)
	}
	return nil
}
