package sigv1

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-gormigrate/gormigrate/v2"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
)

// Migrations are the module's schema steps: append-only and frozen. Each step creates tables from its
// own copies of the structs, so a later change to models.go never changes an applied step.
func Migrations() plugin.Migrations {
	return plugin.Migrations{Module: ID, Steps: []*gormigrate.Migration{
		{ID: "sigv1_0001_identity_and_guard", Migrate: migrate0001},
		// Limits of other modules (port.Limits) count in windows of their own length; each window
		// keeps its length so that the pruner knows when it ended (0: the guard's RateWindow).
		{ID: "sigv1_0002_rate_window_span", Migrate: func(tx *gorm.DB) error {
			return tx.Exec(`ALTER TABLE sigv1_rate_windows ADD COLUMN span_ms BIGINT NOT NULL DEFAULT 0`).Error
		}},
		// The guard's memory (memory.go): one version row that every change to the switches, agents or
		// keys bumps in its own transaction, by trigger so that no write path can forget it; on
		// PostgreSQL the trigger also notifies the replicas' listeners (delivered at commit).
		{ID: "sigv1_0003_state_version", Migrate: migrate0003},
	}}
}

func migrate0003(tx *gorm.DB) error {
	tables := []string{"sigv1_switches", "sigv1_agents", "sigv1_keys"}
	steps := []string{
		`CREATE TABLE sigv1_state_version (id INTEGER PRIMARY KEY, version BIGINT NOT NULL)`,
		`INSERT INTO sigv1_state_version (id, version) VALUES (1, 0)`,
	}
	if tx.Dialector.Name() == "postgres" {
		steps = append(steps, `CREATE FUNCTION sigv1_state_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE v BIGINT;
BEGIN
	UPDATE sigv1_state_version SET version = version + 1 WHERE id = 1 RETURNING version INTO v;
	PERFORM pg_notify('svc_sigv1', v::text);
	RETURN NULL;
END $$`)
		for _, t := range tables {
			steps = append(steps, `CREATE TRIGGER `+t+`_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON `+t+
				` FOR EACH STATEMENT EXECUTE PROCEDURE sigv1_state_changed()`)
		}
	} else {
		for _, t := range tables {
			for _, op := range []string{"INSERT", "UPDATE", "DELETE"} {
				steps = append(steps, `CREATE TRIGGER `+t+`_on_`+strings.ToLower(op)+` AFTER `+op+` ON `+t+
					` BEGIN UPDATE sigv1_state_version SET version = version + 1 WHERE id = 1; END`)
			}
		}
	}
	for _, q := range steps {
		if err := tx.Exec(q).Error; err != nil {
			return fmt.Errorf("state version: %w", err)
		}
	}
	return nil
}

func migrate0001(tx *gorm.DB) error {
	type org struct {
		ID        string `gorm:"primaryKey;size:36"`
		Name      string `gorm:"size:200;not null"`
		CreatedAt time.Time
	}
	type agent struct {
		ID        string `gorm:"primaryKey;size:36"`
		OrgID     string `gorm:"size:36;not null;index:idx_sigv1_agents_org_id"`
		Handle    string `gorm:"size:32;not null;uniqueIndex:idx_sigv1_agents_handle"`
		State     string `gorm:"size:16;not null"`
		CreatedAt time.Time
		UpdatedAt time.Time
	}
	type key struct {
		ID        string `gorm:"primaryKey;size:64"`
		AgentID   string `gorm:"size:36;not null;index:idx_sigv1_keys_agent_id"`
		PublicKey string `gorm:"size:44;not null;uniqueIndex:idx_sigv1_keys_public_key"`
		State     string `gorm:"size:16;not null"`
		CreatedAt time.Time
		RevokedAt *time.Time
	}
	type nonce struct {
		AgentID string `gorm:"primaryKey;size:36"`
		Nonce   string `gorm:"primaryKey;size:128"`
		SeenMS  int64  `gorm:"not null;index:idx_sigv1_nonces_seen_ms"`
	}
	type idempotency struct {
		AgentID     string `gorm:"primaryKey;size:36"`
		Key         string `gorm:"primaryKey;size:255;column:idem_key"`
		Fingerprint string `gorm:"size:64;not null"`
		Token       string `gorm:"size:36;not null"`
		State       string `gorm:"size:16;not null"`
		LeaseMS     int64  `gorm:"not null"`
		CreatedMS   int64  `gorm:"not null;index:idx_sigv1_idempotency_created_ms"`
		Status      int    `gorm:"not null"`
		Body        []byte
	}
	type rateWindow struct {
		Bucket   string `gorm:"primaryKey;size:200"`
		WindowMS int64  `gorm:"not null;index:idx_sigv1_rate_windows_window_ms"`
		Hits     int64  `gorm:"not null"`
	}
	type switchRow struct {
		Name  string `gorm:"primaryKey;size:100"`
		SetAt time.Time
	}
	for _, t := range []struct {
		name  string
		model any
	}{
		{"sigv1_orgs", &org{}}, {"sigv1_agents", &agent{}}, {"sigv1_keys", &key{}},
		{"sigv1_nonces", &nonce{}}, {"sigv1_idempotency", &idempotency{}},
		{"sigv1_rate_windows", &rateWindow{}}, {"sigv1_switches", &switchRow{}},
	} {
		if err := tx.Table(t.name).Migrator().CreateTable(t.model); err != nil {
			return fmt.Errorf("create %s: %w", t.name, err)
		}
	}
	return nil
}
