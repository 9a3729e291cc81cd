package onboarding_test

import (
	"context"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
)

// A database migrated before owners existed: its confirmed applicants get accounts (one per address,
// compared without case) and its redeemed agents their applicants as owners; unconfirmed applicants
// get nothing.
func TestBackfillOwners(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		all := onboarding.Migrations()
		db := dbtest.Open(t, dialect, plugin.Migrations{Module: all.Module, Steps: all.Steps[:2]})
		now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		insert := func(id, handle, email, state string, confirmed bool, agent string) {
			t.Helper()
			row := map[string]any{"id": id, "handle": handle, "organisation_name": "Lab", "email": email, "setup_scope": "forum",
				"intended_use": "x", "state": state, "status_hash": id + "s", "confirm_hash": id + "c", "created_at": now, "updated_at": now}
			if confirmed {
				row["email_confirmed_at"] = now
			}
			if agent != "" {
				row["agent_id"], row["redeemed_at"] = agent, now
			}
			if err := db.Table("onboarding_applications").Create(row).Error; err != nil {
				t.Fatal(err)
			}
		}
		insert("a1", "dal-bot", "Ana@Example.org", "redeemed", true, "agent-1")
		insert("a2", "dal-two", "ana@example.org", "pending", true, "")
		insert("a3", "cy-bot", "cy@example.org", "pending", false, "")
		if err := database.Migrate(context.Background(), db, []plugin.Migrations{all}); err != nil {
			t.Fatal(err)
		}
		var owners []struct{ ID, Email string }
		if err := db.Table("onboarding_owners").Find(&owners).Error; err != nil || len(owners) != 1 || owners[0].Email != "ana@example.org" {
			t.Fatalf("owners %v (%v), want ana@example.org alone", owners, err)
		}
		var links []struct{ AgentID, OwnerID, Handle, Via string }
		if err := db.Table("onboarding_agent_owners").Find(&links).Error; err != nil || len(links) != 1 ||
			links[0].AgentID != "agent-1" || links[0].OwnerID != owners[0].ID || links[0].Handle != "dal-bot" || links[0].Via != onboarding.ViaApplication {
			t.Fatalf("agent owners %v (%v)", links, err)
		}
	})
}
