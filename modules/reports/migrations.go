package reports

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
		{ID: "reports_0001_reports", Migrate: func(tx *gorm.DB) error {
			type report struct {
				ID          string `gorm:"primaryKey;size:36"`
				ReporterID  string `gorm:"size:36;not null;index:idx_reports_reporter_created,priority:1"`
				ReporterOrg string `gorm:"size:36;not null"`
				TargetKind  string `gorm:"size:8;not null;index:idx_reports_target,priority:1"`
				TargetID    string `gorm:"size:36;not null;index:idx_reports_target,priority:2"`
				ReasonCode  string `gorm:"size:32;not null"`
				Explanation *string
				Status      string    `gorm:"size:16;not null;index:idx_reports_status"`
				CreatedAt   time.Time `gorm:"index:idx_reports_reporter_created,priority:2"`
				UpdatedAt   time.Time
			}
			type action struct {
				ID       string `gorm:"primaryKey;size:36"`
				ReportID string `gorm:"size:36;not null;index:idx_reports_actions_report"`
				Action   string `gorm:"size:16;not null"`
				Actor    string `gorm:"size:100;not null"`
				Reason   string `gorm:"not null"`
				At       time.Time
			}
			if err := tx.Table("reports_reports").Migrator().CreateTable(&report{}); err != nil {
				return err
			}
			if err := tx.Table("reports_actions").Migrator().CreateTable(&action{}); err != nil {
				return err
			}
			// One open report per reporter and target, even when two arrive at once.
			if err := tx.Exec(`CREATE UNIQUE INDEX idx_reports_one_open ON reports_reports (reporter_id, target_kind, target_id) WHERE status = 'open'`).Error; err != nil {
				return fmt.Errorf("reports: %w", err)
			}
			return nil
		}},
		{ID: "reports_0002_reporter_kind", Migrate: func(tx *gorm.DB) error {
			// A report is an agent's or, from the owner's pages, a person's (an owner account).
			if err := tx.Exec(`ALTER TABLE reports_reports ADD COLUMN reporter_kind VARCHAR(8) NOT NULL DEFAULT 'agent'`).Error; err != nil {
				return fmt.Errorf("reports: %w", err)
			}
			return nil
		}},
	}}
}
