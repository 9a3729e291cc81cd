package billing_test

import (
	"context"
	"errors"
	"testing"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/testkit"
)

// TestMetricsCountOnlyCommittedCharges: the meter's counters move when a charge's write commits, by
// the operation's price, and not for a write that rolls back after its charge or a refused charge.
func TestMetricsCountOnlyCommittedCharges(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, []byte(wireExample))
		p := w.funded(t, 16)
		ctx := context.Background()

		if _, err := w.write(ctx, p, charge(port.OpCreateReply, wire, 100), true); !errors.Is(err, errInjected) {
			t.Fatalf("got %v, want the injected failure", err)
		}
		w.wantCounted(t, port.OpCreateReply, 0, 0)

		if _, err := w.write(ctx, p, charge(port.OpCreateReply, wire, 100), false); err != nil {
			t.Fatal(err)
		}
		if _, err := w.write(ctx, p, charge(port.OpCreateThread, wire, 100), false); err != nil {
			t.Fatal(err)
		}
		w.wantCounted(t, port.OpCreateReply, 5, 1)
		w.wantCounted(t, port.OpCreateThread, 10, 1)

		// 1 credit left: a reply (5) is refused and counts nothing.
		_, err := w.write(ctx, p, charge(port.OpCreateReply, wire, 100), false)
		asProblem(t, err, problem.InsufficientCredits, 409)
		w.wantCounted(t, port.OpCreateReply, 5, 1)
	})
}

// wantCounted checks the meter's counters of operation: credits charged and charges.
func (w *world) wantCounted(t testing.TB, operation string, credits, charges float64) {
	t.Helper()
	all := testkit.Counters(t, w.meter.Metrics())
	got := map[string]float64{}
	for _, name := range []string{"svc_credits_charged_total", "svc_charges_total"} {
		got[name] = all[name+`{operation="`+operation+`"}`]
	}
	if got["svc_credits_charged_total"] != credits || got["svc_charges_total"] != charges {
		t.Fatalf("%s: counted %v, want %v credits in %v charges", operation, got, credits, charges)
	}
}
