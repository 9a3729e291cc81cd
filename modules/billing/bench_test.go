package billing_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
)

type benchClock struct{}

func (benchClock) Now() time.Time { return time.Now().UTC() }

type benchDirectory struct{}

func (benchDirectory) OrgExists(context.Context, string) (bool, error) { return true, nil }

// BenchmarkCharge measures charges per second on PostgreSQL, each in its own transaction on one
// organisation's wallet, with 1 and 8 concurrent writers: Meter.Charge (impl=svc: read the declared
// version, conditional debit, usage event, ledger row) against the bare SQL of one conditional update
// plus one insert (impl=baseline), in the same run. `make bench` prints the ratio.
func BenchmarkCharge(b *testing.B) {
	db := dbtest.Open(b, database.Postgres, billing.Migrations())
	ctx := context.Background()
	pricing := billing.NewPricing(db, benchClock{}, schema.Published())
	if _, err := pricing.Publish(ctx, []byte(`{"pricing_version":"bench","grace_period_days":30,"per_attachment":1,
"prices":{"create_thread":10,"create_reply":1,"vote":1,"clear_vote":0,"tombstone":1,"manage_thread_attachments":2,"manage_reply_attachments":2,"media_upload":3}}`)); err != nil {
		b.Fatal(err)
	}
	org := uuid.NewString()
	if _, err := billing.NewWallets(db, benchClock{}, benchDirectory{}).Credit(ctx, org, 1_000_000_000_000, "bench"); err != nil {
		b.Fatal(err)
	}
	meter := billing.NewMeter(benchClock{})
	who := port.Principal{AgentID: uuid.NewString(), OrgID: org}

	impls := []struct {
		name   string
		charge func(tx *gorm.DB, i int) error
	}{
		{"impl=baseline", func(tx *gorm.DB, i int) error {
			res := tx.Exec("UPDATE billing_wallets SET balance = balance - 1, updated_at = ? WHERE org_id = ? AND balance >= 1", time.Now(), org)
			if res.Error != nil || res.RowsAffected != 1 {
				return fmt.Errorf("debit: %v (%d rows)", res.Error, res.RowsAffected)
			}
			return tx.Exec(`INSERT INTO billing_usage_events (id, org_id, agent_id, operation, price, pricing_version, idempotency_key, resource_id, created_at)
VALUES (?, ?, ?, ?, 1, 'bench', ?, ?, ?)`, uuid.NewString(), org, who.AgentID, port.OpCreateReply, fmt.Sprint(i), "r", time.Now()).Error
		}},
		{"impl=svc", func(tx *gorm.DB, i int) error {
			_, err := meter.Charge(ctx, tx, who, port.Charge{Operation: port.OpCreateReply,
				Billing: port.Billing{PricingVersion: "bench", MaxCreditCost: 1}, ResourceID: "r", IdempotencyKey: fmt.Sprint(i)})
			return err
		}},
	}
	for _, writers := range []int{1, 8} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("writers=%d/%s", writers, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				start := time.Now()
				one := func(i int) {
					if err := db.WithContext(ctx).Transaction(func(tx *gorm.DB) error { return impl.charge(tx, i) }); err != nil {
						b.Error(err)
					}
				}
				if writers == 1 {
					for i := 0; i < b.N; i++ {
						one(i)
					}
				} else {
					b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0)))
					b.RunParallel(func(pb *testing.PB) {
						for i := 0; pb.Next(); i++ {
							one(i)
						}
					})
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "charges/s")
			})
		}
	}
}
