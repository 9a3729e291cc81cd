package database_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/svcforum/svc/contracts/write"

	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// planClaim is a stand-in for the guard's claim: it stores the write's outcome in a table of its own.
type planClaim struct{ settled bool }

func (c *planClaim) Complete(*gorm.DB, int, []byte) error { return errors.New("not planned") }
func (c *planClaim) CompleteIn(p *write.Plan, status int, body []byte) {
	p.Add(p.Build().Exec("INSERT INTO plan_outcomes (status, body) VALUES (?, ?)", status, p.Bytes(body)), 1, nil)
}
func (c *planClaim) Settled() { c.settled = true }

var errNoWallet = errors.New("no wallet with enough credits")

func TestPlannedWrite(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		db := dbtest.Open(t, dialect)
		for _, s := range []string{
			"CREATE TABLE plan_wallets (id VARCHAR(8) PRIMARY KEY, balance BIGINT NOT NULL)",
			"CREATE TABLE plan_posts (id VARCHAR(8) PRIMARY KEY, body TEXT NOT NULL)",
			"CREATE TABLE plan_outcomes (status INTEGER NOT NULL, body BYTEA)",
			"INSERT INTO plan_wallets (id, balance) VALUES ('w', 10)",
		} {
			if dialect == database.SQLite {
				s = strings.ReplaceAll(s, "BYTEA", "BLOB")
			}
			if err := db.Exec(s).Error; err != nil {
				t.Fatal(err)
			}
		}
		type answer struct {
			Post    string `json:"post"`
			Balance int64  `json:"balance"`
		}
		committed := 0 // Plan.OnCommit hooks run
		run := func(id string, price int64) (int, []byte, error) {
			claim := &planClaim{}
			ctx := port.WithClaim(context.Background(), claim)
			status, body, err := database.Write(ctx, db, func(p *write.Plan) (int, any, error) {
				p.OnCommit(func() { committed++ })
				var balance int64
				p.Exec(1, nil, "INSERT INTO plan_posts (id, body) VALUES (?, ?)", id, "hello")
				p.Returning(1, func(context.Context, *gorm.DB) error { return errNoWallet }, []any{&balance},
					"UPDATE plan_wallets SET balance = balance - ? WHERE id = 'w' AND balance >= ? RETURNING balance", price, price)
				late := p.Late(&balance, "SELECT balance FROM plan_wallets WHERE id = 'w'")
				return 201, answer{Post: id, Balance: late}, nil
			})
			if err == nil && !claim.settled {
				t.Error("a committed write left its claim unsettled")
			}
			return status, body, err
		}

		status, body, err := run("a", 4)
		if err != nil || status != 201 {
			t.Fatalf("write = %d, %v", status, err)
		}
		if string(body) != `{"post":"a","balance":6}`+"\n" {
			t.Errorf("answer = %s", body)
		}
		var stored []byte
		if err := db.Raw("SELECT body FROM plan_outcomes").Row().Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if string(stored) != string(body) {
			t.Errorf("stored %q, answered %q", stored, body)
		}
		if committed != 1 {
			t.Errorf("after a committed write %d commit hooks ran, want 1", committed)
		}

		// A step that finds other than it expects fails the whole plan: nothing of it is kept.
		if _, _, err := run("b", 7); !errors.Is(err, errNoWallet) {
			t.Fatalf("overdraft = %v, want the step's explanation", err)
		}
		var posts, outcomes int64
		db.Raw("SELECT count(*) FROM plan_posts").Row().Scan(&posts)
		db.Raw("SELECT count(*) FROM plan_outcomes").Row().Scan(&outcomes)
		if posts != 1 || outcomes != 1 {
			t.Errorf("after a failed plan: %d posts, %d outcomes, want 1 and 1", posts, outcomes)
		}
		if committed != 1 {
			t.Errorf("a failed plan ran its commit hooks (%d in all)", committed)
		}

		// A condition, and a refusal decided while planning, come in their order.
		first := errors.New("first")
		_, _, err = database.Write(context.Background(), db, func(p *write.Plan) (int, any, error) {
			p.Check(func(context.Context, *gorm.DB) error { return first }, "SELECT count(*) = 2 FROM plan_posts")
			p.Refuse(errors.New("second"))
			return 200, nil, nil
		})
		if !errors.Is(err, first) {
			t.Errorf("a failed condition before a refusal = %v, want the condition's", err)
		}

		// An explanation that finds nothing wrong plans the write again.
		runs := 0
		_, _, err = database.Write(context.Background(), db, func(p *write.Plan) (int, any, error) {
			runs++
			p.Check(func(context.Context, *gorm.DB) error { return nil }, "SELECT count(*) + ? = 3 FROM plan_posts", runs)
			return 200, nil, nil
		})
		if err != nil || runs != 2 {
			t.Errorf("a changed condition: %d runs, %v; want 2 runs and success", runs, err)
		}
	})
}
