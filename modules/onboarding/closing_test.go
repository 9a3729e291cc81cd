package onboarding_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
	"github.com/svcforum/svc/testkit/mailsink"
)

// A draft of 8000 characters fits the owner's form even when a browser percent-encodes every one of
// them into 9 bytes (CJK), as it does.
func TestLongestDraftFitsTheForm(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		dal := w.ownedAgent(t, "dal-bot", "ana@example.org")
		ana := w.signIn(t, "ana@example.org")
		if r := ana.writeDraft(t, dal.AgentID, strings.Repeat("字", onboarding.MaxDraft)); r.Status != http.StatusSeeOther {
			t.Fatalf("an 8000-character draft: %d %q", r.Status, r.Code)
		}
	})
}

// When the operator unlinks an owner, no link the agent asked for before works any more: a second
// confirmation link (a retried request) does not link the agent again, and the confirmed one no longer
// shows it linked.
func TestUnlinkClosesTheAgentsLinks(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		ctx := context.Background()
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		pea := newAgent("pea-bot")
		ben := w.signIn(t, "ben@example.org")
		testkit.Expect(t, w.askLink(t, pea, "ben@example.org"), http.StatusAccepted, "")
		testkit.Expect(t, w.askLink(t, pea, "ben@example.org"), http.StatusAccepted, "")
		w.runLinks(t)
		w.sendAll(t, 1)
		list, _, err := w.outbox.List(ctx, "", allOf("mail"))
		if err != nil {
			t.Fatal(err)
		}
		var links []string
		for _, m := range list {
			if m.Kind == onboarding.MailOwnerLink {
				links = append(links, mustMatch(t, ownerLink, m.Body))
			}
		}
		if len(links) != 2 {
			t.Fatalf("owner-link mails %v, want 2", links)
		}
		_, tok := ben.get(t, links[0])
		testkit.Expect(t, ben.post(t, links[0], url.Values{"csrf_token": {tok}}), http.StatusOK, "")
		// The agent has its owner: no outbox copy of its links is of use any more.
		mailWithLinks := func() {
			t.Helper()
			list, _, err := w.outbox.List(ctx, onboarding.MailOutbox, allOf("mail"))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range list {
				if m.Kind == onboarding.MailOwnerLink && m.Body != "" {
					t.Fatalf("an owner-link mail still waits in the outbox with its link: %+v", m)
				}
			}
		}
		mailWithLinks()
		if had, err := w.owners.Unlink(ctx, pea.AgentID); err != nil || !had {
			t.Fatalf("unlink: %v %v", had, err)
		}
		for _, link := range links {
			if r, _ := ben.get(t, link); r.Status != http.StatusNotFound {
				t.Fatalf("a link after the unlink: %d", r.Status)
			}
		}
		if owner, err := w.owners.OwnerOf(ctx, pea.AgentID); err != nil || owner != "" {
			t.Fatalf("after the unlink the agent's owner is %q (%v)", owner, err)
		}
		mailWithLinks()
		// The agent may ask again, and that link works.
		testkit.Expect(t, w.askLink(t, pea, "ben@example.org"), http.StatusAccepted, "")
		w.runLinks(t)
	})
}

// An invitation whose mail the operator's new approval cancelled while it was being handed to SMTP
// does not mark the application's (new) invitation sent: its own mail still waits.
func TestACancelledInvitationDoesNotCountAsSent(t *testing.T) {
	ctx := context.Background()
	s := mailsink.Start(t)
	cfg := onboarding.DefaultConfig()
	cfg.SMTPURL = s.URL()
	w := newWorld(t, database.Postgres, cfg)
	testkit.Expect(t, w.apply(t, application("dal-bot", "ana@example.org")), http.StatusCreated, "")
	w.sendAll(t, 1)
	confirm := mustMatch(t, confirmLink, s.Messages()[0].Text)
	if _, err := w.apps.Confirm(ctx, strings.TrimPrefix(confirm, onboarding.ConfirmPath)); err != nil {
		t.Fatal(err)
	}
	id := w.only(t).ApplicationID
	if _, _, err := w.apps.Approve(ctx, id, "ops", ""); err != nil {
		t.Fatal(err)
	}
	// The second approval runs between the SMTP hand-over and the "sent" update.
	var once sync.Once
	if err := w.db.Callback().Update().Before("gorm:update").Register("test:approve_meanwhile", func(tx *gorm.DB) {
		if m, ok := tx.Statement.Dest.(map[string]any); ok && tx.Statement.Table == "onboarding_mail" && m["state"] == onboarding.MailSent {
			once.Do(func() {
				if _, _, err := w.apps.Approve(ctx, id, "ops", "again"); err != nil {
					t.Errorf("second approval: %v", err)
				}
			})
		}
	}); err != nil {
		t.Fatal(err)
	}
	var rows []testkit.JobRow
	if err := w.db.Where("kind = ?", onboarding.SendArgs{}.Kind()).Order("id desc").Limit(1).Find(&rows).Error; err != nil || len(rows) != 1 {
		t.Fatalf("the invitation's job: %v %v", rows, err)
	}
	job, err := testkit.Job[onboarding.SendArgs](rows[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.sender.Work(ctx, job); err != nil {
		t.Fatal(err)
	}
	app, err := w.apps.Show(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if app.InvitationSentAt != nil {
		t.Fatalf("invitation_sent_at %v, while the current invitation's mail still waits", app.InvitationSentAt)
	}
}

// One owner's agents share one organisation whatever the case the address was typed in.
func TestOrganisationJoinedWhateverTheAddressCase(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		a := w.ownedAgent(t, "dal-bot", "ana@example.org")
		b := w.ownedAgent(t, "pea-bot", "Ana@Example.org")
		if a.OrgID != b.OrgID {
			t.Fatalf("one owner's agents in two organisations: %s and %s", a.OrgID, b.OrgID)
		}
	})
}
