package billing_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/write"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
)

type benchClock struct{}

func (benchClock) Now() time.Time { return time.Now().UTC() }

type benchDirectory struct{}

func (benchDirectory) OrgExists(context.Context, string) (bool, error) { return true, nil }

// BenchmarkCharge measures charges per second on PostgreSQL, each committed on its own on one
// organisation's wallet, with 1 and 8 concurrent writers: Meter.Plan run as a planned write
// (database.Write: one batch, impl=svc) against the same four statements run bare in a transaction
// (impl=baseline: read the declared version, the conditional debit returning the balance, the usage
// event, the ledger row, with the same UUIDv7 ids, one round trip each), in the same run. The baseline
// skips what the Meter does around them (the operation and grace checks, decoding the prices, the
// price and its cap) and the batch that saves its round trips: the ratio is the two together. Every
// charge is a fresh one, with its own Idempotency-Key and resource: nothing is retried or replayed.
// `make bench` prints the ratio.
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
		charge func(key, resource string) error // one fresh charge, committed
	}{
		{"impl=baseline", func(key, resource string) error {
			return db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
				now := time.Now().UTC()
				var version []map[string]any
				if err := tx.Raw(`SELECT * FROM "billing_pricing_versions" WHERE code = ? LIMIT 1`, "bench").Scan(&version).Error; err != nil || len(version) != 1 {
					return fmt.Errorf("read the version: %v (%d rows)", err, len(version))
				}
				var wallet []map[string]any
				if err := tx.Raw(`UPDATE billing_wallets SET balance = balance - ?, updated_at = ?
WHERE org_id = ? AND balance >= ? RETURNING org_id, balance, updated_at`, 1, now, org, 1).Scan(&wallet).Error; err != nil || len(wallet) != 1 {
					return fmt.Errorf("debit: %v (%d rows)", err, len(wallet))
				}
				event := newID()
				if err := tx.Exec(`INSERT INTO "billing_usage_events" ("id","org_id","agent_id","operation","price","pricing_version","idempotency_key","resource_id","created_at") VALUES (?,?,?,?,?,?,?,?,?)`,
					event, org, who.AgentID, port.OpCreateReply, 1, "bench", key, resource, now).Error; err != nil {
					return err
				}
				return tx.Exec(`INSERT INTO "billing_ledger" ("id","org_id","kind","amount","balance_after","reason","usage_event_id","created_at") VALUES (?,?,?,?,?,?,?,?)`,
					newID(), org, billing.KindCharge, 1, wallet[0]["balance"], port.OpCreateReply, event, now).Error
			})
		}},
		{"impl=svc", func(key, resource string) error {
			_, _, err := database.Write(ctx, db, func(plan *write.Plan) (int, any, error) {
				_, err := meter.Plan(ctx, plan, who, port.Charge{Operation: port.OpCreateReply,
					Billing: port.Billing{PricingVersion: "bench", MaxCreditCost: 1}, ResourceID: resource, IdempotencyKey: key})
				return http.StatusOK, struct{}{}, err
			})
			return err
		}},
	}
	for _, writers := range []int{1, 8} {
		for _, impl := range impls {
			b.Run(fmt.Sprintf("writers=%d/%s", writers, impl.name), func(b *testing.B) {
				b.ReportAllocs()
				start := time.Now()
				// one runs one fresh charge in its own transaction.
				one := func() {
					key, resource := "bench-"+newID(), newID()
					if err := impl.charge(key, resource); err != nil {
						b.Error(err)
					}
				}
				if writers == 1 {
					for i := 0; i < b.N; i++ {
						one()
					}
				} else {
					b.SetParallelism(max(1, writers/runtime.GOMAXPROCS(0)))
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							one()
						}
					})
				}
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "charges/s")
			})
		}
	}
}
