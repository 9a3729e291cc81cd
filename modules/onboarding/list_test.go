package onboarding_test

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

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
)

// allOf is a page of list long enough for any test.
func allOf(list string) plugin.ListPage {
	return plugin.ListPage{List: list, Limit: plugin.MaxListLimit}
}

// runAdmin runs `svc admin ARGS...` of the module's commands with the world's services, as the host's
// invoke would, and returns what it printed.
func (w *world) runAdmin(args ...string) (string, error) {
	var out bytes.Buffer
	invoke := func(ctx context.Context, _ *cli.Command, fn any) error {
		switch fn := fn.(type) {
		case func(context.Context, *onboarding.Applications) error:
			return fn(ctx, w.apps)
		case func(context.Context, *onboarding.Outbox) error:
			return fn(ctx, w.outbox)
		}
		return fmt.Errorf("the test's invoke cannot call %T", fn)
	}
	root := &cli.Command{Name: "admin", Writer: &out, Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}}, Commands: onboarding.Admin(invoke)}
	err := root.Run(context.Background(), append([]string{"admin"}, args...))
	return out.String(), err
}

// listPage is one page of a list as --json prints it: each row's id and creation time.
type listPage struct {
	Rows       []map[string]any
	More       bool    `json:"more"`
	NextCursor *string `json:"next_cursor"`
}

func (w *world) listPage(t *testing.T, name, idMember string, args ...string) (listPage, []string) {
	t.Helper()
	out, err := w.runAdmin(append([]string{"--json"}, args...)...)
	var raw map[string]json.RawMessage
	if err != nil || json.Unmarshal([]byte(out), &raw) != nil {
		t.Fatalf("%v: %v, %s", args, err, out)
	}
	var p listPage
	if json.Unmarshal(raw[name], &p.Rows) != nil || json.Unmarshal(raw["more"], &p.More) != nil || json.Unmarshal(raw["next_cursor"], &p.NextCursor) != nil {
		t.Fatalf("%v: not {%q, more, next_cursor}: %s", args, name, out)
	}
	ids := make([]string, len(p.Rows))
	for i, r := range p.Rows {
		ids[i], _ = r[idMember].(string)
	}
	return p, ids
}

// checkPaging checks a list command: one page of all is newest first (rows made at the same instant by
// id), pages of two continue without a gap or a repeat and end with more false and next_cursor null,
// the table for people names the cursor that continues, and a bad --limit or --cursor is refused.
func (w *world) checkPaging(t *testing.T, command, name, idMember string, newest string) {
	t.Helper()
	all, want := w.listPage(t, name, idMember, command, "list")
	if all.More || all.NextCursor != nil || len(all.Rows) < 5 || want[0] != newest {
		t.Fatalf("one page of all: more %v, %d rows, first %s, want %s first", all.More, len(all.Rows), want[0], newest)
	}
	for i := 1; i < len(all.Rows); i++ {
		a, _ := time.Parse(time.RFC3339Nano, all.Rows[i-1]["created_at"].(string))
		b, _ := time.Parse(time.RFC3339Nano, all.Rows[i]["created_at"].(string))
		if a.Before(b) || (a.Equal(b) && want[i-1] <= want[i]) {
			t.Fatalf("not newest first (then by id) at %d: %v", i, all.Rows)
		}
	}
	var paged []string
	args := []string{command, "list", "--limit", "2"}
	for {
		p, ids := w.listPage(t, name, idMember, args...)
		paged = append(paged, ids...)
		if p.More != (p.NextCursor != nil) || len(ids) > 2 || (p.More && len(ids) != 2) {
			t.Fatalf("a page: more %v, next_cursor %v, %d rows", p.More, p.NextCursor, len(ids))
		}
		if !p.More {
			break
		}
		args = []string{command, "list", "--limit", "2", "--cursor", *p.NextCursor}
	}
	if !slices.Equal(paged, want) {
		t.Fatalf("pages of two: %v, want %v", paged, want)
	}
	out, err := w.runAdmin(command, "list", "--limit", "1")
	if err != nil || strings.Count(out, "\n") != 3 || !strings.Contains(out, newest) || !strings.Contains(out, "(more "+name+": continue with --cursor ") {
		t.Fatalf("the table: %v\n%s", err, out)
	}
	otherCursor := plugin.ListPosition{CreatedAt: testkit.T0, ID: "x"}.Cursor("report")
	for _, bad := range [][]string{{"--limit", "0"}, {"--limit", "1001"}, {"--cursor", "not-a-cursor"}, {"--cursor", otherCursor}} {
		out, err := w.runAdmin(append([]string{"--json", command, "list"}, bad...)...)
		var p *problem.Problem
		if !isProblemErr(err, &p) || p.Code != problem.ValidationFailed || out != "" || !strings.Contains(p.Detail, bad[0]) {
			t.Errorf("%s list %v: %v, printed %q", command, bad, err, out)
		}
	}
}

func isProblemErr(err error, p **problem.Problem) bool {
	var ok bool
	*p, ok = err.(*problem.Problem)
	return ok
}

// TestAdminListsPage is `svc admin application list` and `svc admin mail list` on both databases, as
// every operator's list pages (WIRE.md section 8).
func TestAdminListsPage(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		w := newWorld(t, dialect, onboarding.DefaultConfig())
		var newest string
		for i := range 7 {
			if i == 3 || i == 5 { // three at one instant, two at the next, two at a third
				w.clock.Add(time.Minute)
			}
			r := w.apply(t, application(fmt.Sprintf("paged-%d", i), fmt.Sprintf("p%d@example.org", i)))
			testkit.Expect(t, r, http.StatusCreated, "")
			newest = r.JSON(t)["application_id"].(string)
		}
		w.checkPaging(t, "application", "applications", "application_id", newest)
		if _, err := w.runAdmin("--json", "application", "list", "--status", "lost"); err == nil {
			t.Error("an unknown --status is listed")
		}

		// Each application queued its confirmation mail at its own time.
		mail, _, err := w.outbox.List(context.Background(), "", allOf("mail"))
		if err != nil || len(mail) != 7 || mail[0].ApplicationID == nil || *mail[0].ApplicationID != newest {
			t.Fatalf("the mail: %+v, %v", mail, err)
		}
		w.checkPaging(t, "mail", "mail", "mail_id", mail[0].MailID)
	})
}
