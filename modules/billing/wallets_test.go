package billing_test

// Tests of the wallets: the operator's credits and debits, their validation, concurrency, and the
// audit that proves every balance equals its ledger.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
)

// TestWalletCreditCreatesAndAdds: the first credit creates the wallet, the next ones add, and each is
// a ledger row with the reason and the balance after.
func TestWalletCreditCreatesAndAdds(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		org := w.newOrg()
		if _, ok := w.balance(t, org); ok {
			t.Fatal("a wallet before any credit")
		}
		wl, err := w.wallets.Credit(ctx, org, 25, "first top-up")
		if err != nil || wl.OrgID != org || wl.Balance != 25 || !wl.UpdatedAt.Equal(t0) {
			t.Fatalf("first credit: %+v %v", wl, err)
		}
		w.clock.Add(60e9)
		if wl, err = w.wallets.Credit(ctx, org, 1_000_000_000_000, "the maximum"); err != nil || wl.Balance != 1_000_000_000_025 {
			t.Fatalf("second credit: %+v %v", wl, err)
		}
		w.wantBalance(t, org, 1_000_000_000_025)
		ls := w.ledger(t, org)
		if len(ls) != 2 || ls[0].Kind != billing.KindCredit || ls[0].Amount != 25 || ls[0].BalanceAfter != 25 || ls[0].Reason != "first top-up" ||
			ls[1].Amount != 1_000_000_000_000 || ls[1].BalanceAfter != 1_000_000_000_025 || ls[1].Reason != "the maximum" || ls[1].UsageEventID != nil {
			t.Fatalf("ledger %+v", ls)
		}
		got, err := w.wallets.Get(ctx, org)
		if err != nil || got.Balance != 1_000_000_000_025 || !got.UpdatedAt.Equal(t0.Add(60e9)) {
			t.Fatalf("get %+v %v", got, err)
		}
		w.clean(t, 1)
	})
}

// TestWalletCreditUnknownOrgNotFound: an organisation the directory does not know is 404 not_found,
// and no wallet or ledger row appears.
func TestWalletCreditUnknownOrgNotFound(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		before := w.state(t)
		for _, org := range []string{newID(), "", "not-an-id"} {
			_, err := w.wallets.Credit(context.Background(), org, 5, "top-up")
			asProblem(t, err, problem.NotFound, 404)
			_, err = w.wallets.Debit(context.Background(), org, 5, "take back")
			asProblem(t, err, problem.NotFound, 404)
		}
		w.unchanged(t, before)
	})
}

// TestWalletMovementValidation: credits of 0, negative or above 1e12, and a reason that is empty,
// blank, too long or carries control characters, are 422 validation_failed, for credits and debits.
func TestWalletMovementValidation(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		org := w.newOrg()
		w.credit(t, org, 100)
		before := w.state(t)
		for _, credits := range []int64{0, -1, -100, 1_000_000_000_001, 1 << 62} {
			_, err := w.wallets.Credit(ctx, org, credits, "ok")
			asProblem(t, err, problem.ValidationFailed, 422)
			_, err = w.wallets.Debit(ctx, org, credits, "ok")
			asProblem(t, err, problem.ValidationFailed, 422)
		}
		for _, reason := range []string{"", " ", "\t", "line\nbreak", "carriage\rreturn", "nul\x00byte", "esc\x1b[31m", "del\x7f", "c1\u0085", strings.Repeat("r", 501), "bad\xffutf8"} {
			_, err := w.wallets.Credit(ctx, org, 1, reason)
			asProblem(t, err, problem.ValidationFailed, 422)
			_, err = w.wallets.Debit(ctx, org, 1, reason)
			asProblem(t, err, problem.ValidationFailed, 422)
		}
		w.unchanged(t, before)
		if _, err := w.wallets.Credit(ctx, org, 1, strings.Repeat("é", 500)); err != nil {
			t.Fatalf("a reason of 500 characters: %v", err)
		}
	})
}

// TestWalletDebitNeverBelowZero: a debit above the balance is 409 insufficient_credits and changes
// nothing; a debit to exactly 0 works and the row holds 0; a debit of an organisation without a
// wallet is refused without creating one.
func TestWalletDebitNeverBelowZero(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		org := w.newOrg()
		w.credit(t, org, 10)
		before := w.state(t)
		_, err := w.wallets.Debit(ctx, org, 11, "too much")
		asProblem(t, err, problem.InsufficientCredits, 409)
		w.unchanged(t, before)
		wl, err := w.wallets.Debit(ctx, org, 4, "refund")
		if err != nil || wl.Balance != 6 || wl.OrgID != org {
			t.Fatalf("debit 4: %+v %v", wl, err)
		}
		if wl, err = w.wallets.Debit(ctx, org, 6, "all of it"); err != nil || wl.Balance != 0 {
			t.Fatalf("debit to 0: %+v %v", wl, err)
		}
		w.wantBalance(t, org, 0)
		_, err = w.wallets.Debit(ctx, org, 1, "nothing left")
		asProblem(t, err, problem.InsufficientCredits, 409)
		ls := w.ledger(t, org)
		if len(ls) != 3 || ls[1].Kind != billing.KindDebit || ls[1].Amount != 4 || ls[1].BalanceAfter != 6 || ls[1].Reason != "refund" ||
			ls[2].BalanceAfter != 0 {
			t.Fatalf("ledger %+v", ls)
		}

		empty := w.newOrg()
		_, err = w.wallets.Debit(ctx, empty, 1, "no wallet")
		asProblem(t, err, problem.InsufficientCredits, 409)
		if _, ok := w.balance(t, empty); ok {
			t.Fatal("a refused debit created a wallet")
		}
		w.clean(t, 1)
	})
}

// TestWalletGetWithoutWallet: an organisation without a wallet holds 0.
func TestWalletGetWithoutWallet(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		org := w.newOrg()
		wl, err := w.wallets.Get(context.Background(), org)
		if err != nil || wl.OrgID != org || wl.Balance != 0 || !wl.UpdatedAt.IsZero() {
			t.Fatalf("get %+v %v", wl, err)
		}
	})
}

// TestWalletConcurrentMovementsConserveTotal: concurrent credits, debits and charges on one wallet
// (PostgreSQL) never overdraw it, and the balance is the credits minus what was taken; the audit agrees.
func TestWalletConcurrentMovementsConserveTotal(t *testing.T) {
	onPostgres(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, []byte(wireExample))
		ctx := context.Background()
		org := w.newOrg()
		w.credit(t, org, 20)
		const n = 60
		var credited, taken atomic.Int64
		credited.Store(20)
		errs := make([]error, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				var err error
				switch i % 3 {
				case 0:
					if _, err = w.wallets.Credit(ctx, org, 3, "concurrent credit"); err == nil {
						credited.Add(3)
					}
				case 1:
					if _, err = w.wallets.Debit(ctx, org, 5, "concurrent debit"); err == nil {
						taken.Add(5)
					}
				case 2:
					var rc port.Receipt
					if rc, err = w.write(ctx, agentOf(org), charge(port.OpCreateThread, wire, 10), false); err == nil {
						taken.Add(rc.Price)
					}
				}
				var p *problem.Problem
				if err != nil && !(errors.As(err, &p) && p.Code == problem.InsufficientCredits) {
					errs[i] = err
				}
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("movement %d: %v", i, err)
			}
		}
		want := credited.Load() - taken.Load()
		w.wantBalance(t, org, want)
		if want < 0 {
			t.Fatalf("balance %d", want)
		}
		// Every ledger row's balance_after is a balance the wallet held: none is negative.
		for _, l := range w.ledger(t, org) {
			if l.BalanceAfter < 0 {
				t.Fatalf("ledger row %+v", l)
			}
		}
		w.clean(t, 1)
	})
}

// --- Audit ---

// TestAuditCleanAfterMixedSequence: after credits, debits, charges, refused charges, refused debits and
// rolled-back writes over several organisations, the audit checks every organisation and finds nothing.
func TestAuditCleanAfterMixedSequence(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		w.publish(t, []byte(wireExample))
		a, b, c := w.funded(t, 30), w.funded(t, 10), w.funded(t, 1)
		steps := []func() error{
			func() error { _, err := w.write(ctx, a, charge(port.OpCreateThread, wire, 10), false); return err },
			func() error { _, err := w.write(ctx, a, charge(port.OpCreateReply, wire, 4), false); return err },   // cap
			func() error { _, err := w.write(ctx, a, charge(port.OpCreateReply, wire, 5), true); return err },    // rolled back
			func() error { _, err := w.write(ctx, a, charge(port.OpCreateReply, "nope", 5), false); return err }, // version
			func() error { _, err := w.wallets.Debit(ctx, a.OrgID, 7, "refund"); return err },
			func() error { _, err := w.wallets.Debit(ctx, a.OrgID, 70, "too much"); return err },
			func() error { _, err := w.write(ctx, b, charge(port.OpCreateThread, wire, 10), false); return err },
			func() error { _, err := w.write(ctx, b, charge(port.OpVote, wire, 1), false); return err }, // insufficient
			func() error { _, err := w.write(ctx, b, charge(port.OpClearVote, wire, 0), false); return err },
			func() error { _, err := w.wallets.Credit(ctx, b.OrgID, 2, "top-up"); return err },
			func() error { _, err := w.write(ctx, b, charge(port.OpVote, wire, 1), false); return err },
			func() error { _, err := w.write(ctx, c, charge(port.OpVote, wire, 1), false); return err },
			func() error { _, err := w.write(ctx, c, charge(port.OpVote, wire, 1), false); return err }, // insufficient
		}
		for i, step := range steps {
			_ = step() // refusals are part of the sequence
			n, found := w.audit(t, "")
			if n != 3 || len(found) != 0 {
				t.Fatalf("after step %d: checked %d, found %+v", i, n, found)
			}
		}
		for org, want := range map[string]int64{a.OrgID: 30 - 10 - 7, b.OrgID: 0 + 2 - 1, c.OrgID: 0} {
			w.wantBalance(t, org, want)
			n, found := w.audit(t, org)
			if n != 1 || len(found) != 0 {
				t.Fatalf("audit of %s: %d %+v", org, n, found)
			}
		}
	})
}

// auditFinds fails unless the audit of org ("" for all) reports exactly want.
func auditFinds(t testing.TB, w *world, org string, checked int, want ...billing.Discrepancy) {
	t.Helper()
	n, found := w.audit(t, org)
	if n != checked || len(found) != len(want) {
		t.Fatalf("audit %q: checked %d (want %d), found %+v, want %+v", org, n, checked, found, want)
	}
	for i := range want {
		if found[i] != want[i] {
			t.Fatalf("audit %q: discrepancy %+v, want %+v", org, found[i], want[i])
		}
	}
}

// TestAuditFindsPlantedDiscrepancies: a balance changed behind the ledger's back, a deleted ledger row,
// and a usage event without its ledger row, are each found with the right numbers, and only for the
// organisation concerned; --org restricts the audit to one organisation.
func TestAuditFindsPlantedDiscrepancies(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		w.publish(t, []byte(wireExample))
		a, b, c := w.funded(t, 20), w.funded(t, 20), w.funded(t, 20)
		for _, p := range []port.Principal{a, b, c} {
			if _, err := w.write(ctx, p, charge(port.OpCreateReply, wire, 5), false); err != nil {
				t.Fatal(err)
			}
		}
		w.clean(t, 3)

		// a: one credit more in the wallet than in the ledger.
		if err := w.db.Exec("UPDATE billing_wallets SET balance = balance + 1 WHERE org_id = ?", a.OrgID).Error; err != nil {
			t.Fatal(err)
		}
		da := billing.Discrepancy{OrgID: a.OrgID, Balance: 16, LedgerBalance: 15, LedgerCharges: 5, UsageCharges: 5}
		// b: its charge's ledger row deleted.
		if err := w.db.Exec("DELETE FROM billing_ledger WHERE org_id = ? AND kind = ?", b.OrgID, billing.KindCharge).Error; err != nil {
			t.Fatal(err)
		}
		db := billing.Discrepancy{OrgID: b.OrgID, Balance: 15, LedgerBalance: 20, LedgerCharges: 0, UsageCharges: 5}
		// c: a usage event of 3 with no ledger row (and no debit).
		if err := w.db.Create(&billing.UsageEvent{ID: newID(), OrgID: c.OrgID, AgentID: c.AgentID, Operation: port.OpMediaUpload,
			Price: 3, PricingVersion: wire, IdempotencyKey: "planted", ResourceID: newID(), CreatedAt: t0}).Error; err != nil {
			t.Fatal(err)
		}
		dc := billing.Discrepancy{OrgID: c.OrgID, Balance: 15, LedgerBalance: 15, LedgerCharges: 5, UsageCharges: 8}

		want := []billing.Discrepancy{da, db, dc}
		// The audit reports in order of org id.
		for i := range want {
			for j := i + 1; j < len(want); j++ {
				if want[j].OrgID < want[i].OrgID {
					want[i], want[j] = want[j], want[i]
				}
			}
		}
		auditFinds(t, w, "", 3, want...)
		auditFinds(t, w, a.OrgID, 1, da)
		auditFinds(t, w, b.OrgID, 1, db)
		auditFinds(t, w, c.OrgID, 1, dc)

		// A clean organisation audited alone; one without a wallet or ledger row is checked and clean;
		// one the directory does not know is not_found.
		d := w.funded(t, 4)
		auditFinds(t, w, d.OrgID, 1)
		auditFinds(t, w, w.newOrg(), 1)
		_, _, err := w.wallets.Audit(ctx, newID())
		asProblem(t, err, problem.NotFound, 404)
		auditFinds(t, w, "", 4, want...)
	})
}

// TestAuditFindsLedgerRowWithoutWallet: a ledger credit whose wallet row vanished is a discrepancy
// (balance 0 against the ledger's).
func TestAuditFindsLedgerRowWithoutWallet(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		p := w.funded(t, 9)
		if err := w.db.Exec("DELETE FROM billing_wallets WHERE org_id = ?", p.OrgID).Error; err != nil {
			t.Fatal(err)
		}
		auditFinds(t, w, "", 1, billing.Discrepancy{OrgID: p.OrgID, Balance: 0, LedgerBalance: 9})
	})
}

// TestAuditConsistentDuringConcurrentCharges: an audit that runs while charges commit reports no
// discrepancy: it must read the wallets, the ledger and the usage events as of one moment. (Charges of
// 1 credit by 8 writers while audits run back to back.)
func TestAuditConsistentDuringConcurrentCharges(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, []byte(wireExample))
		ctx := context.Background()
		orgs := make([]string, 4)
		for i := range orgs {
			orgs[i] = w.newOrg()
			w.credit(t, orgs[i], 1_000_000_000)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := w.write(ctx, agentOf(orgs[i%len(orgs)]), charge(port.OpVote, wire, 1), false); err != nil {
						t.Errorf("charge: %v", err)
						return
					}
				}
			})
		}
		var phantom []billing.Discrepancy
		for range 150 {
			_, found, err := w.wallets.Audit(ctx, "")
			if err != nil {
				t.Error(err)
				break
			}
			if len(found) > 0 {
				phantom = found
				break
			}
		}
		close(stop)
		wg.Wait()
		w.clean(t, len(orgs)) // at rest, the data is consistent
		if phantom != nil {
			t.Fatalf("an audit during concurrent charges reported discrepancies that do not exist: %+v", phantom)
		}
	})
}
