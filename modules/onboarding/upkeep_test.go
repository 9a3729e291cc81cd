package onboarding_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
)

// The operator's view of draft keys: drafts waiting under each key id, and the configured ids, so that an
// old key is dropped only once nothing waits under it.
func TestDraftKeyUse(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		ctx := context.Background()
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		use, err := w.owners.DraftKeyUse(ctx)
		if err != nil || len(use.Waiting) != 0 || len(use.Configured) != 1 {
			t.Fatalf("before any draft: %+v %v", use, err)
		}
		dal := w.ownedAgent(t, "dal-bot", "ana@example.org")
		b := w.signIn(t, "ana@example.org")
		expectRedirect(t, b.writeDraft(t, dal.AgentID, "Be brief."))
		use, err = w.owners.DraftKeyUse(ctx)
		if err != nil || use.Waiting[use.Configured[0]] != 1 || len(use.Waiting) != 1 {
			t.Fatalf("one waiting draft: %+v %v", use, err)
		}
		d := w.readDraft(t, dal)
		testkit.Expect(t, w.acknowledge(t, dal, d.DraftID, d.ContentSHA256), http.StatusOK, "")
		if use, err = w.owners.DraftKeyUse(ctx); err != nil || len(use.Waiting) != 0 {
			t.Fatalf("after the acknowledgement: %+v %v", use, err)
		}
	})
}

// The sweep erases outbox copies of sign-in, owner-link, confirmation and invitation mail whose secret
// ran out unused, and keeps the ones still good.
func TestSweepErasesExpiredLinkMail(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		cfg := onboarding.DefaultConfig()
		w := newWorld(t, dialect, cfg)
		now := w.clock.Now()
		for id, m := range map[string]struct {
			kind string
			at   time.Time
		}{
			"sign-in-old": {onboarding.MailSignIn, now.Add(-cfg.SignInTTL - time.Minute)},
			"sign-in-new": {onboarding.MailSignIn, now},
			"link-old":    {onboarding.MailOwnerLink, now.Add(-cfg.LinkTTL - time.Minute)},
			"link-new":    {onboarding.MailOwnerLink, now.Add(-cfg.LinkTTL + time.Hour)},
			"confirm-old": {onboarding.MailConfirm, now.Add(-cfg.ConfirmTTL - time.Minute)},
			"confirm-new": {onboarding.MailConfirm, now.Add(-cfg.ConfirmTTL + time.Hour)},
			"invite-old":  {onboarding.MailInvitation, now.Add(-cfg.InvitationTTL - time.Minute)},
			"invite-new":  {onboarding.MailInvitation, now.Add(-cfg.InvitationTTL + time.Hour)},
		} {
			if err := w.db.Exec(`INSERT INTO onboarding_mail (id, kind, recipient, subject, body, state, attempts, created_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?)`,
				id, m.kind, "ana@example.org", "s", "a secret link", onboarding.MailOutbox, m.at).Error; err != nil {
				t.Fatal(err)
			}
		}
		if err := w.sweeper.Work(context.Background(), &river.Job[onboarding.SweepArgs]{}); err != nil {
			t.Fatal(err)
		}
		for id, kept := range map[string]bool{"sign-in-old": false, "sign-in-new": true, "link-old": false, "link-new": true,
			"confirm-old": false, "confirm-new": true, "invite-old": false, "invite-new": true} {
			var body string
			if err := w.db.Raw(`SELECT body FROM onboarding_mail WHERE id = ?`, id).Row().Scan(&body); err != nil {
				t.Fatal(err)
			}
			if (body != "") != kept {
				t.Errorf("%s: body %q, kept %v", id, body, kept)
			}
		}
	})
}
