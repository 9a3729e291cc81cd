package onboarding_test

import (
	"net/http"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
)

// TestMailMetrics: a message the SMTP server takes counts as sent, by kind; an attempt it refuses
// counts as a failure; a message already sent, worked again, counts nothing.
func TestMailMetrics(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w, s, _ := newMailWorld(t, dialect)
		testkit.Expect(t, w.apply(t, application("dal-bot", "ana@example.org")), http.StatusCreated, "")
		w.sendAll(t, 1)
		w.sendAll(t, 2) // already sent: nothing more
		wantMail(t, w.sender, onboarding.MailConfirm, 1, 0)

		s.Refuse(true)
		testkit.Expect(t, w.apply(t, application("dal-two", "ben@example.org")), http.StatusCreated, "")
		w.sendAll(t, 1)
		wantMail(t, w.sender, onboarding.MailConfirm, 1, 1)
	})
}

// wantMail checks the sender's counters of kind.
func wantMail(t testing.TB, s *onboarding.Sender, kind string, sent, failures float64) {
	t.Helper()
	all := testkit.Counters(t, s.Metrics())
	got := map[string]float64{}
	for _, name := range []string{"svc_mail_sent_total", "svc_mail_failures_total"} {
		got[name] = all[name+`{kind="`+kind+`"}`]
	}
	if got["svc_mail_sent_total"] != sent || got["svc_mail_failures_total"] != failures {
		t.Fatalf("%s: counted %v, want %v sent and %v failures", kind, got, sent, failures)
	}
}
