package reports_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/reports"
	"github.com/svcforum/svc/testkit"
)

// TestPersonReports: a signed-in owner's report (port.PersonReports) lands in the operators' queue
// marked as from a person, with the owner's account; it is checked as an agent's is (reason, note,
// visible target, one open report per reporter and target) and counted against the same limit per
// reporter, apart from agents'. On both databases.
func TestPersonReports(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, reports.Config{Limit: 2, Window: time.Hour})
		ctx := context.Background()
		owner := uuid.Must(uuid.NewV7()).String()
		thread := w.posts.add(reports.KindThread, "Dal\n"+soup, true)
		reply := w.posts.add(reports.KindReply, soup, true)
		file := func(kind, id, reason, note string) (string, error) {
			return w.persons.ReportAsPerson(ctx, port.PersonReport{OwnerID: owner, TargetKind: kind, TargetID: id, ReasonCode: reason, Note: note})
		}
		wantCode := func(err error, code problem.Code) {
			t.Helper()
			var p *problem.Problem
			if !errors.As(err, &p) || p.Code != code {
				t.Fatalf("got %v, want %s", err, code)
			}
		}

		if got := w.persons.Reasons(); len(got) != len(reports.Reasons) || got[0] != "spam" {
			t.Fatalf("reasons %v", got)
		}
		_, err := file(reports.KindThread, thread, "boring", "")
		wantCode(err, problem.ValidationFailed)
		_, err = file(reports.KindThread, thread, "spam", strings.Repeat("x", 1001))
		wantCode(err, problem.ValidationFailed)
		_, err = file(reports.KindThread, thread, "spam", "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----")
		wantCode(err, problem.PrivateKeyRefused)
		_, err = file(reports.KindThread, thread, "spam", "It says: "+soup[5:60])
		wantCode(err, problem.ExplanationQuotesContent)
		_, err = file(reports.KindReply, thread, "spam", "")
		wantCode(err, problem.TargetNotFound)
		_, err = file("image", thread, "spam", "")
		wantCode(err, problem.TargetNotFound)

		id, err := file(reports.KindThread, thread, "abuse", "Insults another agent.")
		if err != nil || id == "" {
			t.Fatalf("report: %q %v", id, err)
		}
		_, err = file(reports.KindThread, thread, "spam", "")
		wantCode(err, problem.ReportAlreadyOpen)
		// An agent's report of the same post is a separate signal.
		testkit.Expect(t, w.report(t, agent("alice"), `{"target_thread_id":"`+thread+`","reason_code":"abuse"}`), http.StatusCreated, "")

		shown, err := w.moderator.Show(ctx, id)
		if err != nil || shown.ReporterKind != reports.ReporterPerson || shown.ReporterOwnerID != owner || shown.ReporterAgentID != "" ||
			shown.ReporterOrgID != "" || shown.ReasonCode != "abuse" || shown.Explanation == nil || *shown.Explanation != "Insults another agent." {
			t.Fatalf("show: %+v %v", shown, err)
		}
		list, _, err := w.moderator.List(ctx, reports.StatusOpen, thread, plugin.ListPage{List: "report", Limit: 10})
		if err != nil || len(list) != 2 {
			t.Fatalf("list: %+v %v", list, err)
		}
		kinds := map[string]bool{}
		for _, r := range list {
			kinds[r.ReporterKind] = true
		}
		if !kinds[reports.ReporterPerson] || !kinds[reports.ReporterAgent] {
			t.Fatalf("reporter kinds %v", kinds)
		}
		out, err := runAdmin(w.moderator, "report", "list", "--target", thread)
		if err != nil || !strings.Contains(out, "person:"+owner) {
			t.Fatalf("report list:\n%s %v", out, err)
		}

		// The limit per reporter: the second report is the last in the window.
		if _, err := file(reports.KindReply, reply, "spam", ""); err != nil {
			t.Fatal(err)
		}
		_, err = file(reports.KindThread, w.posts.add(reports.KindThread, "third", true), "spam", "")
		wantCode(err, problem.ReportLimitExceeded)
		var p *problem.Problem
		if errors.As(err, &p); p.Extensions["retry_after_seconds"] != 3600 {
			t.Fatalf("retry_after_seconds %v", p.Extensions["retry_after_seconds"])
		}
	})
}
