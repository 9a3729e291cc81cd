package billing_test

// Tests of what billing gives a deployment that has none (svc admin seed) and of grants (port.Grants),
// the welcome grant's path: a credit keyed once.

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
)

// The built-in example is the repository's example file, byte for byte.
func TestExamplePricingIsTheExampleFile(t *testing.T) {
	raw, err := os.ReadFile("examples/pricing.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(billing.ExamplePricing()) != string(raw) {
		t.Fatalf("the built-in example differs from %s", billing.ExampleFile)
	}
}

// Seeding publishes the example when no version was ever published, then never again: a second run,
// and a run on a deployment whose operator published its own version, change nothing.
func TestSeedPublishesTheExampleOnce(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		ctx := context.Background()
		got, err := w.pricing.SeedPricing(ctx)
		if err != nil || !got.Changed || !strings.Contains(got.Detail, "2026-11") {
			t.Fatalf("first seed: %+v %v", got, err)
		}
		vs, err := w.pricing.List(ctx)
		if err != nil || len(vs) != 1 || vs[0].PricingVersion != "2026-11" || !vs[0].Current || vs[0].Prices["create_reply"] != 5 {
			t.Fatalf("after the seed: %+v %v", vs, err)
		}
		again, err := w.pricing.SeedPricing(ctx)
		if err != nil || again.Changed || !strings.Contains(again.Detail, "2026-11") {
			t.Fatalf("second seed: %+v %v", again, err)
		}
		if vs, _ := w.pricing.List(ctx); len(vs) != 1 {
			t.Fatalf("the second seed published: %+v", vs)
		}

		other := newWorld(t, dialect)
		other.publish(t, pricingFile("operator-1", 7, 0, nil))
		if got, err := other.pricing.SeedPricing(ctx); err != nil || got.Changed || !strings.Contains(got.Detail, "operator-1") {
			t.Fatalf("seed after the operator's version: %+v %v", got, err)
		}
	})
}

// grant runs a grant in a transaction of its own.
func (w *world) grant(t testing.TB, g port.Grant) (int64, bool, error) {
	t.Helper()
	var (
		balance int64
		granted bool
	)
	err := w.db.Transaction(func(tx *gorm.DB) error {
		var err error
		balance, granted, err = w.wallets.Grant(context.Background(), tx, g)
		return err
	})
	return balance, granted, err
}

// A grant is a credit of the ledger, like the operator's, written once per key whatever the number of
// transactions; one that rolls back with its write leaves nothing, and its key stays free.
func TestGrantCreditsOncePerKey(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		org := w.newOrg()
		g := port.Grant{OrgID: org, Credits: 100, Reason: "welcome grant: test", Key: "test:welcome:" + newID()}

		// Rolled back with its write: nothing.
		rollback := errors.New("the write failed")
		err := w.db.Transaction(func(tx *gorm.DB) error {
			if _, granted, err := w.wallets.Grant(context.Background(), tx, g); err != nil || !granted {
				t.Fatalf("grant in a failing write: %v %v", granted, err)
			}
			return rollback
		})
		if !errors.Is(err, rollback) {
			t.Fatal(err)
		}
		if _, ok := w.balance(t, org); ok || len(w.ledger(t, org)) != 0 {
			t.Fatalf("a rolled-back grant left a wallet or a ledger entry: %+v", w.ledger(t, org))
		}

		balance, granted, err := w.grant(t, g)
		if err != nil || !granted || balance != 100 {
			t.Fatalf("grant: %d %v %v", balance, granted, err)
		}
		w.credit(t, org, 5)
		balance, granted, err = w.grant(t, g)
		if err != nil || granted || balance != 105 {
			t.Fatalf("the same grant again: %d %v %v", balance, granted, err)
		}
		w.wantBalance(t, org, 105)
		ls := w.ledger(t, org)
		if len(ls) != 2 || ls[0].Kind != billing.KindCredit || ls[0].Amount != 100 || ls[0].BalanceAfter != 100 ||
			ls[0].Reason != g.Reason || ls[0].GrantKey == nil || *ls[0].GrantKey != g.Key || ls[1].GrantKey != nil {
			t.Fatalf("ledger %+v", ls)
		}
		w.clean(t, 1)

		// Another key grants again; a bad grant is refused.
		if balance, granted, err := w.grant(t, port.Grant{OrgID: org, Credits: 1, Reason: "another", Key: "test:other"}); err != nil || !granted || balance != 106 {
			t.Fatalf("another key: %d %v %v", balance, granted, err)
		}
		var p *problem.Problem
		if _, _, err := w.grant(t, port.Grant{OrgID: org, Credits: 0, Reason: "none", Key: "test:zero"}); !errors.As(err, &p) || p.Code != problem.ValidationFailed {
			t.Fatalf("a grant of 0 credits: %v", err)
		}
	})
}
