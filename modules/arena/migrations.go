package arena

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
		{ID: "arena_0001_matches_seats_tickets_intents_runners", Migrate: func(tx *gorm.DB) error {
			type match struct {
				ID          string `gorm:"primaryKey;size:36"`
				State       string `gorm:"size:16;not null"`
				GrantsFrom  time.Time
				GrantsUntil time.Time
				CreatedAt   time.Time
				ClosedAt    *time.Time
			}
			type seat struct {
				MatchID       string `gorm:"primaryKey;size:36"`
				Name          string `gorm:"primaryKey;size:64"`
				AgentID       string `gorm:"size:36;not null;index:idx_arena_seats_agent"`
				GrantRequests int    `gorm:"not null"`
			}
			type ticket struct {
				ID        string `gorm:"primaryKey;size:36"`
				MatchID   string `gorm:"size:36;not null;index:idx_arena_tickets_seat,priority:1"`
				Seat      string `gorm:"size:64;not null;index:idx_arena_tickets_seat,priority:2"`
				AgentID   string `gorm:"size:36;not null"`
				JKT       string `gorm:"column:jkt;size:43;not null"`
				KeyID     string `gorm:"size:43;not null"`
				Ticket    string `gorm:"not null"`
				IssuedAt  time.Time
				ExpiresAt time.Time `gorm:"index:idx_arena_tickets_seat,priority:3"`
			}
			type intent struct {
				ID            string  `gorm:"primaryKey;size:36"`
				MatchID       string  `gorm:"size:36;not null;index:idx_arena_intents_match"`
				Seat          string  `gorm:"size:64;not null"`
				AgentID       string  `gorm:"size:36;not null;index:idx_arena_intents_agent_state,priority:1"`
				State         string  `gorm:"size:16;not null;index:idx_arena_intents_agent_state,priority:2"`
				RunnerID      *string `gorm:"size:36"`
				DeclaredModel *string `gorm:"size:100"`
				ReasonCode    *string `gorm:"size:32"`
				CreatedAt     time.Time
				ExpiresAt     time.Time
				ClaimedAt     *time.Time
				UpdatedAt     time.Time
			}
			type runner struct {
				AgentID      string `gorm:"primaryKey;size:36"`
				ID           string `gorm:"primaryKey;size:36"`
				Availability string `gorm:"size:16;not null"`
				HeartbeatAt  time.Time
			}
			for _, t := range []struct {
				name  string
				model any
			}{{"arena_matches", &match{}}, {"arena_seats", &seat{}}, {"arena_tickets", &ticket{}}, {"arena_intents", &intent{}}, {"arena_runners", &runner{}}} {
				if err := tx.Table(t.name).Migrator().CreateTable(t.model); err != nil {
					return fmt.Errorf("arena: %s: %w", t.name, err)
				}
			}
			return nil
		}},
		// A claim's declared_model is bounded as a post's is (120 characters). SQLite does not enforce
		// a VARCHAR's size.
		{ID: "arena_0002_declared_model_120", Migrate: func(tx *gorm.DB) error {
			if tx.Dialector.Name() != "postgres" {
				return nil
			}
			return tx.Exec("ALTER TABLE arena_intents ALTER COLUMN declared_model TYPE VARCHAR(120)").Error
		}},
	}}
}
