package testkit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/write"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/testkit"
)

// The meter double records every call, adds its row to the caller's planned write (none when the
// write fails), refuses a price above the cap, and refuses everything when told to.
func TestMeter(t *testing.T) {
	db := dbtest.Open(t, database.SQLite)
	if err := db.AutoMigrate(&testkit.ChargeRow{}); err != nil {
		t.Fatal(err)
	}
	m := testkit.NewMeter(3)
	p := port.Principal{AgentID: "a", OrgID: "o"}
	charge := func(limit int64, rollback bool) error {
		_, _, err := database.Write(context.Background(), db, func(plan *write.Plan) (int, any, error) {
			if _, err := m.Plan(context.Background(), plan, p, port.Charge{Operation: port.OpVote, Billing: port.Billing{PricingVersion: "v", MaxCreditCost: limit}}); err != nil {
				return 0, nil, err
			}
			if rollback {
				plan.Refuse(errors.New("the write failed"))
			}
			return http.StatusOK, struct{}{}, nil
		})
		return err
	}
	rows := func() int64 {
		var n int64
		if err := db.Model(&testkit.ChargeRow{}).Count(&n).Error; err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := charge(10, false); err != nil || rows() != 1 {
		t.Fatalf("a charge: %v, %d rows", err, rows())
	}
	if err := charge(10, true); err == nil || rows() != 1 {
		t.Fatalf("a rolled-back charge: %v, %d rows", err, rows())
	}
	var pr *problem.Problem
	if err := charge(2, false); !errors.As(err, &pr) || pr.Code != problem.PriceExceedsCap || rows() != 1 {
		t.Fatalf("over the cap: %v, %d rows", err, rows())
	}
	m.Refuse(problem.New(problem.InsufficientCredits, "none"))
	if err := charge(10, false); !errors.As(err, &pr) || pr.Code != problem.InsufficientCredits || rows() != 1 {
		t.Fatalf("refused: %v, %d rows", err, rows())
	}
	// A planned charge is recorded when it is decided: the failed write's never was.
	calls := m.Calls()
	if len(calls) != 3 || !calls[2].Refused || calls[0].Refused || calls[0].Principal != p {
		t.Fatalf("calls %+v", calls)
	}
}

// The engine answers a panic with a 500 problem; the stand-in guard hands the named principal to an
// agent route, which runs with its channel and declaration recorded; Serve reads problem codes.
func TestEngine(t *testing.T) {
	e := testkit.Engine(t)
	testkit.MountPublic(t, e, plugin.Routes{Module: "kit", Plane: plugin.Public, Mount: func(r gin.IRouter) {
		r.GET("/boom", func(*gin.Context) { panic("boom") })
	}})
	testkit.MountAgent(t, e, plugin.ChannelPrivate, []gin.HandlerFunc{testkit.StandInGuard}, []plugin.AgentRoute{{
		Method: http.MethodPost, Path: "/who", Write: true,
		Handlers: []gin.HandlerFunc{func(c *gin.Context) {
			p, _ := port.PrincipalFrom(c.Request.Context())
			route, _ := plugin.Route(c)
			c.JSON(200, gin.H{"agent": p.AgentID, "org": p.OrgID, "channel": plugin.Channel(c), "write": route.Write})
		}},
	}})
	r := testkit.Serve(e, httptest.NewRequest(http.MethodGet, "/boom", nil))
	testkit.Expect(t, r, 500, string(problem.Internal))
	req := testkit.As(httptest.NewRequest(http.MethodPost, plugin.AgentPrefix+"/who", nil), port.Principal{AgentID: "ag", OrgID: "or"})
	got := testkit.Serve(e, req).JSON(t)
	if got["agent"] != "ag" || got["org"] != "or" || got["channel"] != plugin.ChannelPrivate || got["write"] != true {
		t.Fatalf("agent route: %v", got)
	}
}

func TestClock(t *testing.T) {
	c := testkit.NewClock(testkit.T0)
	c.Add(time.Hour)
	if !c.Now().Equal(testkit.T0.Add(time.Hour)) {
		t.Fatalf("%s", c.Now())
	}
	c.Set(testkit.T0)
	if !c.Now().Equal(testkit.T0) {
		t.Fatalf("%s", c.Now())
	}
}

// The directory double knows exactly the organisations added to it.
func TestDirectory(t *testing.T) {
	d := testkit.NewDirectory()
	d.Add("org-a")
	for org, want := range map[string]bool{"org-a": true, "org-b": false} {
		if got, err := d.OrgExists(context.Background(), org); err != nil || got != want {
			t.Fatalf("OrgExists(%q) = %v, %v; want %v", org, got, err, want)
		}
	}
}

func TestMain(m *testing.M) { dbtest.Main(m) }
