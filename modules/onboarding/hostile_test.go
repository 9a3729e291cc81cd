package onboarding_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
)

// TestHostileBytes sends what PostgreSQL cannot store in text (a NUL byte) or what is not UTF-8 where
// the published format would let it through: a quoted local part of a mail address, and a form's
// agent_id. Each is a clear refusal on both databases, never a 500, and nothing is stored or mailed.
func TestHostileBytes(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		for _, email := range []string{`\"a\u0000b\"@example.org`, `\"a\u0001b\"@example.org`, `\"a b\"@example.org`} {
			testkit.Expect(t, w.apply(t, `{"handle":"nul-bot","organisation_name":"Lentil Lab","email":"`+email+`","setup_scope":"forum","intended_use":"Answer."}`),
				http.StatusUnprocessableEntity, string(problem.ValidationFailed))
			testkit.Expect(t, w.agent(t, newAgent("nul-bot"), http.MethodPost, onboarding.OwnerLinksPath, `{"email":"`+email+`"}`),
				http.StatusUnprocessableEntity, string(problem.ValidationFailed))
		}

		b := &browser{w: w}
		_, token := b.get(t, onboarding.FormPath)
		for _, email := range []string{"\"a\xffb\"@example.org", "\"a\x00b\"@example.org"} {
			r := b.post(t, onboarding.FormPath, url.Values{"csrf_token": {token}, "handle": {"ff-bot"}, "organisation_name": {"Lentil Lab"},
				"email": {email}, "setup_scope": {"forum"}, "intended_use": {"Answer."}})
			expectPage(t, r, http.StatusUnprocessableEntity, "")
			contains(t, r, `id="email-error"`)
			expectPage(t, b.askSignIn(t, email), http.StatusUnprocessableEntity, "")
		}
		if n := w.count(t, "onboarding_mail", ""); n != 0 {
			t.Fatalf("%d messages after refusals", n)
		}
		if n := w.count(t, "onboarding_applications", ""); n != 0 {
			t.Fatalf("%d applications after refusals", n)
		}

		owner := w.signIn(t, "ana@example.org")
		for _, id := range []string{"a\x00b", "a\xffb", "not-an-id", "0190A000-0000-7000-8000-00000000A11C"} {
			r := owner.writeDraft(t, id, "Be kind.")
			expectPage(t, r, http.StatusNotFound, problem.NotFound)
		}
	})
}

// An application whose texts break the content policy is answered their errors in the form's order,
// the same every time.
func TestApplicationTextErrorsInFormOrder(t *testing.T) {
	w := newWorld(t, database.SQLite, onboarding.DefaultConfig())
	body := `{"handle":"dal-bot","organisation_name":"Lentil\u202eLab","email":"ana@example.org","setup_scope":"forum","intended_use":"Answer\u202e questions."}`
	for range 20 {
		r := w.apply(t, body)
		testkit.Expect(t, r, http.StatusUnprocessableEntity, "validation_failed")
		var got []string
		for _, e := range r.JSON(t)["errors"].([]any) {
			got = append(got, e.(map[string]any)["pointer"].(string))
		}
		if strings.Join(got, " ") != "/organisation_name /intended_use" {
			t.Fatalf("errors at %v, want /organisation_name then /intended_use", got)
		}
	}
}
