package billing_test

// Tests of the Meter: a charge inside the caller's write transaction, its refusals, and concurrency
// (WIRE.md section 3; reliability.md section 8 scenarios 21 to 24).

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/modules/billing"
)

const wire = "2026-11" // the code of wireExample

// TestChargeBalanceEqualToPriceEndsAtZero (scenario 22): a balance equal to the price pays it and the
// row holds exactly 0; the receipt, the usage event and the ledger row agree.
func TestChargeBalanceEqualToPriceEndsAtZero(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 10)
		c := charge(port.OpCreateThread, wire, 10)
		rc, err := w.write(context.Background(), p, c, false)
		if err != nil {
			t.Fatal(err)
		}
		if rc.Price != 10 || rc.Balance != 0 || rc.PricingVersion != wire || rc.UsageEventID == "" {
			t.Fatalf("receipt %+v", rc)
		}
		w.wantBalance(t, p.OrgID, 0)
		evs := w.usage(t, p.OrgID)
		if len(evs) != 1 || evs[0].ID != rc.UsageEventID {
			t.Fatalf("usage %+v", evs)
		}
		ls := w.ledger(t, p.OrgID)
		if len(ls) != 2 || ls[1].Kind != billing.KindCharge || ls[1].Amount != 10 || ls[1].BalanceAfter != 0 {
			t.Fatalf("ledger %+v", ls)
		}
		w.clean(t, 1)

		// Nothing is left for the next one, at any price above 0.
		before := w.state(t)
		_, err = w.write(context.Background(), p, charge(port.OpVote, wire, 10), false)
		asProblem(t, err, problem.InsufficientCredits, 409)
		w.unchanged(t, before)
	})
}

// TestChargeBalanceOneBelowPriceRefused (scenario 22): balance == price - 1 is 409
// insufficient_credits; balance, usage, ledger and the write are unchanged, and the same charge
// succeeds after a top-up.
func TestChargeBalanceOneBelowPriceRefused(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 4)
		before := w.state(t)
		c := charge(port.OpCreateReply, wire, 100)
		_, err := w.write(context.Background(), p, c, false)
		pr := asProblem(t, err, problem.InsufficientCredits, 409)
		if v, ok := pr.Extensions["effective_price"]; ok && v != int64(5) {
			t.Fatalf("effective_price %v", v)
		}
		w.unchanged(t, before)
		w.wantBalance(t, p.OrgID, 4)

		// No wallet at all holds 0.
		q := w.funded(t, 0)
		_, err = w.write(context.Background(), q, charge(port.OpVote, wire, 1), false)
		asProblem(t, err, problem.InsufficientCredits, 409)
		w.unchanged(t, before)
		if _, ok := w.balance(t, q.OrgID); ok {
			t.Fatal("a refused charge created a wallet")
		}

		w.credit(t, p.OrgID, 1)
		rc, err := w.write(context.Background(), p, c, false)
		if err != nil || rc.Balance != 0 {
			t.Fatalf("after a top-up: %+v %v", rc, err)
		}
		w.clean(t, 1)
	})
}

// TestChargeConcurrentNeverOverdraws (scenario 21): 20 concurrent cost-1 charges, by 20 agents of one
// organisation, each in its own transaction, against a 10-credit wallet: exactly 10 succeed, the others
// are insufficient_credits, the balance ends at 0, and there are 10 usage events and 10 writes.
func TestChargeConcurrentNeverOverdraws(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		org := w.newOrg()
		w.credit(t, org, 10)
		const n = 20
		errs := make([]error, n)
		receipts := make([]port.Receipt, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				receipts[i], errs[i] = w.write(context.Background(), agentOf(org), charge(port.OpVote, wire, 1), false)
			})
		}
		close(start)
		wg.Wait()
		ok, refused := 0, 0
		seen := map[int64]bool{}
		for i, err := range errs {
			var p *problem.Problem
			switch {
			case err == nil:
				ok++
				if receipts[i].Balance < 0 || receipts[i].Balance > 9 || seen[receipts[i].Balance] {
					t.Errorf("charge %d: balance after %d (seen before: %v)", i, receipts[i].Balance, seen[receipts[i].Balance])
				}
				seen[receipts[i].Balance] = true
			case errors.As(err, &p) && p.Code == problem.InsufficientCredits:
				refused++
			default:
				t.Errorf("charge %d: %v", i, err)
			}
		}
		if ok != 10 || refused != 10 {
			t.Fatalf("%d succeeded, %d refused; want 10 and 10", ok, refused)
		}
		w.wantBalance(t, org, 0)
		if evs := w.usage(t, org); len(evs) != 10 {
			t.Fatalf("%d usage events, want 10", len(evs))
		}
		if s := w.state(t); s.Writes != 10 || s.Ledger != 11 {
			t.Fatalf("state %+v", s)
		}
		w.clean(t, 1)
	})
}

// TestChargeConcurrentMixedPrices: on PostgreSQL, 40 concurrent charges of mixed prices against a
// 50-credit wallet never overdraw it, and what remains is exactly the credit minus the charges made.
func TestChargeConcurrentMixedPrices(t *testing.T) {
	eachOnPostgres(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		org := w.newOrg()
		w.credit(t, org, 50)
		ops := []string{port.OpCreateThread, port.OpCreateReply, port.OpVote, port.OpMediaUpload, port.OpClearVote}
		const n = 40
		errs := make([]error, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = w.write(context.Background(), agentOf(org), charge(ops[i%len(ops)], wire, 10), false)
			})
		}
		close(start)
		wg.Wait()
		var spent int64
		for _, ev := range w.usage(t, org) {
			spent += ev.Price
		}
		for i, err := range errs {
			var p *problem.Problem
			if err != nil && !(errors.As(err, &p) && p.Code == problem.InsufficientCredits) {
				t.Errorf("charge %d: %v", i, err)
			}
		}
		b, _ := w.balance(t, org)
		if b < 0 || b != 50-spent {
			t.Fatalf("balance %d, spent %d of 50", b, spent)
		}
		w.clean(t, 1)
	})
}

// TestChargeRolledBackWithItsWrite (scenario 24): a failure after the charge and before the commit
// commits nothing (balance, usage, ledger, write); a retry of the same charge then succeeds, once.
func TestChargeRolledBackWithItsWrite(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 5)
		c := charge(port.OpCreateReply, wire, 5)
		before := w.state(t)
		if _, err := w.write(context.Background(), p, c, true); !errors.Is(err, errInjected) {
			t.Fatalf("got %v, want the injected failure", err)
		}
		w.unchanged(t, before)

		rc, err := w.write(context.Background(), p, c, false)
		if err != nil || rc.Price != 5 || rc.Balance != 0 {
			t.Fatalf("retry: %+v %v", rc, err)
		}
		w.wantBalance(t, p.OrgID, 0)
		if s := w.state(t); s.Usage != 1 || s.Writes != 1 || s.Ledger != 2 {
			t.Fatalf("state %+v", s)
		}
		_, err = w.write(context.Background(), p, c, false)
		asProblem(t, err, problem.InsufficientCredits, 409)
		w.clean(t, 1)
	})
}

// TestChargeCapOneBelowPriceRefused (scenario 23): a cap one below the effective price is 409
// price_exceeds_cap carrying effective_price, and changes nothing; a cap equal to the price passes.
func TestChargeCapOneBelowPriceRefused(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 100)
		before := w.state(t)
		c := charge(port.OpCreateThread, wire, 9)
		_, err := w.write(context.Background(), p, c, false)
		pr := asProblem(t, err, problem.PriceExceedsCap, 409)
		if pr.Extensions["effective_price"] != int64(10) {
			t.Fatalf("effective_price %#v", pr.Extensions["effective_price"])
		}
		w.unchanged(t, before)

		// With attachments the cap applies to the effective price: 2 + 3 x 1.
		ca := charge(port.OpManageThreadAttachments, wire, 4)
		ca.Attachments = 3
		_, err = w.write(context.Background(), p, ca, false)
		pr = asProblem(t, err, problem.PriceExceedsCap, 409)
		if pr.Extensions["effective_price"] != int64(5) {
			t.Fatalf("effective_price %#v", pr.Extensions["effective_price"])
		}
		w.unchanged(t, before)

		// A cap of 0 on a priced operation, and a negative cap.
		for _, limit := range []int64{0, -1} {
			_, err = w.write(context.Background(), p, charge(port.OpVote, wire, limit), false)
			asProblem(t, err, problem.PriceExceedsCap, 409)
		}
		w.unchanged(t, before)

		// The corrected cap, equal to the price.
		c.Billing.MaxCreditCost = 10
		rc, err := w.write(context.Background(), p, c, false)
		if err != nil || rc.Price != 10 || rc.Balance != 90 {
			t.Fatalf("cap == price: %+v %v", rc, err)
		}
		ca.Billing.MaxCreditCost = 5
		if rc, err = w.write(context.Background(), p, ca, false); err != nil || rc.Price != 5 || rc.Balance != 85 {
			t.Fatalf("cap == effective price: %+v %v", rc, err)
		}
		w.clean(t, 1)
	})
}

// TestChargeCapCheckedBeforeBalance: a request over its cap is price_exceeds_cap even when the wallet
// could not pay either (the agent's own mistake is named first).
func TestChargeCapCheckedBeforeBalance(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 1)
		_, err := w.write(context.Background(), p, charge(port.OpCreateThread, wire, 3), false)
		asProblem(t, err, problem.PriceExceedsCap, 409)
	})
}

// TestChargePricingVersionNotAccepted: an unknown version, and a superseded one past its grace period,
// are 409 pricing_version_not_accepted naming the current version; nothing is charged. Before any
// publication the current version is null.
func TestChargePricingVersionNotAccepted(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		p := w.funded(t, 100)
		before := w.state(t)
		_, err := w.write(ctx, p, charge(port.OpVote, "v1", 10), false)
		pr := asProblem(t, err, problem.PricingVersionNotAccepted, 409)
		if v, ok := pr.Extensions["current_pricing_version"]; !ok || v != nil {
			t.Fatalf("before any publication: current_pricing_version %#v (present: %v)", v, ok)
		}

		w.publish(t, pricingFile("v1", 1, 0, nil))
		w.clock.Add(time.Hour)
		w.publish(t, pricingFile("v2", 1, 0, nil))
		for _, code := range []string{"nope", "", "V2", "v2 ", "2026-11"} {
			_, err = w.write(ctx, p, charge(port.OpVote, code, 10), false)
			pr = asProblem(t, err, problem.PricingVersionNotAccepted, 409)
			if pr.Extensions["current_pricing_version"] != "v2" {
				t.Fatalf("%q: current_pricing_version %#v", code, pr.Extensions["current_pricing_version"])
			}
		}
		w.clock.Add(24 * time.Hour)
		_, err = w.write(ctx, p, charge(port.OpVote, "v1", 10), false)
		pr = asProblem(t, err, problem.PricingVersionNotAccepted, 409)
		if pr.Extensions["current_pricing_version"] != "v2" {
			t.Fatalf("expired: current_pricing_version %#v", pr.Extensions["current_pricing_version"])
		}
		w.unchanged(t, before)
		if _, err := w.write(ctx, p, charge(port.OpVote, "v2", 10), false); err != nil {
			t.Fatalf("current version: %v", err)
		}
	})
}

// TestChargeSupersededInGraceAtItsOwnPrices: a version inside its grace period is charged at its own
// prices, the current one at its own.
func TestChargeSupersededInGraceAtItsOwnPrices(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		ctx := context.Background()
		w.publish(t, pricingFile("v1", 30, 1, map[string]int64{port.OpCreateReply: 5}))
		w.clock.Add(time.Hour)
		w.publish(t, pricingFile("v2", 30, 4, map[string]int64{port.OpCreateReply: 7}))
		w.clock.Add(29 * 24 * time.Hour)
		p := w.funded(t, 100)
		rc, err := w.write(ctx, p, charge(port.OpCreateReply, "v1", 5), false)
		if err != nil || rc.Price != 5 || rc.PricingVersion != "v1" || rc.Balance != 95 {
			t.Fatalf("v1: %+v %v", rc, err)
		}
		c := charge(port.OpCreateReply, "v1", 7)
		c.Attachments = 2
		if rc, err = w.write(ctx, p, c, false); err != nil || rc.Price != 7 || rc.PricingVersion != "v1" {
			t.Fatalf("v1 with 2 attachments: %+v %v", rc, err)
		}
		if rc, err = w.write(ctx, p, charge(port.OpCreateReply, "v2", 7), false); err != nil || rc.Price != 7 || rc.PricingVersion != "v2" {
			t.Fatalf("v2: %+v %v", rc, err)
		}
		c = charge(port.OpCreateReply, "v2", 15)
		c.Attachments = 2
		if rc, err = w.write(ctx, p, c, false); err != nil || rc.Price != 15 || rc.Balance != 100-5-7-7-15 {
			t.Fatalf("v2 with 2 attachments: %+v %v", rc, err)
		}
		evs := w.usage(t, p.OrgID)
		want := []struct {
			v     string
			price int64
		}{{"v1", 5}, {"v1", 7}, {"v2", 7}, {"v2", 15}}
		if len(evs) != len(want) {
			t.Fatalf("usage %+v", evs)
		}
		for i, ev := range evs {
			if ev.PricingVersion != want[i].v || ev.Price != want[i].price {
				t.Fatalf("event %d: %+v, want %+v", i, ev, want[i])
			}
		}
		w.clean(t, 1)
	})
}

// TestChargePerAttachment: each attachment adds the version's per_attachment to the operation's price.
func TestChargePerAttachment(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, pricingFile("v1", 1, 3, map[string]int64{port.OpCreateThread: 10, port.OpManageReplyAttachments: 0}))
		p := w.funded(t, 1000)
		for _, c := range []struct {
			op          string
			attachments int
			want        int64
		}{
			{port.OpCreateThread, 0, 10},
			{port.OpCreateThread, 1, 13},
			{port.OpCreateThread, 4, 22},
			{port.OpManageReplyAttachments, 2, 6},
		} {
			ch := charge(c.op, "v1", c.want)
			ch.Attachments = c.attachments
			rc, err := w.write(context.Background(), p, ch, false)
			if err != nil || rc.Price != c.want {
				t.Fatalf("%s with %d attachments: %+v %v, want %d", c.op, c.attachments, rc, err, c.want)
			}
		}
		w.wantBalance(t, p.OrgID, 1000-10-13-22-6)
		w.clean(t, 1)
	})
}

// TestChargeNegativeAttachmentsRefused: a negative attachment count, or one whose surcharge overflows
// int64, is the caller's bug: an error, never a price below the operation's, let alone a negative
// price that turns the charge into a credit.
func TestChargeNegativeAttachmentsRefused(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		w.publish(t, pricingFile("big", 30, 1_000_000_000_000, nil))
		p := w.funded(t, 10)
		before := w.state(t)
		for _, c := range []struct {
			version     string
			attachments int
		}{
			{wire, -5},         // 1 + (-5) x 1 = -4
			{"big", 9_300_000}, // 1 + 9.3e6 x 1e12 wraps to about -9.1e18
		} {
			ch := charge(port.OpVote, c.version, 10)
			ch.Attachments = c.attachments
			rc, err := w.write(context.Background(), p, ch, false)
			if err == nil {
				b, _ := w.balance(t, p.OrgID)
				t.Fatalf("a charge with %d attachments under %s succeeded: %+v; the balance went from 10 to %d", c.attachments, c.version, rc, b)
			}
			var pr *problem.Problem
			if errors.As(err, &pr) && pr.Code != problem.PriceExceedsCap {
				t.Fatalf("%d attachments: %v", c.attachments, err)
			}
			w.unchanged(t, before)
		}
	})
}

// TestChargeFreeOperationNeedsNoWallet: a zero-price operation (clear_vote in the WIRE example)
// succeeds without a wallet row (a planned one makes it, empty, so that its debit locks a row) and
// records a usage event of price 0; with a wallet it leaves the balance as it was.
func TestChargeFreeOperationNeedsNoWallet(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 0)
		rc, err := w.write(context.Background(), p, charge(port.OpClearVote, wire, 0), false)
		if err != nil || rc.Price != 0 || rc.Balance != 0 {
			t.Fatalf("free without a wallet: %+v %v", rc, err)
		}
		if b, ok := w.balance(t, p.OrgID); ok && b != 0 {
			t.Fatalf("a free charge made a wallet of %d credits", b)
		}
		if evs := w.usage(t, p.OrgID); len(evs) != 1 || evs[0].Price != 0 || evs[0].Operation != port.OpClearVote {
			t.Fatalf("usage %+v", evs)
		}
		q := w.funded(t, 3)
		if rc, err = w.write(context.Background(), q, charge(port.OpClearVote, wire, 0), false); err != nil || rc.Balance != 3 {
			t.Fatalf("free with a wallet: %+v %v", rc, err)
		}
		w.wantBalance(t, q.OrgID, 3)
		n, found := w.audit(t, "")
		if len(found) != 0 || n < 1 {
			t.Fatalf("audit %d %+v", n, found)
		}
	})
}

// TestChargeUnknownOperationIsError: an operation outside the list is the caller's bug: an error that
// is not a problem, and nothing is written.
func TestChargeUnknownOperationIsError(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 10)
		before := w.state(t)
		for _, op := range []string{"report", "", "Vote", "vote "} {
			_, err := w.write(context.Background(), p, charge(op, wire, 10), false)
			var pr *problem.Problem
			if err == nil || errors.As(err, &pr) {
				t.Fatalf("%q: got %v, want a plain error", op, err)
			}
		}
		w.unchanged(t, before)
	})
}

// TestChargeRecordsUsageEventAndLedger: the usage event records operation, price, pricing version,
// agent, organisation, idempotency key, resource id and time; the ledger row points at it, and its
// balance_after is the balance left.
func TestChargeRecordsUsageEventAndLedger(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 20)
		w.clock.Add(90 * time.Minute)
		at := w.clock.Now()
		c := charge(port.OpMediaUpload, wire, 3)
		rc, err := w.write(context.Background(), p, c, false)
		if err != nil {
			t.Fatal(err)
		}
		evs := w.usage(t, p.OrgID)
		if len(evs) != 1 {
			t.Fatalf("usage %+v", evs)
		}
		ev := evs[0]
		if ev.ID != rc.UsageEventID || ev.OrgID != p.OrgID || ev.AgentID != p.AgentID || ev.Operation != port.OpMediaUpload ||
			ev.Price != 3 || ev.PricingVersion != wire || ev.IdempotencyKey != c.IdempotencyKey ||
			ev.ResourceID != c.ResourceID || !ev.CreatedAt.Equal(at) {
			t.Fatalf("usage event %+v for %+v at %s", ev, c, at)
		}
		ls := w.ledger(t, p.OrgID)
		if len(ls) != 2 {
			t.Fatalf("ledger %+v", ls)
		}
		l := ls[1]
		if l.Kind != billing.KindCharge || l.Amount != 3 || l.BalanceAfter != 17 || l.UsageEventID == nil ||
			*l.UsageEventID != ev.ID || !l.CreatedAt.Equal(at) || rc.Balance != 17 {
			t.Fatalf("ledger row %+v, receipt %+v", l, rc)
		}
		w.wantBalance(t, p.OrgID, 17)
	})
}

// TestPlanVersionPublishedWhilePlanning: a charge planned against a version not yet published never
// commits unpriced, even when the version is published before the plan runs: the plan fails at the
// charge, the explanation finds the version accepted, and the write is planned again, priced. On
// PostgreSQL only: SQLite plans a write in the writer's turn (database.Write), so nothing can be
// published between the plan and its run there.
func TestPlanVersionPublishedWhilePlanning(t *testing.T) {
	w := newWorld(t, database.Postgres)
	p := w.funded(t, 20)
	c := charge(port.OpCreateThread, wire, 10)
	plans := 0
	_, body, err := database.Write(context.Background(), w.db, func(plan *write.Plan) (int, any, error) {
		plans++
		r, err := w.meter.Plan(context.Background(), plan, p, c)
		if err != nil {
			return 0, nil, err
		}
		if plans == 1 {
			w.publish(t, []byte(wireExample)) // after the meter looked, before the plan runs
		}
		return 200, map[string]any{"price": r.Price, "balance": r.Balance}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if plans != 2 || string(body) != `{"balance":10,"price":10}`+"\n" {
		t.Fatalf("%d plans, answer %s; want 2 plans and the priced charge", plans, body)
	}
	w.wantBalance(t, p.OrgID, 10)
	if evs := w.usage(t, p.OrgID); len(evs) != 1 || evs[0].Price != 10 {
		t.Fatalf("usage %+v", evs)
	}
}
