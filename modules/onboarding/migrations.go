package onboarding

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
		{ID: "onboarding_0001_applications_and_mail", Migrate: func(tx *gorm.DB) error {
			type application struct {
				ID               string `gorm:"primaryKey;size:36"`
				Handle           string `gorm:"size:32;not null;index:idx_onboarding_applications_handle"`
				OrgName          string `gorm:"column:organisation_name;size:200;not null"`
				Email            string `gorm:"size:254;not null;index:idx_onboarding_applications_email"`
				SetupScope       string `gorm:"size:16;not null"`
				IntendedUse      string `gorm:"not null"`
				State            string `gorm:"size:16;not null;index:idx_onboarding_applications_state"`
				StatusHash       string `gorm:"size:64;not null;uniqueIndex:idx_onboarding_applications_status_hash"`
				ConfirmHash      string `gorm:"size:64;not null;uniqueIndex:idx_onboarding_applications_confirm_hash"`
				EmailConfirmedAt *time.Time
				InvitationHash   *string `gorm:"size:64;uniqueIndex:idx_onboarding_applications_invitation_hash"`
				InvitationExpiry *time.Time
				InvitationSentAt *time.Time
				DecidedBy        *string `gorm:"size:100"`
				DecidedAt        *time.Time
				DecisionReason   *string
				PublicKey        *string `gorm:"size:44"`
				AgentID          *string `gorm:"size:36"`
				KeyID            *string `gorm:"size:64"`
				OrgID            *string `gorm:"size:36"`
				RedeemedAt       *time.Time
				CreatedAt        time.Time
				UpdatedAt        time.Time
			}
			type mail struct {
				ID            string  `gorm:"primaryKey;size:36"`
				ApplicationID *string `gorm:"size:36;index:idx_onboarding_mail_application"`
				Kind          string  `gorm:"size:16;not null"`
				Recipient     string  `gorm:"size:254;not null"`
				Subject       string  `gorm:"size:200;not null"`
				Body          string  `gorm:"not null"`
				State         string  `gorm:"size:16;not null;index:idx_onboarding_mail_state"`
				Attempts      int     `gorm:"not null"`
				LastError     *string
				CreatedAt     time.Time
				SentAt        *time.Time
			}
			if err := tx.Table("onboarding_applications").Migrator().CreateTable(&application{}); err != nil {
				return fmt.Errorf("onboarding: %w", err)
			}
			if err := tx.Table("onboarding_mail").Migrator().CreateTable(&mail{}); err != nil {
				return fmt.Errorf("onboarding: %w", err)
			}
			// One live application per handle, even when two arrive at once: an application holds its
			// handle while pending or approved.
			if err := tx.Exec(`CREATE UNIQUE INDEX idx_onboarding_applications_live_handle ON onboarding_applications (handle) WHERE state IN ('pending', 'approved')`).Error; err != nil {
				return fmt.Errorf("onboarding: %w", err)
			}
			return nil
		}},
	}}
}
