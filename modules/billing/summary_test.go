package billing_test

import (
	"context"
	"testing"

	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
)

// TestWalletSummary: an organisation never credited holds 0 with no lines; after movements, the
// summary has the balance and the newest lines first, at most n. On both databases.
func TestWalletSummary(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		org := w.newOrg()
		s, err := w.wallets.WalletSummary(ctx, org, 3)
		if err != nil || s.Balance != 0 || len(s.Recent) != 0 {
			t.Fatalf("never credited: %+v %v", s, err)
		}
		for i, reason := range []string{"one", "two", "three", "four"} {
			w.clock.Add(60e9)
			if _, err := w.wallets.Credit(ctx, org, int64(10*(i+1)), reason); err != nil {
				t.Fatal(err)
			}
		}
		w.clock.Add(60e9)
		if _, err := w.wallets.Debit(ctx, org, 5, "a correction"); err != nil {
			t.Fatal(err)
		}
		s, err = w.wallets.WalletSummary(ctx, org, 3)
		if err != nil || s.Balance != 95 || len(s.Recent) != 3 {
			t.Fatalf("summary: %+v %v", s, err)
		}
		if l := s.Recent[0]; l.Kind != billing.KindDebit || l.Amount != 5 || l.BalanceAfter != 95 || l.Reason != "a correction" || !l.At.Equal(t0.Add(5*60e9)) {
			t.Fatalf("newest line %+v", l)
		}
		if s.Recent[1].Reason != "four" || s.Recent[2].Reason != "three" {
			t.Fatalf("lines %+v", s.Recent)
		}
	})
}
