package onboarding_test

// Owner links and the address's account (issue 30, defect 7): the request does the same database work
// whether or not an account has the address, so that neither its answer nor its timing tells; only the
// job that sends the mail looks the account up. The test compares the statements each request sends;
// the benchmark times the two kinds of request interleaved.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/onboarding"
	"github.com/svcforum/svc/testkit"
	"github.com/svcforum/svc/testkit/mailsink"
)

// statement is one statement a database was sent: its SQL, how many values were bound to it, the rows
// it affected and whether it failed. The values themselves (ids, times, the address) differ between
// any two requests.
type statement struct {
	SQL    string
	Args   int
	Rows   int64
	Failed bool
}

// statements records what a database is sent while it records: on PostgreSQL through the pgx tracer,
// which also sees the batches of planned writes (sent past gorm); on SQLite through gorm's callbacks,
// through which every statement there goes.
type statements struct {
	mu   sync.Mutex
	on   bool
	seen []statement
}

// during returns the statements sent while f runs. Nothing else may use the database meanwhile.
func (s *statements) during(f func()) []statement {
	s.mu.Lock()
	s.on, s.seen = true, nil
	s.mu.Unlock()
	f()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.on = false
	return s.seen
}

// add records st and returns its index, or -1 when not recording.
func (s *statements) add(st statement) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return -1
	}
	s.seen = append(s.seen, st)
	return len(s.seen) - 1
}

func (s *statements) ended(i int, rows int64, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.on && i >= 0 && i < len(s.seen) {
		s.seen[i].Rows, s.seen[i].Failed = rows, err != nil
	}
}

type statementSlot struct{}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	return context.WithValue(ctx, statementSlot{}, s.add(statement{SQL: d.SQL, Args: len(d.Args)}))
}

func (s *statements) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryEndData) {
	if i, ok := ctx.Value(statementSlot{}).(int); ok {
		s.ended(i, d.CommandTag.RowsAffected(), d.Err)
	}
}

func (s *statements) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}

func (s *statements) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	s.add(statement{SQL: d.SQL, Args: len(d.Args), Rows: d.CommandTag.RowsAffected(), Failed: d.Err != nil})
}

func (s *statements) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// gorm records, on SQLite, a statement gorm ran (not one a plan only built: a dry run).
func (s *statements) gorm(tx *gorm.DB) {
	if tx.DryRun {
		return
	}
	s.add(statement{SQL: tx.Statement.SQL.String(), Args: len(tx.Statement.Vars), Rows: tx.Statement.RowsAffected, Failed: tx.Error != nil})
}

// openRecorded returns a fresh database of dialect with the module's migrations, whose statements rec
// records.
func openRecorded(t testing.TB, dialect string, rec *statements) *gorm.DB {
	t.Helper()
	db, err := database.Open(dbtest.URL(t, dialect), database.Options{Tracer: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := database.Migrate(ctx, db, []plugin.Migrations{onboarding.Migrations()}); err != nil {
		t.Fatal(err)
	}
	if dialect == database.SQLite {
		cb := db.Callback()
		for _, err := range []error{
			cb.Create().After("gorm:create").Register("test:statements", rec.gorm),
			cb.Query().After("gorm:query").Register("test:statements", rec.gorm),
			cb.Update().After("gorm:update").Register("test:statements", rec.gorm),
			cb.Delete().After("gorm:delete").Register("test:statements", rec.gorm),
			cb.Row().After("gorm:row").Register("test:statements", rec.gorm),
			cb.Raw().After("gorm:raw").Register("test:statements", rec.gorm),
		} {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	return db
}

// signInOver gives email an account by the mailed sign-in link, read from the SMTP sink.
func (w *world) signInOver(t testing.TB, s *mailsink.Sink, email string) {
	t.Helper()
	b := &browser{w: w}
	expectPage(t, b.askSignIn(t, email), http.StatusOK, "")
	for _, err := range w.sendAll(t, 1) {
		if err != nil {
			t.Fatal(err)
		}
	}
	link := mustMatch(t, signInLink, s.Wait(t, email, "", 5*time.Second).Text)
	_, token := b.get(t, link)
	expectRedirect(t, b.post(t, link, url.Values{"csrf_token": {token}}))
}

// TestOwnerLinkRequestIgnoresAccounts: the requests for an address with an account and for one without
// send the same statements, with as many values each, affecting the same rows, and none of them reads
// the accounts; the job then mails the account, over SMTP, and nobody else.
func TestOwnerLinkRequestIgnoresAccounts(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		t.Parallel()
		s := mailsink.Start(t)
		cfg := onboarding.DefaultConfig()
		cfg.SMTPURL = s.URL()
		rec := &statements{}
		w := newWorldOn(t, openRecorded(t, dialect, rec), cfg)
		w.signInOver(t, s, "ann@example.org") // of the same length as bob's, so that the answers compare
		// A first request prepares what any first request would (the pool's connections, caches).
		testkit.Expect(t, w.askLink(t, newAgent("cat-bot"), "cat@example.org"), http.StatusAccepted, "")

		ann, bob := newAgent("ann-bot"), newAgent("bob-bot")
		var withAccount, without testkit.Result
		annSQL := rec.during(func() { withAccount = w.askLink(t, ann, "ann@example.org") })
		bobSQL := rec.during(func() { without = w.askLink(t, bob, "bob@example.org") })
		testkit.Expect(t, withAccount, http.StatusAccepted, "")
		testkit.Expect(t, without, http.StatusAccepted, "")
		if a, b := strings.ReplaceAll(string(withAccount.Body), "ann@", "bob@"), string(without.Body); a != b {
			t.Fatalf("the answers differ beyond the address: %s and %s", a, b)
		}
		if !slices.Equal(annSQL, bobSQL) {
			t.Fatalf("the request for an address with an account sent\n%s\nand for one without\n%s", listing(annSQL), listing(bobSQL))
		}
		t.Logf("each request sent:\n%s", listing(annSQL))
		wrote := false
		for _, st := range annSQL {
			if strings.Contains(st.SQL, "onboarding_owners") {
				t.Fatalf("the request reads the accounts:\n%s", listing(annSQL))
			}
			wrote = wrote || strings.Contains(st.SQL, "onboarding_owner_links") && strings.Contains(st.SQL, "INSERT")
		}
		if !wrote {
			t.Fatalf("recorded no insertion of the link; the recorder misses statements:\n%s", listing(annSQL))
		}

		// The job decides: the account's confirmation goes out over SMTP, the others' links close unsent.
		w.runLinks(t)
		if st := w.linkState(t, ann.AgentID); st != onboarding.LinkSent {
			t.Fatalf("the link to an account: %s", st)
		}
		for _, p := range []string{bob.AgentID, w.agentOf(t, "cat-bot")} {
			if st := w.linkState(t, p); st != onboarding.LinkNoAccount {
				t.Fatalf("a link to an address without an account: %s", st)
			}
		}
		link := mustMatch(t, ownerLink, s.Wait(t, "ann@example.org", "An agent asks to be linked to you", 5*time.Second).Text)
		if n := s.Count("bob@example.org") + s.Count("cat@example.org"); n != 0 {
			t.Fatalf("%d messages to addresses without an account", n)
		}
		r, _ := (&browser{w: w}).get(t, link)
		expectPage(t, r, http.StatusOK, "")
		contains(t, r, "<strong>ann-bot</strong> asks to be linked to you")
	})
}

// agentOf is the id of the agent that asked for an owner link with handle.
func (w *world) agentOf(t testing.TB, handle string) string {
	t.Helper()
	var ids []string
	if err := w.db.Table("onboarding_owner_links").Where("handle = ?", handle).Pluck("agent_id", &ids).Error; err != nil || len(ids) != 1 {
		t.Fatalf("the link of %s: %v %v", handle, ids, err)
	}
	return ids[0]
}

func listing(sts []statement) string {
	var b strings.Builder
	for i, st := range sts {
		fmt.Fprintf(&b, "  %d. %s  [%d values, %d rows, failed %v]\n", i+1, st.SQL, st.Args, st.Rows, st.Failed)
	}
	return b.String()
}

// BenchmarkOwnerLinkTiming times owner-link requests for an address with an account against requests
// for one without, interleaved: each iteration is a pair, the account's first in even pairs and last in
// odd ones, so that load on the machine, a warming cache or a growing table falls on both alike. Every
// request is a new agent's, naming a new address (no start limit is reached); the accounts are made,
// and each pair's jobs run, outside the timed requests. It reports the medians, the means, the
// ratio of the medians and the median of the pairs' differences; it asserts nothing about them.
//
//	cd modules/onboarding && GOWORK=off go test -run '^$' -bench BenchmarkOwnerLinkTiming -benchtime 300x
func BenchmarkOwnerLinkTiming(b *testing.B) {
	for _, dialect := range dbtest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			w := newWorld(b, dialect, onboarding.DefaultConfig())
			var account, none []time.Duration
			timed := func(p int, email string) time.Duration {
				agent := newAgent(fmt.Sprintf("t%d-%s", p, email[:1]))
				start := time.Now()
				r := w.askLink(b, agent, email)
				d := time.Since(start)
				testkit.Expect(b, r, http.StatusAccepted, "")
				return d
			}
			var lastJob int64
			for p := 0; b.Loop(); p++ {
				b.StopTimer()
				with, without := fmt.Sprintf("a%05d@example.org", p), fmt.Sprintf("n%05d@example.org", p)
				if err := w.db.Table("onboarding_owners").Create(map[string]any{
					"id": uuid.Must(uuid.NewV7()).String(), "email": with, "created_at": time.Now().UTC()}).Error; err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if p%2 == 0 {
					account = append(account, timed(p, with))
					none = append(none, timed(p, without))
				} else {
					none = append(none, timed(p, without))
					account = append(account, timed(p, with))
				}
				b.StopTimer()
				lastJob = w.runLinksAfter(b, lastJob)
				b.StartTimer()
			}
			diffs := make([]time.Duration, len(account))
			faster := 0
			for i := range account {
				diffs[i] = account[i] - none[i]
				if diffs[i] < 0 {
					faster++
				}
			}
			us := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
			ma, mn := median(account), median(none)
			b.ReportMetric(us(ma), "account-med-us")
			b.ReportMetric(us(mn), "none-med-us")
			b.ReportMetric(float64(ma)/float64(mn), "med-ratio")
			b.ReportMetric(us(median(diffs)), "pair-diff-med-us")
			b.ReportMetric(us(mean(account)), "account-mean-us")
			b.ReportMetric(us(mean(none)), "none-mean-us")
			b.Logf("%s, %d pairs: account median %v mean %v; none median %v mean %v; ratio of medians %.3f; "+
				"median pair difference %v; the account's request faster in %d pairs",
				dialect, len(account), ma, mean(account), mn, mean(none), float64(ma)/float64(mn), median(diffs), faster)
		})
	}
}

// runLinksAfter runs the owner-link jobs recorded after the job id after, once each, and returns the
// last one's id.
func (w *world) runLinksAfter(t testing.TB, after int64) int64 {
	t.Helper()
	var rows []testkit.JobRow
	if err := w.db.Where("kind = ? AND id > ?", onboarding.LinkArgs{}.Kind(), after).Order("id").Find(&rows).Error; err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		job, err := testkit.Job[onboarding.LinkArgs](row, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.linker.Work(context.Background(), job); err != nil {
			t.Fatal(err)
		}
		after = row.ID
	}
	return after
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}
