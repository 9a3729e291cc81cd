package billing_test

import (
	"context"
	"testing"
	"time"

	"github.com/svcforum/svc/contracts/write"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
)

// TestFreeChargeStoresTheBalanceItAnswers (PostgreSQL, where writes run side by side): a planned free
// charge for an organisation with no wallet yet answers and stores the same balance, even when the
// operator's first credit comes while its batch runs. Its debit locks the wallet it makes, so the credit
// waits for the write's commit; before, the debit locked nothing, the credit committed in between, and
// the stored answer (read later in the batch) said 100 where the answer sent said 0.
func TestFreeChargeStoresTheBalanceItAnswers(t *testing.T) {
	onPostgres(t, func(t *testing.T, dialect string) {
		w := newWorld(t, dialect)
		w.publish(t, pricingFile("v1", 30, 0, map[string]int64{port.OpClearVote: 0}))
		org := w.newOrg()
		ctx := context.Background()
		if err := w.db.Exec(`CREATE TABLE test_stored (body bytea)`).Error; err != nil {
			t.Fatal(err)
		}
		// A gate the batch waits at, after its debit and before it stores its answer: this session
		// holds the lock, the batch asks for it.
		gate, err := w.db.DB()
		if err != nil {
			t.Fatal(err)
		}
		holder, err := gate.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer holder.Close()
		if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_lock(4711)`); err != nil {
			t.Fatal(err)
		}
		waiting := func(kind string) bool {
			var n int64
			if err := w.db.Raw(`SELECT count(*) FROM pg_locks WHERE locktype = ? AND NOT granted`, kind).Scan(&n).Error; err != nil {
				t.Error(err)
				return true
			}
			return n > 0
		}

		type result struct {
			sent []byte
			err  error
		}
		written := make(chan result, 1)
		go func() {
			_, sent, err := database.Write(ctx, w.db, func(plan *write.Plan) (int, any, error) {
				r, err := w.meter.Plan(ctx, plan, agentOf(org), charge(port.OpClearVote, "v1", 0))
				if err != nil {
					return 0, nil, err
				}
				plan.Check(nil, `SELECT true FROM (SELECT pg_advisory_xact_lock(4711)) AS gate`)
				answer := map[string]any{"balance": r.Balance}
				b, err := port.Marshal(answer)
				if err != nil {
					return 0, nil, err
				}
				plan.Exec(1, nil, `INSERT INTO test_stored (body) VALUES (?)`, plan.Bytes(b))
				return 200, answer, nil
			})
			written <- result{sent, err}
		}()
		for !waiting("advisory") { // the batch has run its debit and waits at the gate
			time.Sleep(time.Millisecond)
		}
		credited := make(chan error, 1)
		go func() {
			_, err := w.wallets.Credit(ctx, org, 100, "first credit")
			credited <- err
		}()
		// Either the credit waits for the write's wallet row, or (the defect) it committed already.
		select {
		case err := <-credited:
			credited <- err
		default:
			for !waiting("transactionid") && !waiting("tuple") && len(credited) == 0 {
				time.Sleep(time.Millisecond)
			}
		}
		if _, err := holder.ExecContext(ctx, `SELECT pg_advisory_unlock(4711)`); err != nil {
			t.Fatal(err)
		}
		res := <-written
		if res.err != nil {
			t.Fatal(res.err)
		}
		if err := <-credited; err != nil {
			t.Fatal(err)
		}
		var stored []byte
		if err := w.db.Raw(`SELECT body FROM test_stored`).Row().Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if string(stored) != string(res.sent) {
			t.Fatalf("the answer sent is %s, the answer stored for its replays is %s", res.sent, stored)
		}
		if b, _ := w.balance(t, org); b != 100 {
			t.Fatalf("balance %d after the credit, want 100", b)
		}
	})
}
