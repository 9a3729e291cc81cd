package billing_test

// Tests of Meter.Refund: a charge given back because the service failed to perform the operation
// (an upload whose processing failed through its fault, WIRE.md section 9), exactly once.

import (
	"context"
	"strings"
	"sync"
	"testing"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/modules/billing"
	"github.com/svcforum/svc/testkit"
)

// refund runs Meter.Refund in a transaction of its own, as a job that fails an upload does.
func (w *world) refund(t testing.TB, r port.Refund) (port.Receipt, bool) {
	t.Helper()
	var (
		rc       port.Receipt
		refunded bool
	)
	err := w.db.Transaction(func(tx *gorm.DB) error {
		var err error
		rc, refunded, err = w.meter.Refund(context.Background(), tx, r)
		return err
	})
	if err != nil {
		t.Fatalf("refund %+v: %v", r, err)
	}
	return rc, refunded
}

// A refunded charge's price returns to the wallet once: the refund is a usage event of kind refund
// naming the charge (the agent sees it in its usage, newest first, and its wallet's balance) and a
// ledger row of kind refund; the audit agrees. Refunding it again, in another transaction, changes
// nothing; a resource with no charge has nothing to refund.
func TestRefundGivesBackAChargeOnce(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 10)
		c := charge(port.OpMediaUpload, wire, 10)
		charged, err := w.write(context.Background(), p, c, false)
		if err != nil {
			t.Fatal(err)
		}
		w.wantBalance(t, p.OrgID, 7)

		rc, refunded := w.refund(t, port.Refund{Operation: port.OpMediaUpload, ResourceID: c.ResourceID, Reason: "processing_error"})
		if !refunded || rc.Price != 3 || rc.Balance != 10 || rc.PricingVersion != wire || rc.UsageEventID == "" {
			t.Fatalf("refund: %v %+v", refunded, rc)
		}
		w.wantBalance(t, p.OrgID, 10)
		evs := w.usage(t, p.OrgID)
		if len(evs) != 2 || evs[0].Kind != billing.KindCharge || evs[0].RefundOf != nil ||
			evs[1].ID != rc.UsageEventID || evs[1].Kind != billing.KindRefund || evs[1].RefundOf == nil ||
			*evs[1].RefundOf != charged.UsageEventID || evs[1].Price != 3 || evs[1].AgentID != p.AgentID ||
			evs[1].ResourceID != c.ResourceID || evs[1].IdempotencyKey != c.IdempotencyKey || evs[1].Operation != port.OpMediaUpload {
			t.Fatalf("usage %+v", evs)
		}
		ls := w.ledger(t, p.OrgID)
		last := ls[len(ls)-1]
		if len(ls) != 3 || last.Kind != billing.KindRefund || last.Amount != 3 || last.BalanceAfter != 10 ||
			last.UsageEventID == nil || *last.UsageEventID != rc.UsageEventID || !strings.Contains(last.Reason, "processing_error") {
			t.Fatalf("ledger %+v", ls)
		}
		w.clean(t, 1)

		// The agent's own view: the refund first (newest), then its charge; the wallet is whole again.
		r := w.agentGet(p, "/usage")
		testkit.Valid(t, "usage-response", r.Body)
		var usage billing.UsageResponse
		r.Decode(t, &usage)
		if len(usage.Events) != 2 || usage.Events[0].Kind != "refund" || usage.Events[0].RefundOf == nil ||
			*usage.Events[0].RefundOf != charged.UsageEventID || usage.Events[0].Price != 3 ||
			usage.Events[1].Kind != "charge" || usage.Events[1].RefundOf != nil {
			t.Fatalf("usage as the agent reads it: %s", r.Body)
		}
		if r := w.agentGet(p, "/wallet"); r.JSON(t)["balance"] != float64(10) {
			t.Fatalf("wallet: %s", r.Body)
		}

		// Again: nothing more, whatever the reason given.
		before := w.state(t)
		for _, reason := range []string{"processing_error", "storage_unavailable"} {
			if _, refunded := w.refund(t, port.Refund{Operation: port.OpMediaUpload, ResourceID: c.ResourceID, Reason: reason}); refunded {
				t.Fatal("a charge was refunded twice")
			}
		}
		w.unchanged(t, before)

		// No such charge: of another resource, or of another operation for this one.
		for _, r := range []port.Refund{{Operation: port.OpMediaUpload, ResourceID: newID()}, {Operation: port.OpCreateThread, ResourceID: c.ResourceID}} {
			if _, refunded := w.refund(t, r); refunded {
				t.Fatalf("%+v refunded a charge it does not name", r)
			}
		}
		w.unchanged(t, before)
	})
}

// A refund made in a transaction that rolls back leaves nothing, and the charge can still be refunded.
func TestRefundRolledBackWithItsTransaction(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 10)
		c := charge(port.OpMediaUpload, wire, 10)
		if _, err := w.write(context.Background(), p, c, false); err != nil {
			t.Fatal(err)
		}
		before := w.state(t)
		err := w.db.Transaction(func(tx *gorm.DB) error {
			if _, refunded, err := w.meter.Refund(context.Background(), tx, port.Refund{Operation: port.OpMediaUpload, ResourceID: c.ResourceID}); err != nil || !refunded {
				t.Fatalf("refund: %v %v", refunded, err)
			}
			return errInjected
		})
		if err != errInjected {
			t.Fatalf("transaction: %v", err)
		}
		w.unchanged(t, before)
		if _, refunded := w.refund(t, port.Refund{Operation: port.OpMediaUpload, ResourceID: c.ResourceID}); !refunded {
			t.Fatal("the charge was not refunded after a refund that rolled back")
		}
		w.wantBalance(t, p.OrgID, 10)
		w.clean(t, 1)
	})
}

// Refunds of one charge racing in separate transactions (a job retried while its first attempt still
// commits) give it back once: the refunded charge is a unique key.
func TestRefundConcurrentOnce(t *testing.T) {
	each(t, func(t *testing.T, w *world) {
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 10)
		c := charge(port.OpMediaUpload, wire, 10)
		if _, err := w.write(context.Background(), p, c, false); err != nil {
			t.Fatal(err)
		}
		const n = 8
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			made  int
			fails []error
		)
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var refunded bool
				err := w.db.Transaction(func(tx *gorm.DB) error {
					var err error
					_, refunded, err = w.meter.Refund(context.Background(), tx, port.Refund{Operation: port.OpMediaUpload, ResourceID: c.ResourceID})
					return err
				})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fails = append(fails, err)
				} else if refunded {
					made++
				}
			}()
		}
		wg.Wait()
		// SQLite may refuse a writer that waited too long (busy): such a refund did nothing.
		if made != 1 {
			t.Fatalf("%d of %d concurrent refunds gave the charge back (errors: %v)", made, n, fails)
		}
		w.wantBalance(t, p.OrgID, 10)
		w.clean(t, 1)
	})
}
