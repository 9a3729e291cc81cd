package reports_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/reports"
	"github.com/svcforum/svc/testkit"
)

// runAdmin runs `svc admin ARGS...` of the module's commands with the moderator, as the host's invoke
// would, and returns what it printed.
func runAdmin(m *reports.Moderator, args ...string) (string, error) {
	var out bytes.Buffer
	invoke := func(ctx context.Context, _ *cli.Command, fn any) error {
		return fn.(func(context.Context, *reports.Moderator) error)(ctx, m)
	}
	root := &cli.Command{Name: "admin", Writer: &out, Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}}, Commands: reports.Admin(invoke)}
	err := root.Run(context.Background(), append([]string{"admin"}, args...))
	return out.String(), err
}

type reportPage struct {
	Reports []struct {
		ReportID  string    `json:"report_id"`
		CreatedAt time.Time `json:"created_at"`
	} `json:"reports"`
	More       bool    `json:"more"`
	NextCursor *string `json:"next_cursor"`
}

// TestReportListPages is `svc admin report list` on both databases: newest first (reports made at the
// same instant ordered by id), --limit rows a page, --cursor continuing without a gap or a repeat, more
// false and next_cursor null at the end; a bad --limit or --cursor is refused with validation_failed.
func TestReportListPages(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, reports.DefaultConfig())
		alice := agent("alice")
		var made []string
		for i := range 7 {
			if i == 3 || i == 5 { // three at one instant, two at the next, two at a third
				w.clock.Add(time.Minute)
			}
			post := w.posts.add(reports.KindThread, fmt.Sprintf("post %d", i), true)
			r := w.report(t, alice, fmt.Sprintf(`{"target_thread_id":%q,"reason_code":"spam"}`, post))
			testkit.Expect(t, r, http.StatusCreated, "")
			made = append(made, r.JSON(t)["report_id"].(string))
		}

		var all reportPage
		out, err := runAdmin(w.moderator, "--json", "report", "list")
		if err != nil || json.Unmarshal([]byte(out), &all) != nil || len(all.Reports) != 7 || all.More || all.NextCursor != nil {
			t.Fatalf("one page of all: %v, %s", err, out)
		}
		for i := 1; i < len(all.Reports); i++ {
			a, b := all.Reports[i-1], all.Reports[i]
			if a.CreatedAt.Before(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.ReportID <= b.ReportID) {
				t.Fatalf("not newest first (then by id) at %d: %+v", i, all.Reports)
			}
		}
		if all.Reports[0].ReportID != made[6] || all.Reports[6].ReportID != made[0] {
			t.Fatalf("the newest report is not first, or the oldest not last: %+v, made %v", all.Reports, made)
		}

		// Pages of two, each continuing after the last: the same reports in the same order.
		var paged []string
		args := []string{"--json", "report", "list", "--limit", "2"}
		for pages := 1; ; pages++ {
			var p reportPage
			out, err := runAdmin(w.moderator, args...)
			if err != nil || json.Unmarshal([]byte(out), &p) != nil {
				t.Fatalf("page %d: %v, %s", pages, err, out)
			}
			for _, r := range p.Reports {
				paged = append(paged, r.ReportID)
			}
			if p.More != (p.NextCursor != nil) || (p.More && len(p.Reports) != 2) {
				t.Fatalf("page %d: more %v, next_cursor %v, %d reports", pages, p.More, p.NextCursor, len(p.Reports))
			}
			if !p.More {
				if pages != 4 || len(p.Reports) != 1 {
					t.Fatalf("the last page is page %d with %d reports, want page 4 with 1", pages, len(p.Reports))
				}
				break
			}
			args = []string{"--json", "report", "list", "--limit", "2", "--cursor", *p.NextCursor}
		}
		want := make([]string, len(all.Reports))
		for i, r := range all.Reports {
			want[i] = r.ReportID
		}
		if !slices.Equal(paged, want) {
			t.Fatalf("pages of two: %v, want %v", paged, want)
		}

		// For people: a table, and a closing line naming the cursor that continues.
		out, err = runAdmin(w.moderator, "report", "list", "--limit", "3", "--status", "open")
		if err != nil || !strings.HasPrefix(out, "REPORT_ID") || strings.Count(out, "\n") != 5 || !strings.Contains(out, made[6]) ||
			!strings.Contains(out, "(more reports: continue with --cursor ") {
			t.Fatalf("the table: %v\n%s", err, out)
		}

		// Refusals: nothing printed, validation_failed naming the flag.
		mailCursor := "eyJsIjoibWFpbCIsInQiOiIyMDI2LTAxLTAxVDAwOjAwOjAwWiIsImkiOiJ4In0" // {"l":"mail",...}
		for _, bad := range [][]string{{"--limit", "0"}, {"--limit", "1001"}, {"--cursor", "not-a-cursor"}, {"--cursor", mailCursor}} {
			out, err := runAdmin(w.moderator, append([]string{"--json", "report", "list"}, bad...)...)
			if !isProblem(err, problem.ValidationFailed) || out != "" || !strings.Contains(err.Error(), bad[0]) && !strings.Contains(err.Error(), "mail list") {
				t.Errorf("%v: %v, printed %q", bad, err, out)
			}
		}
	})
}
