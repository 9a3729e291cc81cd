package host

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"
	"go.uber.org/fx"
	"gorm.io/gorm"

	"github.com/svcforum/svc/contracts/plugin"
	"github.com/svcforum/svc/contracts/port"
	"github.com/svcforum/svc/contracts/problem"
	"github.com/svcforum/svc/contracts/render"
	"github.com/svcforum/svc/contracts/schema"
	"github.com/svcforum/svc/contracts/write"
	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
	"github.com/svcforum/svc/modules/billing"
	"github.com/svcforum/svc/sdk/signer"
)

// wirePricing is the pricing file of WIRE.md section 8.
const wirePricing = `{"pricing_version": "2026-11", "grace_period_days": 30, "per_attachment": 1,
 "prices": {"create_thread": 10, "create_reply": 5, "vote": 1, "clear_vote": 0, "tombstone": 1,
            "manage_thread_attachments": 2, "manage_reply_attachments": 2, "media_upload": 3}}`

// pricingJSON is a complete pricing file with create_reply at createReply credits.
func pricingJSON(version string, graceDays int, createReply int64) string {
	return fmt.Sprintf(`{"pricing_version": %q, "grace_period_days": %d, "per_attachment": 1,
 "prices": {"create_thread": 10, "create_reply": %d, "vote": 1, "clear_vote": 0, "tombstone": 1,
            "manage_thread_attachments": 2, "manage_reply_attachments": 2, "media_upload": 3}}`, version, graceDays, createReply)
}

// writeFile writes content to a new file of the test and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// publish publishes a pricing file with svc admin and checks its answer.
func publish(t *testing.T, env map[string]string, content string) {
	t.Helper()
	var f struct {
		PricingVersion string `json:"pricing_version"`
	}
	if err := json.Unmarshal([]byte(content), &f); err != nil {
		t.Fatal(err)
	}
	out := admin(t, env, "pricing", "publish", "--file", writeFile(t, "pricing.json", content))
	if len(out) != 1 || out["pricing_version"] != f.PricingVersion {
		t.Fatalf("pricing publish: %v", out)
	}
}

// credit credits org's wallet with svc admin and returns the balance it reports.
func credit(t *testing.T, env map[string]string, org string, credits int64) int64 {
	t.Helper()
	out := admin(t, env, "wallet", "credit", "--org", org, "--credits", fmt.Sprint(credits))
	if out["org_id"] != org {
		t.Fatalf("wallet credit: %v", out)
	}
	return int64(out["balance"].(float64))
}

// adminFails runs `svc admin --json args...`, which must fail with one line on stderr containing want;
// it returns stdout.
func adminFails(t *testing.T, env map[string]string, want string, args ...string) string {
	t.Helper()
	code, stdout, stderr := runMain(t, env, append([]string{"admin", "--json"}, args...)...)
	if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "svc: ") || !strings.Contains(stderr, want) {
		t.Fatalf("svc admin %s: exit %d, stdout %q, stderr %q (want a non-zero exit and one line with %q)",
			strings.Join(args, " "), code, stdout, stderr, want)
	}
	return stdout
}

// audit runs `svc admin wallet audit --json` and returns the organisations checked and the
// discrepancies; it must exit 0 exactly when there is none.
func audit(t *testing.T, env map[string]string, args ...string) (checked int, discrepancies []map[string]any) {
	t.Helper()
	code, stdout, stderr := runMain(t, env, append([]string{"admin", "--json", "wallet", "audit"}, args...)...)
	var out struct {
		Checked       *int             `json:"organisations_checked"`
		Discrepancies []map[string]any `json:"discrepancies"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || out.Checked == nil || out.Discrepancies == nil || strings.Count(stdout, "\n") != 1 {
		t.Fatalf("wallet audit: exit %d, stdout %q (%v), stderr %q", code, stdout, err, stderr)
	}
	if (code == 0) != (len(out.Discrepancies) == 0) {
		t.Fatalf("wallet audit: exit %d with %d discrepancies: %s %s", code, len(out.Discrepancies), stdout, stderr)
	}
	if code != 0 && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
		t.Fatalf("wallet audit: stderr is not one line: %q", stderr)
	}
	return *out.Checked, out.Discrepancies
}

// auditClean checks that the audit finds no discrepancy.
func auditClean(t *testing.T, env map[string]string) {
	t.Helper()
	if checked, found := audit(t, env); len(found) != 0 || checked < 1 {
		t.Fatalf("wallet audit: %d checked, discrepancies %v", checked, found)
	}
}

// openDB opens the service's database beside it, closed when t ends.
func openDB(t *testing.T, url string) *gorm.DB {
	t.Helper()
	db, err := database.Open(url, database.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if sqlDB, err := db.DB(); err == nil {
			_ = sqlDB.Close()
		}
	})
	return db
}

// balanceOf reads org's balance straight from the database (-1 without a wallet).
func balanceOf(t *testing.T, db *gorm.DB, org string) int64 {
	t.Helper()
	var balances []int64
	if err := db.Raw("SELECT balance FROM billing_wallets WHERE org_id = ?", org).Scan(&balances).Error; err != nil {
		t.Fatal(err)
	}
	if len(balances) == 0 {
		return -1
	}
	return balances[0]
}

// countRows counts the rows of table matching where.
func countRows(t *testing.T, db *gorm.DB, table, where string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.Table(table).Where(where, args...).Count(&n).Error; err != nil {
		t.Fatal(err)
	}
	return n
}

// meteredTable is the table of the stand-in forum module's writes.
const meteredTable = "metered_notes"

// meteredDB creates the stand-in module's table in the database of cfg and returns a connection to it.
func meteredDB(t *testing.T, cfg Config) *gorm.DB {
	t.Helper()
	db := openDB(t, cfg.DatabaseURL)
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS ` + meteredTable + ` (
  id VARCHAR(36) PRIMARY KEY,
  agent_id VARCHAR(36) NOT NULL,
  note VARCHAR(200) NOT NULL
)`).Error; err != nil {
		t.Fatal(err)
	}
	return db
}

// meteredPath is the stand-in module's metered write under plugin.AgentPrefix.
const meteredPath = "/test/metered"

// meteredOption contributes a metered write on the agent plane, the way a forum module does: it
// plans a row and the charge of create_reply as one write (database.Write). X-Test-Fail makes it
// fail after the charge (nothing may commit); X-Test-Crash makes it panic after the commit, before it
// answers (scenario 25: the response is stored, the client never saw it).
func meteredOption() fx.Option {
	return fx.Provide(plugin.AsRoutes(func(db *gorm.DB, m port.Meter) plugin.Routes {
		handle := func(c *gin.Context) {
			var in struct {
				Note    string       `json:"note"`
				Billing port.Billing `json:"billing"`
			}
			dec := json.NewDecoder(c.Request.Body)
			dec.DisallowUnknownFields()
			if err := dec.Decode(&in); err != nil {
				render.Problem(c, problem.Newf(problem.ValidationFailed, "bad body: %v", err))
				return
			}
			ctx := c.Request.Context()
			p, ok := port.PrincipalFrom(ctx)
			if !ok {
				render.Error(c, errors.New("no principal"))
				return
			}
			status, body, err := database.Write(ctx, db, func(plan *write.Plan) (int, any, error) {
				id := uuid.Must(uuid.NewV7()).String()
				plan.Exec(1, nil, "INSERT INTO "+meteredTable+" (id, agent_id, note) VALUES (?, ?, ?)", id, p.AgentID, in.Note)
				receipt, err := m.Plan(ctx, plan, p, port.Charge{Operation: port.OpCreateReply, Billing: in.Billing,
					ResourceID: id, IdempotencyKey: c.GetHeader("Idempotency-Key")})
				if err != nil {
					return 0, nil, err
				}
				if c.GetHeader("X-Test-Fail") != "" {
					plan.Refuse(errors.New("injected failure after the charge"))
				}
				return http.StatusCreated, map[string]any{"id": id, "price": receipt.Price, "balance": receipt.Balance,
					"pricing_version": receipt.PricingVersion}, nil
			})
			if err != nil {
				render.Error(c, err)
				return
			}
			if c.GetHeader("X-Test-Crash") != "" {
				panic("injected crash after the commit")
			}
			render.Raw(c, status, body)
		}
		return plugin.Routes{Module: "metered", Plane: plugin.Agent, Agent: []plugin.AgentRoute{
			{Method: http.MethodPost, Path: meteredPath, Write: true, Planned: true, Handlers: []gin.HandlerFunc{handle}},
		}}
	}))
}

// meteredBody is a metered request's body.
func meteredBody(note, version string, maxCost int64) string {
	return fmt.Sprintf(`{"note":%q,"billing":{"pricing_version":%q,"max_credit_cost":%d}}`, note, version, maxCost)
}

// signedPost builds and signs a metered write of id to base (an agent listener's URL).
func signedPost(t *testing.T, id identity, base, key, body string, header map[string]string) *http.Request {
	t.Helper()
	req, err := newSignedPost(id, base, key, body, header)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func newSignedPost(id identity, base, key, body string, header map[string]string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, base+plugin.AgentPrefix+meteredPath, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	return req, id.signer.Sign(req)
}

// signedGet sends a signed GET of path (under plugin.AgentPrefix) as id.
func signedGet(t *testing.T, id identity, base, path string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+plugin.AgentPrefix+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := id.signer.Sign(req); err != nil {
		t.Fatal(err)
	}
	return send(t, req)
}

// resend sends the exact bytes of an earlier request again (same headers, same nonce).
func resend(t *testing.T, req *http.Request, body string) response {
	t.Helper()
	again, err := http.NewRequest(req.Method, req.URL.String(), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	again.Header = req.Header.Clone()
	return send(t, again)
}

// created checks a 201 of the metered write, not a replay, and decodes it.
func created(t *testing.T, res response) (id string, price, balance int64) {
	t.Helper()
	if res.status != http.StatusCreated {
		t.Fatalf("status %d, want 201: %s", res.status, res.body)
	}
	if res.header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a first execution is marked replayed: %s", res.body)
	}
	var out struct {
		ID      string `json:"id"`
		Price   int64  `json:"price"`
		Balance int64  `json:"balance"`
	}
	if err := json.Unmarshal(res.body, &out); err != nil || out.ID == "" {
		t.Fatalf("201 body %s: %v", res.body, err)
	}
	return out.ID, out.Price, out.Balance
}

// validatePublished validates body against the published schema name (which must exist).
func validatePublished(t *testing.T, name string, body []byte) {
	t.Helper()
	if err := schema.Published().Validate(name, body); err != nil {
		t.Fatalf("body does not match %s: %v\n%s", name, err, body)
	}
}

// agentIn registers one more agent of org, with its key, through the operator's commands.
func agentIn(t *testing.T, env map[string]string, org, handle string) identity {
	t.Helper()
	seed := sha256.Sum256([]byte("host test key " + handle))
	key := ed25519.NewKeyFromSeed(seed[:])
	agent := admin(t, env, "agent", "create", "--org", org, "--handle", handle)["agent_id"].(string)
	keyID := admin(t, env, "key", "add", "--agent", agent, "--public-key", base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey)))["key_id"].(string)
	return identity{orgID: org, agentID: agent, keyID: keyID, key: key, signer: signer.New(agent, keyID, key)}
}

// The operator publishes and lists pricing versions and credits, debits and audits wallets with svc
// admin; every failure is a non-zero exit with one line, and the audit finds a planted discrepancy.
func TestBillingOperatorCommands(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}

		// Pricing.
		publish(t, env, wirePricing)
		if out := adminFails(t, env, "never reused", "pricing", "publish", "--file", writeFile(t, "again.json", wirePricing)); out != "" {
			t.Fatalf("a refused publication printed %q", out)
		}
		missing := strings.Replace(pricingJSON("2026-12", 30, 5), `"media_upload": 3`, `"media_upload_typo": 3`, 1)
		adminFails(t, env, "validation", "pricing", "publish", "--file", writeFile(t, "missing.json", missing))
		missing = strings.Replace(pricingJSON("2026-12", 30, 5), `, "media_upload": 3`, ``, 1)
		adminFails(t, env, "validation", "pricing", "publish", "--file", writeFile(t, "missing.json", missing))
		adminFails(t, env, "validation", "pricing", "publish", "--file", writeFile(t, "negative.json", pricingJSON("2026-12", 30, -1)))
		adminFails(t, env, "pricing file", "pricing", "publish", "--file", filepath.Join(t.TempDir(), "absent.json"))

		list := admin(t, env, "pricing", "list")
		versions, _ := list["versions"].([]any)
		if len(versions) != 1 {
			t.Fatalf("pricing list: %v", list)
		}
		v := versions[0].(map[string]any)
		prices, _ := v["prices"].(map[string]any)
		if v["pricing_version"] != "2026-11" || v["current"] != true || v["per_attachment"] != 1.0 || v["grace_period_days"] != 30.0 ||
			len(prices) != len(port.Operations) || prices["create_reply"] != 5.0 || prices["create_thread"] != 10.0 || v["accepted_until"] != nil {
			t.Fatalf("pricing list: %v", v)
		}
		publish(t, env, pricingJSON("2026-12", 0, 7))
		versions, _ = admin(t, env, "pricing", "list")["versions"].([]any)
		if len(versions) != 2 || versions[0].(map[string]any)["pricing_version"] != "2026-12" || versions[0].(map[string]any)["current"] != true ||
			versions[1].(map[string]any)["current"] != false || versions[1].(map[string]any)["accepted_until"] == nil {
			t.Fatalf("pricing list after a second publication: %v", versions)
		}

		// Wallets.
		org := admin(t, env, "org", "create", "--name", "Billed")["org_id"].(string)
		other := admin(t, env, "org", "create", "--name", "Other")["org_id"].(string)
		if b := credit(t, env, org, 10); b != 10 {
			t.Fatalf("first credit: balance %d", b)
		}
		out := admin(t, env, "wallet", "credit", "--org", org, "--credits", "5", "--reason", "welcome bonus")
		if len(out) != 2 || out["org_id"] != org || out["balance"] != 15.0 {
			t.Fatalf("wallet credit: %v", out)
		}
		adminFails(t, env, "not_found", "wallet", "credit", "--org", "0190b1c2-d3e4-7f56-8a9b-0c1d2e3f4a5b", "--credits", "5")
		adminFails(t, env, "validation_failed", "wallet", "credit", "--org", org, "--credits", "0")
		adminFails(t, env, "validation_failed", "wallet", "credit", "--org", org, "--credits", "-3")
		adminFails(t, env, "reason", "wallet", "debit", "--org", org, "--credits", "1")

		db := openDB(t, cfg.DatabaseURL)
		if out := adminFails(t, env, "insufficient_credits", "wallet", "debit", "--org", org, "--credits", "16", "--reason", "too much"); out != "" {
			t.Fatalf("a refused debit printed %q", out)
		}
		if b := balanceOf(t, db, org); b != 15 {
			t.Fatalf("balance after a refused debit: %d", b)
		}
		// A wallet that does not exist holds nothing to debit.
		adminFails(t, env, "insufficient_credits", "wallet", "debit", "--org", other, "--credits", "1", "--reason", "nothing there")
		out = admin(t, env, "wallet", "debit", "--org", org, "--credits", "15", "--reason", "refund")
		if out["org_id"] != org || out["balance"] != 0.0 {
			t.Fatalf("debit to exactly zero: %v", out)
		}
		if b := balanceOf(t, db, org); b != 0 {
			t.Fatalf("balance after debiting all of it: %d", b)
		}
		credit(t, env, org, 4)
		credit(t, env, other, 3)

		// Audit: clean, then with a planted discrepancy.
		if checked, found := audit(t, env); checked != 2 || len(found) != 0 {
			t.Fatalf("audit: %d checked, %v", checked, found)
		}
		if checked, found := audit(t, env, "--org", org); checked != 1 || len(found) != 0 {
			t.Fatalf("audit of one org: %d checked, %v", checked, found)
		}
		if err := db.Exec("UPDATE billing_wallets SET balance = balance + 1 WHERE org_id = ?", org).Error; err != nil {
			t.Fatal(err)
		}
		checked, found := audit(t, env)
		if checked != 2 || len(found) != 1 || found[0]["org_id"] != org || found[0]["balance"] != 5.0 || found[0]["ledger_balance"] != 4.0 {
			t.Fatalf("audit with a planted discrepancy: %d checked, %v", checked, found)
		}
		if _, found := audit(t, env, "--org", other); len(found) != 0 {
			t.Fatalf("audit of the untouched org: %v", found)
		}
	})
}

// GET /api/v1/pricing on the public read plane answers the current version and every accepted one; the
// agent listeners do not serve it.
func TestPricingOnThePublicReadPlane(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		r := start(t, cfg, allModules(t))

		get := func() map[string]any {
			t.Helper()
			res := do(t, "GET", r.url(ListenerPublic, "/api/v1/pricing"), nil)
			if res.status != 200 || res.header.Get("Content-Type") != "application/json" {
				t.Fatalf("GET /api/v1/pricing: %d %q %s", res.status, res.header.Get("Content-Type"), res.body)
			}
			validatePublished(t, "pricing-response", res.body)
			var out map[string]any
			if err := json.Unmarshal(res.body, &out); err != nil {
				t.Fatal(err)
			}
			if ops, _ := out["operations"].([]any); len(ops) != len(port.Operations) {
				t.Fatalf("operations: %v", out["operations"])
			}
			return out
		}

		// Before any publication: no current version, nothing accepted.
		if out := get(); out["current_pricing_version"] != nil || len(out["versions"].([]any)) != 0 {
			t.Fatalf("before publication: %v", out)
		}

		publish(t, env, wirePricing)
		out := get()
		versions := out["versions"].([]any)
		if out["current_pricing_version"] != "2026-11" || len(versions) != 1 {
			t.Fatalf("after publishing 2026-11: %v", out)
		}
		v := versions[0].(map[string]any)
		prices := v["prices"].(map[string]any)
		if v["pricing_version"] != "2026-11" || v["current"] != true || v["per_attachment"] != 1.0 || len(prices) != 8 ||
			prices["create_reply"] != 5.0 || prices["create_thread"] != 10.0 || prices["clear_vote"] != 0.0 || prices["media_upload"] != 3.0 {
			t.Fatalf("2026-11 as published: %v", v)
		}

		// A successor: both accepted, the superseded one in its 30-day grace period.
		publish(t, env, pricingJSON("2026-12", 0, 7))
		out = get()
		versions = out["versions"].([]any)
		if out["current_pricing_version"] != "2026-12" || len(versions) != 2 ||
			versions[0].(map[string]any)["pricing_version"] != "2026-12" || versions[0].(map[string]any)["current"] != true ||
			versions[1].(map[string]any)["pricing_version"] != "2026-11" || versions[1].(map[string]any)["current"] != false ||
			versions[1].(map[string]any)["accepted_until"] == nil {
			t.Fatalf("after publishing 2026-12: %v", out)
		}
		// 2026-12 has no grace period: once superseded it is no longer listed.
		publish(t, env, pricingJSON("2026-13", 30, 6))
		out = get()
		versions = out["versions"].([]any)
		if out["current_pricing_version"] != "2026-13" || len(versions) != 2 ||
			versions[0].(map[string]any)["pricing_version"] != "2026-13" || versions[1].(map[string]any)["pricing_version"] != "2026-11" {
			t.Fatalf("after publishing 2026-13: %v", out)
		}

		// Cacheable, and revalidated by its ETag until the next publication.
		res := do(t, "GET", r.url(ListenerPublic, "/api/v1/pricing"), nil)
		etag := res.header.Get("ETag")
		if etag == "" || res.header.Get("Cache-Control") == "" {
			t.Fatalf("no ETag or Cache-Control: %v", res.header)
		}
		if res := do(t, "GET", r.url(ListenerPublic, "/api/v1/pricing"), map[string]string{"If-None-Match": etag}); res.status != 304 || len(res.body) != 0 {
			t.Fatalf("If-None-Match with the current ETag: %d %s", res.status, res.body)
		}
		publish(t, env, pricingJSON("2026-14", 30, 6))
		if res := do(t, "GET", r.url(ListenerPublic, "/api/v1/pricing"), map[string]string{"If-None-Match": etag}); res.status != 200 || res.header.Get("ETag") == etag {
			t.Fatalf("If-None-Match after a publication: %d, ETag %q", res.status, res.header.Get("ETag"))
		}

		// Not on the agent listeners.
		for _, l := range []string{ListenerAgentEdge, ListenerAgentPrivate} {
			checkProblem(t, do(t, "GET", r.url(l, "/api/v1/pricing"), nil), 404, "not_found")
		}
	})
}

// Signed GET /agent-api/v1/wallet and /agent-api/v1/usage answer the caller's own organisation's
// balance and the caller's own charges, newest first, paged.
func TestWalletAndUsageEndpoints(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		meteredDB(t, cfg)
		publish(t, env, wirePricing)
		alice := provision(t, env, "wallet-alice")
		bob := provision(t, env, "wallet-bob")
		r := start(t, cfg, allModules(t), meteredOption())
		edge := "http://" + r.listeners.Addr(ListenerAgentEdge)

		wallet := func(id identity) map[string]any {
			t.Helper()
			res := signedGet(t, id, edge, "/wallet")
			if res.status != 200 {
				t.Fatalf("GET /wallet: %d %s", res.status, res.body)
			}
			validatePublished(t, "wallet-response", res.body)
			var out map[string]any
			if err := json.Unmarshal(res.body, &out); err != nil {
				t.Fatal(err)
			}
			if out["org_id"] != id.orgID {
				t.Fatalf("wallet of another organisation: %v", out)
			}
			return out
		}
		type usage struct {
			Events []struct {
				ID             string `json:"id"`
				Operation      string `json:"operation"`
				Price          int64  `json:"price"`
				PricingVersion string `json:"pricing_version"`
				AgentID        string `json:"agent_id"`
				IdempotencyKey string `json:"idempotency_key"`
				ResourceID     string `json:"resource_id"`
				CreatedAt      string `json:"created_at"`
			} `json:"events"`
			NextCursor *string `json:"next_cursor"`
		}
		usageOf := func(id identity, query string) usage {
			t.Helper()
			res := signedGet(t, id, edge, "/usage"+query)
			if res.status != 200 {
				t.Fatalf("GET /usage%s: %d %s", query, res.status, res.body)
			}
			validatePublished(t, "usage-response", res.body)
			var out usage
			if err := json.Unmarshal(res.body, &out); err != nil || out.Events == nil {
				t.Fatalf("usage %s: %v", res.body, err)
			}
			return out
		}

		// No wallet yet: 0 credits, never touched.
		if w := wallet(alice); w["balance"] != 0.0 || w["updated_at"] != nil {
			t.Fatalf("wallet before any credit: %v", w)
		}
		if u := usageOf(alice, ""); len(u.Events) != 0 || u.NextCursor != nil {
			t.Fatalf("usage before any charge: %+v", u)
		}

		credit(t, env, alice.orgID, 100)
		credit(t, env, bob.orgID, 7)
		var aliceRows []string
		for i, key := range []string{"alice-1", "alice-2", "alice-3"} {
			id, _, balance := created(t, send(t, signedPost(t, alice, edge, key, meteredBody(key, "2026-11", 5), nil)))
			if balance != 100-5*int64(i+1) {
				t.Fatalf("%s: balance %d", key, balance)
			}
			aliceRows = append(aliceRows, id)
		}
		bobRow, _, _ := created(t, send(t, signedPost(t, bob, edge, "bob-1", meteredBody("bob", "2026-11", 5), nil)))

		if w := wallet(alice); w["balance"] != 85.0 || w["updated_at"] == nil {
			t.Fatalf("alice's wallet: %v", w)
		}
		if w := wallet(bob); w["balance"] != 2.0 {
			t.Fatalf("bob's wallet: %v", w)
		}

		u := usageOf(alice, "")
		if len(u.Events) != 3 || u.NextCursor != nil {
			t.Fatalf("alice's usage: %+v", u)
		}
		for i, e := range u.Events {
			n := 2 - i // newest first
			if e.Operation != port.OpCreateReply || e.Price != 5 || e.PricingVersion != "2026-11" || e.AgentID != alice.agentID ||
				e.IdempotencyKey != fmt.Sprintf("alice-%d", n+1) || e.ResourceID != aliceRows[n] || e.CreatedAt == "" {
				t.Fatalf("alice's event %d: %+v", i, e)
			}
		}
		if ub := usageOf(bob, ""); len(ub.Events) != 1 || ub.Events[0].AgentID != bob.agentID || ub.Events[0].ResourceID != bobRow {
			t.Fatalf("bob's usage: %+v", ub)
		}

		// Paging.
		page := usageOf(alice, "?limit=2")
		if len(page.Events) != 2 || page.NextCursor == nil || page.Events[0].ResourceID != aliceRows[2] {
			t.Fatalf("first page: %+v", page)
		}
		rest := usageOf(alice, "?limit=2&cursor="+*page.NextCursor)
		if len(rest.Events) != 1 || rest.NextCursor != nil || rest.Events[0].ResourceID != aliceRows[0] {
			t.Fatalf("second page: %+v", rest)
		}
		// A cursor is sealed to the agent it was issued to: alice's opens nothing of bob's.
		checkProblem(t, signedGet(t, bob, edge, "/usage?cursor="+*page.NextCursor), 400, "invalid_cursor")
		checkProblem(t, signedGet(t, alice, edge, "/usage?limit=0"), 400, "bad_request")
		checkProblem(t, signedGet(t, alice, edge, "/usage?limit=101"), 400, "bad_request")
		checkProblem(t, signedGet(t, alice, edge, "/usage?cursor=not-issued"), 400, "invalid_cursor")

		// Unsigned, or with an Idempotency-Key: refused.
		for _, path := range []string{"/wallet", "/usage"} {
			checkProblem(t, do(t, "GET", edge+plugin.AgentPrefix+path, nil), 400, "malformed_signature_headers")
			req, err := http.NewRequest(http.MethodGet, edge+plugin.AgentPrefix+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := alice.signer.Sign(req); err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Idempotency-Key", "not-on-a-get")
			checkProblem(t, send(t, req), 400, "malformed_signature_headers")
		}
	})
}

// Metered writes through the whole stack (reliability.md section 8, scenarios 9 and 18-25): the guard,
// the idempotency claim, the planned write (database.Write) and the meter charge each write exactly once, atomically with it,
// never above the declared cap and never below zero.
func TestMeteredWritesThroughTheFullStack(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, dialect string) {
		cfg := testConfig(t, dialect)
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		db := meteredDB(t, cfg)
		publish(t, env, wirePricing)
		id := provision(t, env, "metered-writer")
		credit(t, env, id.orgID, 10)
		r := start(t, cfg, allModules(t), meteredOption())
		edge := "http://" + r.listeners.Addr(ListenerAgentEdge)
		private := "http://" + r.listeners.Addr(ListenerAgentPrivate)

		// state checks the balance, the written rows and the charges recorded.
		state := func(step string, balance, rows, charges int64) {
			t.Helper()
			if b := balanceOf(t, db, id.orgID); b != balance {
				t.Fatalf("%s: balance %d, want %d", step, b, balance)
			}
			if n := countRows(t, db, meteredTable, "agent_id = ?", id.agentID); n != rows {
				t.Fatalf("%s: %d rows written, want %d", step, n, rows)
			}
			if n := countRows(t, db, "billing_usage_events", "org_id = ?", id.orgID); n != charges {
				t.Fatalf("%s: %d usage events, want %d", step, n, charges)
			}
			if n := countRows(t, db, "billing_ledger", "org_id = ? AND kind = ?", id.orgID, "charge"); n != charges {
				t.Fatalf("%s: %d ledger charges, want %d", step, n, charges)
			}
		}
		post := func(base, key, body string, header map[string]string) (*http.Request, response) {
			t.Helper()
			req := signedPost(t, id, base, key, body, header)
			return req, send(t, req)
		}
		okBody := func(note string) string { return meteredBody(note, "2026-11", 5) }

		// Scenario 18: a write, then the same key and body re-signed: the stored 201, charged once.
		_, first := post(edge, "k1", okBody("one"), nil)
		if _, price, balance := created(t, first); price != 5 || balance != 5 {
			t.Fatalf("first write: price %d, balance %d", price, balance)
		}
		state("first write", 5, 1, 1)
		for _, base := range []string{edge, private} {
			_, again := post(base, "k1", okBody("one"), nil)
			if again.status != 201 || again.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.body, first.body) {
				t.Fatalf("replay: %d %q %s (first %s)", again.status, again.header.Get("Idempotent-Replayed"), again.body, first.body)
			}
		}
		state("replays", 5, 1, 1)

		// Scenario 19: the same key with another body: 409, nothing charged.
		_, res := post(edge, "k1", okBody("another"), nil)
		checkProblem(t, res, 409, "idempotency_key_conflict")
		state("key conflict", 5, 1, 1)

		// Scenario 22: a balance equal to the price ends at exactly 0; then the next write is refused.
		_, res = post(edge, "k2", okBody("two"), nil)
		if _, _, balance := created(t, res); balance != 0 {
			t.Fatalf("second write: balance %d", balance)
		}
		state("balance equal to the price", 0, 2, 2)
		broke, res := post(edge, "k3", okBody("three"), nil)
		if p := checkProblem(t, res, 409, "insufficient_credits"); p["effective_price"] != 5.0 {
			t.Fatalf("insufficient_credits: %v", p)
		}
		state("insufficient credits", 0, 2, 2)

		// Scenario 9: the refused request's exact bytes, replayed after a top-up, are not executed.
		credit(t, env, id.orgID, 4) // one below the price: still refused
		_, res = post(edge, "k3", okBody("three"), nil)
		checkProblem(t, res, 409, "insufficient_credits")
		state("balance one below the price", 4, 2, 2)
		credit(t, env, id.orgID, 6)
		checkProblem(t, resend(t, broke, okBody("three")), 409, "nonce_replayed")
		state("replayed bytes after a top-up", 10, 2, 2)

		// Scenario 23: a cap one below the price: refused, nothing charged, and the key stays free
		// for the corrected retry.
		_, res = post(edge, "k4", meteredBody("four", "2026-11", 4), nil)
		if p := checkProblem(t, res, 409, "price_exceeds_cap"); p["effective_price"] != 5.0 {
			t.Fatalf("price_exceeds_cap: %v", p)
		}
		state("cap below the price", 10, 2, 2)
		_, res = post(edge, "k4", meteredBody("four", "2026-11", 5), nil)
		if _, price, balance := created(t, res); price != 5 || balance != 5 {
			t.Fatalf("corrected cap: price %d, balance %d", price, balance)
		}
		state("corrected cap", 5, 3, 3)

		// An unknown pricing version: refused, naming the current one.
		_, res = post(edge, "k5", meteredBody("five", "1999-01", 100), nil)
		if p := checkProblem(t, res, 409, "pricing_version_not_accepted"); p["current_pricing_version"] != "2026-11" {
			t.Fatalf("pricing_version_not_accepted: %v", p)
		}
		state("unknown pricing version", 5, 3, 3)

		// Scenario 24: a failure after the charge commits nothing; the retry with the key runs once.
		_, res = post(edge, "k6", okBody("six"), map[string]string{"X-Test-Fail": "1"})
		checkProblem(t, res, 500, "internal_error")
		state("failure after the charge", 5, 3, 3)
		_, six := post(edge, "k6", okBody("six"), nil)
		if _, _, balance := created(t, six); balance != 0 {
			t.Fatalf("retry after a failure: balance %d", balance)
		}
		_, res = post(edge, "k6", okBody("six"), nil)
		if res.status != 201 || res.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(res.body, six.body) {
			t.Fatalf("replay after the retry: %d %s", res.status, res.body)
		}
		state("retry after a failure", 0, 4, 4)

		// Scenario 25: the process fails after the commit, before it answers: the retry gets the
		// stored response, with no second debit.
		credit(t, env, id.orgID, 10)
		_, res = post(edge, "k7", okBody("seven"), map[string]string{"X-Test-Crash": "1"})
		checkProblem(t, res, 500, "internal_error")
		state("crash after the commit", 5, 5, 5)
		_, res = post(edge, "k7", okBody("seven"), nil)
		if res.status != 201 || res.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("retry after a crash after the commit: %d %s", res.status, res.body)
		}
		state("retry after the crash", 5, 5, 5)

		// A superseded version inside its grace period is charged at its own prices; one past it (no
		// grace period) is refused.
		publish(t, env, pricingJSON("2026-12", 0, 2))
		publish(t, env, pricingJSON("2026-13", 0, 3))
		_, res = post(edge, "k8", meteredBody("eight", "2026-12", 100), nil)
		if p := checkProblem(t, res, 409, "pricing_version_not_accepted"); p["current_pricing_version"] != "2026-13" {
			t.Fatalf("expired version: %v", p)
		}
		state("expired pricing version", 5, 5, 5)
		_, res = post(edge, "k9", meteredBody("nine", "2026-13", 3), nil)
		if _, price, balance := created(t, res); price != 3 || balance != 2 {
			t.Fatalf("current version: price %d, balance %d", price, balance)
		}
		credit(t, env, id.orgID, 3)
		_, res = post(edge, "k10", meteredBody("ten", "2026-11", 5), nil)
		if _, price, balance := created(t, res); price != 5 || balance != 0 {
			t.Fatalf("version in its grace period: price %d, balance %d", price, balance)
		}
		state("pricing versions", 0, 7, 7)

		// Frozen writes are refused before anything is charged; the wallet stays readable.
		credit(t, env, id.orgID, 5)
		admin(t, env, "writes", "freeze", "--org", id.orgID)
		_, res = post(edge, "k11", okBody("eleven"), nil)
		checkProblem(t, res, 403, "writes_frozen")
		if w := signedGet(t, id, edge, "/wallet"); w.status != 200 || !strings.Contains(string(w.body), `"balance":5`) {
			t.Fatalf("wallet while writes are frozen: %d %s", w.status, w.body)
		}
		state("frozen writes", 5, 7, 7)
		admin(t, env, "writes", "unfreeze", "--org", id.orgID)
		_, res = post(edge, "k11", okBody("eleven"), nil)
		if _, _, balance := created(t, res); balance != 0 {
			t.Fatalf("after unfreezing: balance %d", balance)
		}
		state("unfrozen", 0, 8, 8)

		// The usage the agent reads agrees, and the audit finds nothing.
		u := signedGet(t, id, edge, "/usage?limit=100")
		var page struct {
			Events []struct {
				Price          int64  `json:"price"`
				PricingVersion string `json:"pricing_version"`
			} `json:"events"`
		}
		validatePublished(t, "usage-response", u.body)
		if err := json.Unmarshal(u.body, &page); err != nil || u.status != 200 || len(page.Events) != 8 ||
			page.Events[1].PricingVersion != "2026-11" || page.Events[2].PricingVersion != "2026-13" || page.Events[2].Price != 3 {
			t.Fatalf("usage: %d %s", u.status, u.body)
		}
		auditClean(t, env)
	})
}

// sendErr sends req from a goroutine: no t.Fatal.
func sendErr(req *http.Request) (response, error) {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	return response{res.StatusCode, res.Header, body}, nil
}

// problemCode returns the code of a problem body ("" when it is none).
func problemCode(body []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(body, &p)
	return p.Code
}

// Concurrent metered writes on PostgreSQL (scenarios 20 and 21): 20 agents of one organisation race
// for a 10-credit wallet at 1 credit a write, and 30 requests with one Idempotency-Key race across
// two replicas.
func TestMeteredConcurrencyOnPostgres(t *testing.T) {
	t.Run("one wallet, twenty writers", func(t *testing.T) {
		cfg := testConfig(t, "postgres")
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		db := meteredDB(t, cfg)
		publish(t, env, pricingJSON("cost-1", 30, 1))
		first := provision(t, env, "racer-0")
		agents := []identity{first}
		for i := 1; i < 20; i++ {
			agents = append(agents, agentIn(t, env, first.orgID, fmt.Sprintf("racer-%d", i)))
		}
		credit(t, env, first.orgID, 10)
		r := start(t, cfg, allModules(t), meteredOption())
		edge := "http://" + r.listeners.Addr(ListenerAgentEdge)

		results := make([]response, len(agents))
		errs := make([]error, len(agents))
		begin := make(chan struct{})
		var wg sync.WaitGroup
		for i, a := range agents {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := newSignedPost(a, edge, fmt.Sprintf("race-%d", i), meteredBody("race", "cost-1", 1), nil)
				if err != nil {
					errs[i] = err
					return
				}
				<-begin
				results[i], errs[i] = sendErr(req)
			}()
		}
		close(begin)
		wg.Wait()
		var ok, refused int
		for i, res := range results {
			switch {
			case errs[i] != nil:
				t.Fatalf("writer %d: %v", i, errs[i])
			case res.status == 201:
				ok++
			case res.status == 409 && problemCode(res.body) == "insufficient_credits":
				refused++
			default:
				t.Errorf("writer %d: %d %s", i, res.status, res.body)
			}
		}
		if ok != 10 || refused != 10 {
			t.Fatalf("%d succeeded and %d were refused, want 10 and 10", ok, refused)
		}
		if b := balanceOf(t, db, first.orgID); b != 0 {
			t.Fatalf("balance %d, want 0", b)
		}
		if n := countRows(t, db, meteredTable, "1 = 1"); n != 10 {
			t.Fatalf("%d rows written, want 10", n)
		}
		if n := countRows(t, db, "billing_usage_events", "org_id = ?", first.orgID); n != 10 {
			t.Fatalf("%d usage events, want 10", n)
		}
		auditClean(t, env)
	})

	t.Run("one key, two replicas", func(t *testing.T) {
		cfg := testConfig(t, "postgres")
		env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
		db := meteredDB(t, cfg)
		publish(t, env, wirePricing)
		id := provision(t, env, "one-key")
		credit(t, env, id.orgID, 100)
		one := start(t, cfg, allModules(t), meteredOption())
		two := start(t, cfg, allModules(t), meteredOption())
		bases := []string{"http://" + one.listeners.Addr(ListenerAgentEdge), "http://" + two.listeners.Addr(ListenerAgentPrivate)}

		const n = 30
		body := meteredBody("only once", "2026-11", 5)
		results := make([]response, n)
		errs := make([]error, n)
		begin := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, err := newSignedPost(id, bases[i%2], "the-one-key", body, nil)
				if err != nil {
					errs[i] = err
					return
				}
				<-begin
				results[i], errs[i] = sendErr(req)
			}()
		}
		close(begin)
		wg.Wait()
		var executed, replayed, inFlight int
		var firstBody []byte
		for i, res := range results {
			switch {
			case errs[i] != nil:
				t.Fatalf("request %d: %v", i, errs[i])
			case res.status == 201 && res.header.Get("Idempotent-Replayed") == "":
				executed++
				firstBody = res.body
			case res.status == 201 && res.header.Get("Idempotent-Replayed") == "true":
				replayed++
			case res.status == 409 && problemCode(res.body) == "idempotency_request_in_flight":
				if res.header.Get("Retry-After") != "1" {
					t.Errorf("request %d: in flight without Retry-After: 1", i)
				}
				inFlight++
			default:
				t.Errorf("request %d: %d %s", i, res.status, res.body)
			}
		}
		t.Logf("%d executed, %d replayed, %d in flight", executed, replayed, inFlight)
		if executed != 1 || executed+replayed+inFlight != n {
			t.Fatalf("%d executed, %d replayed, %d in flight", executed, replayed, inFlight)
		}
		for i, res := range results {
			if res.header.Get("Idempotent-Replayed") == "true" && !bytes.Equal(res.body, firstBody) {
				t.Fatalf("request %d replayed %s, not %s", i, res.body, firstBody)
			}
		}
		if b := balanceOf(t, db, id.orgID); b != 95 {
			t.Fatalf("balance %d, want 95", b)
		}
		if c := countRows(t, db, meteredTable, "1 = 1"); c != 1 {
			t.Fatalf("%d rows written, want 1", c)
		}
		if c := countRows(t, db, "billing_usage_events", "idempotency_key = ?", "the-one-key"); c != 1 {
			t.Fatalf("%d usage events, want 1", c)
		}
		if c := countRows(t, db, "billing_ledger", "kind = ?", "charge"); c != 1 {
			t.Fatalf("%d ledger charges, want 1", c)
		}
		// The key's stored response is what a late retry gets, on either replica.
		for _, base := range bases {
			res := send(t, signedPost(t, id, base, "the-one-key", body, nil))
			if res.status != 201 || res.header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(res.body, firstBody) {
				t.Fatalf("late retry: %d %s", res.status, res.body)
			}
		}
		auditClean(t, env)
	})
}

// Operators publishing at the same moment on PostgreSQL leave exactly one current pricing version, the
// newest: every publication supersedes the one it replaced, and none fails. The publications run
// through the assembled application's *billing.Pricing, the service `svc admin pricing publish` calls
// (a process per command starts too slowly to overlap the transactions reliably).
func TestPricingConcurrentPublicationsOnPostgres(t *testing.T) {
	cfg := testConfig(t, "postgres")
	env := map[string]string{"SVC_DATABASE_URL": cfg.DatabaseURL}
	publish(t, env, wirePricing)
	var pricing *billing.Pricing
	r := start(t, cfg, allModules(t), fx.Populate(&pricing))

	const rounds, n = 3, 8
	for round := range rounds {
		errs := make([]error, n)
		begin := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-begin
				_, errs[i] = pricing.Publish(t.Context(), []byte(pricingJSON(fmt.Sprintf("race-%d-%d", round, i), 30, 5)))
			}()
		}
		close(begin)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: publication %d failed: %v", round, i, err)
			}
		}
		versions, _ := admin(t, env, "pricing", "list")["versions"].([]any)
		var current []string
		for _, v := range versions {
			if v := v.(map[string]any); v["current"] == true {
				current = append(current, v["pricing_version"].(string))
			}
		}
		newest := versions[0].(map[string]any)["pricing_version"]
		if len(current) != 1 || current[0] != newest {
			t.Fatalf("round %d: %d versions, %d current %v; the newest is %v", round, len(versions), len(current), current, newest)
		}
		res := do(t, "GET", r.url(ListenerPublic, "/api/v1/pricing"), nil)
		var body struct {
			Current string `json:"current_pricing_version"`
		}
		if err := json.Unmarshal(res.body, &body); err != nil || body.Current != newest {
			t.Fatalf("round %d: GET /api/v1/pricing names %q as current, not the newest %v", round, body.Current, newest)
		}
	}
}
