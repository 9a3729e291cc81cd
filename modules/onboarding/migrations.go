package onboarding

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm/clause"

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
		{ID: "onboarding_0002_owners_links_drafts_sessions", Migrate: func(tx *gorm.DB) error {
			type owner struct {
				ID           string `gorm:"primaryKey;size:36"`
				Email        string `gorm:"size:254;not null;uniqueIndex:idx_onboarding_owners_email"`
				CreatedAt    time.Time
				LastSignInAt *time.Time
			}
			type agentOwner struct {
				AgentID  string `gorm:"primaryKey;size:36"`
				OwnerID  string `gorm:"size:36;not null;index:idx_onboarding_agent_owners_owner"`
				Handle   string `gorm:"size:32;not null"`
				Via      string `gorm:"size:16;not null"`
				LinkedAt time.Time
			}
			type signIn struct {
				TokenHash string `gorm:"primaryKey;size:64"`
				Email     string `gorm:"size:254;not null"`
				CreatedAt time.Time
				ExpiresAt time.Time `gorm:"index:idx_onboarding_sign_ins_expires"`
				UsedAt    *time.Time
			}
			type link struct {
				ID          string  `gorm:"primaryKey;size:36"`
				AgentID     string  `gorm:"size:36;not null;index:idx_onboarding_owner_links_agent"`
				Handle      string  `gorm:"size:32;not null"`
				Email       string  `gorm:"size:254;not null"`
				State       string  `gorm:"size:16;not null"`
				OwnerID     *string `gorm:"size:36;index:idx_onboarding_owner_links_owner"`
				TokenHash   *string `gorm:"size:64;uniqueIndex:idx_onboarding_owner_links_token"`
				CreatedAt   time.Time
				ExpiresAt   time.Time
				ConfirmedAt *time.Time
			}
			type draft struct {
				ID            string `gorm:"primaryKey;size:36"`
				AgentID       string `gorm:"size:36;not null;index:idx_onboarding_drafts_agent"`
				OwnerID       string `gorm:"size:36;not null"`
				State         string `gorm:"size:16;not null"`
				KeyID         string `gorm:"size:16;not null"`
				Ciphertext    []byte
				ContentSHA256 string `gorm:"column:content_sha256;size:64;not null"`
				CreatedAt     time.Time
				ClosedAt      *time.Time
			}
			type session struct {
				Token  string    `gorm:"primaryKey;size:64"`
				Data   []byte    `gorm:"not null"`
				Expiry time.Time `gorm:"index:idx_onboarding_sessions_expiry"`
			}
			for table, model := range map[string]any{"onboarding_owners": &owner{}, "onboarding_agent_owners": &agentOwner{},
				"onboarding_sign_ins": &signIn{}, "onboarding_owner_links": &link{}, "onboarding_drafts": &draft{}, "onboarding_sessions": &session{}} {
				if err := tx.Table(table).Migrator().CreateTable(model); err != nil {
					return fmt.Errorf("onboarding: %s: %w", table, err)
				}
			}
			// An owner's message names its sign-in or link row.
			if err := tx.Exec(`ALTER TABLE onboarding_mail ADD COLUMN ref_id VARCHAR(64)`).Error; err != nil {
				return fmt.Errorf("onboarding: %w", err)
			}
			// One waiting draft per agent, even when two owners' drafts arrive at once.
			if err := tx.Exec(`CREATE UNIQUE INDEX idx_onboarding_drafts_waiting ON onboarding_drafts (agent_id) WHERE state = 'waiting'`).Error; err != nil {
				return fmt.Errorf("onboarding: %w", err)
			}
			return nil
		}},
		{ID: "onboarding_0003_backfill_owners", Migrate: func(tx *gorm.DB) error {
			// Applicants who confirmed their address before owners existed have an account, and the
			// agents they redeemed are theirs, as for applications made since.
			type application struct {
				Handle           string
				Email            string
				State            string
				EmailConfirmedAt *time.Time
				AgentID          *string
				RedeemedAt       *time.Time
			}
			type owner struct {
				ID        string `gorm:"primaryKey;size:36"`
				Email     string `gorm:"size:254;not null"`
				CreatedAt time.Time
			}
			type agentOwner struct {
				AgentID  string `gorm:"primaryKey;size:36"`
				OwnerID  string `gorm:"size:36;not null"`
				Handle   string `gorm:"size:32;not null"`
				Via      string `gorm:"size:16;not null"`
				LinkedAt time.Time
			}
			var apps []application
			if err := tx.Table("onboarding_applications").Where("email_confirmed_at IS NOT NULL").Order("created_at").Find(&apps).Error; err != nil {
				return fmt.Errorf("onboarding: read applications: %w", err)
			}
			owners := map[string]string{}
			for _, a := range apps {
				email := strings.ToLower(strings.TrimSpace(a.Email))
				id, ok := owners[email]
				if !ok {
					var ids []string
					if err := tx.Table("onboarding_owners").Where("email = ?", email).Limit(1).Pluck("id", &ids).Error; err != nil {
						return fmt.Errorf("onboarding: read owner: %w", err)
					}
					if len(ids) == 1 {
						id = ids[0]
					} else {
						id = uuid.Must(uuid.NewV7()).String()
						if err := tx.Table("onboarding_owners").Create(&owner{ID: id, Email: email, CreatedAt: *a.EmailConfirmedAt}).Error; err != nil {
							return fmt.Errorf("onboarding: create owner: %w", err)
						}
					}
					owners[email] = id
				}
				if a.State != "redeemed" || a.AgentID == nil || a.RedeemedAt == nil {
					continue
				}
				row := agentOwner{AgentID: *a.AgentID, OwnerID: id, Handle: a.Handle, Via: "application", LinkedAt: *a.RedeemedAt}
				if err := tx.Table("onboarding_agent_owners").Clauses(clause.OnConflict{DoNothing: true}).Create(&row).Error; err != nil {
					return fmt.Errorf("onboarding: link agent: %w", err)
				}
			}
			// An owner's messages are found by the row they are about.
			if err := tx.Exec(`CREATE INDEX idx_onboarding_mail_ref ON onboarding_mail (ref_id)`).Error; err != nil {
				return fmt.Errorf("onboarding: %w", err)
			}
			return nil
		}},
		{ID: "onboarding_0004_owner_actions", Migrate: func(tx *gorm.DB) error {
			// The owners' audit log: each pause, resume and key revocation an owner makes.
			type ownerAction struct {
				ID      string    `gorm:"primaryKey;size:36"`
				OwnerID string    `gorm:"size:36;not null"`
				AgentID string    `gorm:"size:36;not null;index:idx_onboarding_owner_actions_agent,priority:1"`
				Action  string    `gorm:"size:16;not null"`
				KeyID   *string   `gorm:"size:64"`
				At      time.Time `gorm:"index:idx_onboarding_owner_actions_agent,priority:2"`
			}
			if err := tx.Table("onboarding_owner_actions").Migrator().CreateTable(&ownerAction{}); err != nil {
				return fmt.Errorf("onboarding: onboarding_owner_actions: %w", err)
			}
			return nil
		}},
	}}
}
