package billing_test

// Tests of pricing versions: publication, supersession and grace periods, refusals, and the module's
// migrations (WIRE.md sections 3 and 8).

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
)

// codes returns the versions' codes in order.
func codes(vs []billing.Price) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.PricingVersion
	}
	return out
}

// TestPricingPublishWireExample: the example file of WIRE.md section 8 publishes, becomes current with
// its prices, and is listed and accepted.
func TestPricingPublishWireExample(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		got := w.publish(t, []byte(wireExample))
		if got.PricingVersion != "2026-11" || !got.Current || got.PerAttachment != 1 || got.GracePeriodDays != 30 ||
			!maps.Equal(got.Prices, wirePrices) || !got.PublishedAt.Equal(t0) || got.SupersededAt != nil || got.AcceptedUntil != nil {
			t.Fatalf("published %+v", got)
		}
		list, err := w.pricing.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].PricingVersion != "2026-11" || !list[0].Current || !maps.Equal(list[0].Prices, wirePrices) ||
			!list[0].PublishedAt.Equal(t0) || list[0].PublishedAt.Location() != time.UTC {
			t.Fatalf("list %+v", list)
		}
		acc, current, err := w.pricing.Accepted(ctx, w.clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if current != "2026-11" || !slices.Equal(codes(acc), []string{"2026-11"}) {
			t.Fatalf("accepted %v, current %q", codes(acc), current)
		}
	})
}

// TestPricingBeforeAnyPublication: nothing is accepted and there is no current version.
func TestPricingBeforeAnyPublication(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		list, err := w.pricing.List(context.Background())
		if err != nil || len(list) != 0 {
			t.Fatalf("list %+v, %v", list, err)
		}
		acc, current, err := w.pricing.Accepted(context.Background(), w.clock.Now())
		if err != nil || len(acc) != 0 || current != "" {
			t.Fatalf("accepted %+v, current %q, %v", acc, current, err)
		}
	})
}

// TestPricingSupersededStaysAcceptedForItsOwnGrace: a second publication becomes current; the first is
// superseded at that time and stays accepted until superseded_at + its own grace_period_days (not the
// new version's), and no longer from then on.
func TestPricingSupersededStaysAcceptedForItsOwnGrace(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		w.publish(t, pricingFile("v1", 30, 0, nil))
		w.clock.Add(24 * time.Hour)
		supersededAt := w.clock.Now()
		v2 := w.publish(t, pricingFile("v2", 2, 0, nil))
		if !v2.Current {
			t.Fatalf("v2 %+v", v2)
		}
		until := supersededAt.Add(30 * 24 * time.Hour)

		list, err := w.pricing.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(codes(list), []string{"v2", "v1"}) {
			t.Fatalf("list %v, want newest first", codes(list))
		}
		v1 := list[1]
		if v1.Current || list[0].Current != true || v1.SupersededAt == nil || !v1.SupersededAt.Equal(supersededAt) ||
			v1.AcceptedUntil == nil || !v1.AcceptedUntil.Equal(until) || !v1.PublishedAt.Equal(t0) {
			t.Fatalf("v1 after supersession: %+v", v1)
		}
		if list[0].SupersededAt != nil || list[0].AcceptedUntil != nil {
			t.Fatalf("v2 %+v", list[0])
		}

		for _, c := range []struct {
			at   time.Time
			want []string
		}{
			{supersededAt, []string{"v2", "v1"}},
			{until.Add(-time.Second), []string{"v2", "v1"}},
			{until, []string{"v2"}},
			{until.Add(time.Hour), []string{"v2"}},
		} {
			acc, current, err := w.pricing.Accepted(ctx, c.at)
			if err != nil {
				t.Fatal(err)
			}
			if current != "v2" || !slices.Equal(codes(acc), c.want) {
				t.Fatalf("at %s: accepted %v current %q, want %v", c.at, codes(acc), current, c.want)
			}
			if !acc[0].Current || (len(acc) > 1 && acc[1].Current) {
				t.Fatalf("at %s: current flags %+v", c.at, acc)
			}
		}

		// The meter agrees with Accepted, at the clock's time.
		p := w.funded(t, 100)
		w.clock.Set(until.Add(-time.Second))
		if _, err := w.write(ctx, p, charge(port.OpVote, "v1", 10), false); err != nil {
			t.Fatalf("v1 inside its grace: %v", err)
		}
		w.clock.Set(until)
		_, err = w.write(ctx, p, charge(port.OpVote, "v1", 10), false)
		pr := asProblem(t, err, problem.PricingVersionNotAccepted, 409)
		if pr.Extensions["current_pricing_version"] != "v2" {
			t.Fatalf("extensions %v", pr.Extensions)
		}
	})
}

// TestPricingThreeVersions: a third publication supersedes only the current one; the first keeps its
// own supersession time and grace.
func TestPricingThreeVersions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, pricingFile("v1", 10, 0, nil))
		w.clock.Add(time.Hour)
		s1 := w.clock.Now()
		w.publish(t, pricingFile("v2", 1, 0, nil))
		w.clock.Add(time.Hour)
		s2 := w.clock.Now()
		w.publish(t, pricingFile("v3", 5, 0, nil))
		list, err := w.pricing.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(codes(list), []string{"v3", "v2", "v1"}) {
			t.Fatalf("list %v", codes(list))
		}
		if !list[2].SupersededAt.Equal(s1) || !list[2].AcceptedUntil.Equal(s1.Add(10*24*time.Hour)) {
			t.Fatalf("v1 %+v", list[2])
		}
		if !list[1].SupersededAt.Equal(s2) || !list[1].AcceptedUntil.Equal(s2.Add(24*time.Hour)) {
			t.Fatalf("v2 %+v", list[1])
		}
		acc, current, err := w.pricing.Accepted(context.Background(), s2.Add(25*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if current != "v3" || !slices.Equal(codes(acc), []string{"v3", "v1"}) {
			t.Fatalf("accepted %v current %q", codes(acc), current)
		}
	})
}

// TestPricingZeroGraceNotAcceptedOnceSuperseded: with grace_period_days 0 the superseded version is
// refused at once.
func TestPricingZeroGraceNotAcceptedOnceSuperseded(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		w.publish(t, pricingFile("v1", 0, 0, nil))
		p := w.funded(t, 10)
		if _, err := w.write(ctx, p, charge(port.OpVote, "v1", 1), false); err != nil {
			t.Fatal(err)
		}
		w.publish(t, pricingFile("v2", 0, 0, nil))
		acc, current, err := w.pricing.Accepted(ctx, w.clock.Now())
		if err != nil || current != "v2" || !slices.Equal(codes(acc), []string{"v2"}) {
			t.Fatalf("accepted %v current %q %v", codes(acc), current, err)
		}
		before := w.state(t)
		_, err = w.write(ctx, p, charge(port.OpVote, "v1", 1), false)
		asProblem(t, err, problem.PricingVersionNotAccepted, 409)
		w.unchanged(t, before)
	})
}

// TestPricingCodeNeverReused: publishing a code again, current or superseded, is 409 conflict and
// changes nothing.
func TestPricingCodeNeverReused(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		w.publish(t, pricingFile("v1", 30, 0, nil))
		_, err := w.pricing.Publish(ctx, pricingFile("v1", 5, 2, map[string]int64{"vote": 9}))
		asProblem(t, err, problem.Conflict, 409)
		w.clock.Add(time.Hour)
		w.publish(t, pricingFile("v2", 30, 0, nil))
		before, _ := w.pricing.List(ctx)
		_, err = w.pricing.Publish(ctx, pricingFile("v1", 30, 0, nil))
		asProblem(t, err, problem.Conflict, 409)
		_, err = w.pricing.Publish(ctx, pricingFile("v2", 30, 0, nil))
		asProblem(t, err, problem.Conflict, 409)
		after, err := w.pricing.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(after) != 2 || after[0].PricingVersion != "v2" || !after[0].Current || after[1].Current ||
			!after[1].SupersededAt.Equal(*before[1].SupersededAt) || after[1].Prices["vote"] != 1 {
			t.Fatalf("after the refusals: %+v", after)
		}
	})
}

// TestPricingInvalidFiles: files the schema refuses are 422 validation_failed problems with pointers,
// and publish nothing.
func TestPricingInvalidFiles(t *testing.T) {
	cases := []struct {
		name    string
		raw     string
		pointer string // the pointer one of the errors names ("" to check only that there is one)
		code    string // and its code
	}{
		{"missing operation", `{"pricing_version": "m", "grace_period_days": 1, "per_attachment": 0, "prices": {"create_thread": 1, "create_reply": 1, "vote": 1, "clear_vote": 0, "tombstone": 1, "manage_thread_attachments": 1, "manage_reply_attachments": 1}}`, "/prices/media_upload", "required"},
		{"unknown member", `{"pricing_version": "u", "grace_period_days": 1, "per_attachment": 0, "extra": true, "prices": ` + pricesJSON(nil) + `}`, "/extra", "unknown_member"},
		{"unknown operation", `{"pricing_version": "o", "grace_period_days": 1, "per_attachment": 0, "prices": ` + pricesJSON(map[string]int64{"report": 1}) + `}`, "/prices/report", "unknown_member"},
		{"case variant", `{"Pricing_version": "c", "pricing_version": "c", "grace_period_days": 1, "per_attachment": 0, "prices": ` + pricesJSON(nil) + `}`, "/Pricing_version", "unknown_member"},
		{"negative price", `{"pricing_version": "n", "grace_period_days": 1, "per_attachment": 0, "prices": ` + pricesJSON(map[string]int64{"vote": -1}) + `}`, "/prices/vote", "minimum"},
		{"negative per_attachment", `{"pricing_version": "a", "grace_period_days": 1, "per_attachment": -1, "prices": ` + pricesJSON(nil) + `}`, "/per_attachment", "minimum"},
		{"negative grace", `{"pricing_version": "g", "grace_period_days": -1, "per_attachment": 0, "prices": ` + pricesJSON(nil) + `}`, "/grace_period_days", "minimum"},
		{"fractional price", `{"pricing_version": "f", "grace_period_days": 1, "per_attachment": 0, "prices": ` + strings.Replace(pricesJSON(nil), `"vote":1`, `"vote":1.5`, 1) + `}`, "/prices/vote", ""},
		{"empty code", `{"pricing_version": "", "grace_period_days": 1, "per_attachment": 0, "prices": ` + pricesJSON(nil) + `}`, "/pricing_version", ""},
		{"code of 65 characters", `{"pricing_version": "` + string(make65()) + `", "grace_period_days": 1, "per_attachment": 0, "prices": ` + pricesJSON(nil) + `}`, "/pricing_version", ""},
		{"missing code", `{"grace_period_days": 1, "per_attachment": 0, "prices": ` + pricesJSON(nil) + `}`, "/pricing_version", "required"},
		{"invalid JSON", `{"pricing_version": "j", `, "", "invalid_json"},
		{"trailing data", `{"pricing_version": "t", "grace_period_days": 1, "per_attachment": 0, "prices": ` + pricesJSON(nil) + `} {}`, "", "trailing_data"},
		{"duplicate member", `{"pricing_version": "d", "pricing_version": "e", "grace_period_days": 1, "per_attachment": 0, "prices": ` + pricesJSON(nil) + `}`, "", "duplicate_member"},
		{"empty", ``, "", "invalid_json"},
		{"not an object", `[]`, "", ""},
	}
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				_, err := w.pricing.Publish(context.Background(), []byte(c.raw))
				p := asProblem(t, err, problem.ValidationFailed, 422)
				if len(p.Errors) == 0 {
					t.Fatalf("no pointers: %+v", p)
				}
				found := false
				for _, fe := range p.Errors {
					if (c.pointer == "" || fe.Pointer == c.pointer) && (c.code == "" || fe.Code == c.code) {
						found = true
					}
				}
				if !found {
					t.Fatalf("errors %+v, want one at %q with code %q", p.Errors, c.pointer, c.code)
				}
			})
		}
		list, err := w.pricing.List(context.Background())
		if err != nil || len(list) != 0 {
			t.Fatalf("after the refusals: %+v %v", list, err)
		}
	})
}

func make65() []byte {
	b := make([]byte, 65)
	for i := range b {
		b[i] = 'x'
	}
	return b
}

// pricesJSON is a complete price list (every operation 1 unless prices says otherwise) as JSON.
func pricesJSON(prices map[string]int64) string {
	raw := pricingFile("x", 0, 0, prices)
	// {"grace_period_days":0,"per_attachment":0,"prices":{...},"pricing_version":"x"}: cut the object out.
	s := string(raw)
	start := len(`{"grace_period_days":0,"per_attachment":0,"prices":`)
	end := len(s) - len(`,"pricing_version":"x"}`)
	return s[start:end]
}

// TestPricingConcurrentPublicationsLeaveOneCurrent: publications of distinct codes racing each other
// on PostgreSQL (operators on two machines) all succeed, one after the other: afterwards exactly one
// version is current, every other is superseded, and the publication order has no gaps. Rounds of 8
// concurrent publications, the first on an empty table.
func TestPricingConcurrentPublicationsLeaveOneCurrent(t *testing.T) {
	onPostgres(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		const rounds, n = 5, 8
		for round := range rounds {
			var wg sync.WaitGroup
			start := make(chan struct{})
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					<-start
					_, errs[i] = w.pricing.Publish(context.Background(), pricingFile("r"+itoa(round)+"-"+itoa(i), 30, 0, nil))
				})
			}
			close(start)
			wg.Wait()
			for i, err := range errs {
				if err != nil {
					t.Errorf("round %d: the publication of the new code r%d-%d was refused: %v", round, round, i, err)
				}
			}
			var current []string
			if err := w.db.Model(&billing.PricingVersion{}).Where("superseded_at IS NULL").Order("seq").Pluck("code", &current).Error; err != nil {
				t.Fatal(err)
			}
			if len(current) != 1 {
				t.Fatalf("round %d: %d versions are current after concurrent publications: %v", round, len(current), current)
			}
			_, cur, err := w.pricing.Accepted(context.Background(), w.clock.Now())
			if err != nil || cur != current[0] {
				t.Fatalf("round %d: Accepted names %q as current, the table %q (%v)", round, cur, current[0], err)
			}
			if t.Failed() {
				t.FailNow()
			}
		}
		var seqs []int64
		if err := w.db.Model(&billing.PricingVersion{}).Order("seq").Pluck("seq", &seqs).Error; err != nil {
			t.Fatal(err)
		}
		for i, s := range seqs {
			if s != int64(i+1) {
				t.Fatalf("publication order %v", seqs)
			}
		}
	})
}

// TestMigrationsTwiceIsNoop: applying billing's migrations again changes nothing and keeps the data.
func TestMigrationsTwiceIsNoop(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 7)
		before := w.state(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for range 2 {
			if err := database.Migrate(ctx, w.db, []plugin.Migrations{billing.Migrations()}); err != nil {
				t.Fatalf("migrate again: %v", err)
			}
		}
		w.unchanged(t, before)
		w.wantBalance(t, p.OrgID, 7)
		if list, err := w.pricing.List(ctx); err != nil || len(list) != 1 {
			t.Fatalf("list %+v %v", list, err)
		}
	})
}

// TestWalletBalanceCheckConstraint: the database itself refuses a negative balance, whatever writes it.
func TestWalletBalanceCheckConstraint(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		p := w.funded(t, 3)
		if err := w.db.Exec("UPDATE billing_wallets SET balance = -1 WHERE org_id = ?", p.OrgID).Error; err == nil {
			t.Fatal("a balance of -1 was stored")
		}
		if err := w.db.Exec("UPDATE billing_wallets SET balance = balance - 4 WHERE org_id = ?", p.OrgID).Error; err == nil {
			t.Fatal("a balance of 3 - 4 was stored")
		}
		if err := w.db.Exec("INSERT INTO billing_wallets (org_id, balance, updated_at) VALUES (?, ?, ?)", newID(), -5, t0).Error; err == nil {
			t.Fatal("a wallet of -5 was inserted")
		}
		w.wantBalance(t, p.OrgID, 3)
		if err := w.db.Exec("UPDATE billing_wallets SET balance = 0 WHERE org_id = ?", p.OrgID).Error; err != nil {
			t.Fatalf("a balance of 0: %v", err)
		}
		w.wantBalance(t, p.OrgID, 0)
	})
}
