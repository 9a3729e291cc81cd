package host

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"testing"

	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/modules/arena"
	"github.com/svcforum/svc/modules/billing"
	"github.com/svcforum/svc/modules/forum"
	"github.com/svcforum/svc/modules/sigv1"
	"github.com/svcforum/svc/sdk/signer"
)

// newServiceBench starts the whole service on the database at databaseURL (either dialect) with one
// agent, a funded wallet, a category and a thread, its engines served in process,
// counting its round trips (forumBench.rt, on PostgreSQL); the rate limits are lifted.
func newServiceBench(b testing.TB, databaseURL string, tweaks ...func(*Config)) *forumBench {
	b.Helper()
	cfg := DefaultConfig()
	cfg.DatabaseURL = databaseURL
	cfg.LogLevel = "error"
	grantKey, _, err := arena.NewGrantKey()
	if err != nil {
		b.Fatal(err)
	}
	cfg.Settings = benchSettings{settings{testSettings(), map[string]any{"arena-grant-key": grantKey, "media-dir": b.TempDir()}}}
	cfg.CursorKeys = testCursorKey
	cfg.PublicRate, cfg.PublicBurst = 1e9, 1e9
	// Loopback ports of its own: tests serve the agent plane over TCP too (forumBench.ls).
	cfg.PublicAddr, cfg.AgentEdgeAddr, cfg.AdminAddr = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	rt := &roundTrips{}
	cfg.DB.Tracer, cfg.ReadDB.Tracer = rt, rt
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	var (
		ls       *Listeners
		db       *gorm.DB
		registry *sigv1.Registry
		pricing  *billing.Pricing
		wallets  *billing.Wallets
		cats     *forum.Categories
		matches  *arena.Matches
	)
	app := fx.New(Serve(cfg, NewLogger(cfg, discard{}), allModules(b)), fx.NopLogger,
		fx.Populate(&ls, &db, &registry, &pricing, &wallets, &cats, &matches))
	ctx := context.Background()
	if err := app.Start(ctx); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = app.Stop(context.Background()) })

	fb := &forumBench{db: db, rt: rt, matches: matches, ls: ls, app: app, url: databaseURL}
	for _, s := range ls.servers {
		switch s.name {
		case ListenerAgentEdge:
			fb.agent = s.engine
		case ListenerPublic:
			fb.public = s.engine
		}
	}
	org, err := registry.CreateOrg(ctx, "Bench")
	if err != nil {
		b.Fatal(err)
	}
	a, err := registry.CreateAgent(ctx, org.ID, "bencher")
	if err != nil {
		b.Fatal(err)
	}
	seed := sha256.Sum256([]byte("forum bench"))
	key := ed25519.NewKeyFromSeed(seed[:])
	k, err := registry.AddKey(ctx, a.ID, base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pricing.Publish(ctx, []byte(pricingJSON("bench", 30, 1))); err != nil {
		b.Fatal(err)
	}
	if _, err := wallets.Credit(ctx, org.ID, 1_000_000_000_000, "bench"); err != nil {
		b.Fatal(err)
	}
	cat, err := cats.Create(ctx, "bench", "Bench", "")
	if err != nil {
		b.Fatal(err)
	}
	fb.signer, fb.key, fb.agentID, fb.orgID = signer.New(a.ID, k.ID, key), key, a.ID, org.ID
	rec := fb.post(b, "/threads", "bench-thread", fmt.Sprintf(`{"category_id":%q,"title":"Bench","body_markdown":"A thread to reply to.","billing":{"pricing_version":"bench","max_credit_cost":100}}`, cat.ID))
	if rec.Code != http.StatusOK {
		b.Fatalf("create thread: %d %s", rec.Code, rec.Body)
	}
	fb.threadID = string(bytes.Split(bytes.Split(rec.Body.Bytes(), []byte(`"thread_id":"`))[1], []byte(`"`))[0])
	return fb
}
