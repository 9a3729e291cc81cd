package host

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/svcforum/svc/database"
	"github.com/svcforum/svc/database/dbtest"
)

// /health/ready turns 503, naming the database, once PostgreSQL refuses connections, and 200 again
// when it accepts them, without a restart.
func TestReadinessFollowsTheDatabase(t *testing.T) {
	cfg := testConfig(t, database.Postgres)
	r := start(t, cfg, allModules(t))
	ready := r.url(ListenerPublic, "/health/ready")
	if res := do(t, "GET", ready, nil); res.status != 200 {
		t.Fatalf("ready before: %d %s", res.status, res.body)
	}

	u, err := url.Parse(cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.TrimPrefix(u.Path, "/")
	admin, err := sql.Open("pgx", dbtest.AdminURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	exec := func(q string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The database goes away: no new connections, and the pool's are cut.
	exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS false")
	exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + name + "' AND pid <> pg_backend_pid()")
	t.Cleanup(func() { exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS true") })

	res := do(t, "GET", ready, nil)
	p := checkProblem(t, res, 503, "not_ready")
	checks, _ := p["checks"].([]any)
	found := false
	for _, c := range checks {
		m, _ := c.(map[string]any)
		if m["name"] == "database" && m["status"] == "failing" {
			found = true
		}
	}
	if !found || !strings.Contains(p["detail"].(string), "database") {
		t.Fatalf("503 does not name the database: %s", res.body)
	}
	if strings.Contains(string(res.body), "svc:svc") || strings.Contains(string(res.body), u.Host) {
		t.Fatalf("503 leaks connection details: %s", res.body)
	}
	// Liveness never touches the database.
	if res := do(t, "GET", r.url(ListenerPublic, "/health/live"), nil); res.status != 200 {
		t.Fatalf("live while the database is away: %d", res.status)
	}

	exec("ALTER DATABASE " + name + " ALLOW_CONNECTIONS true")
	if res := do(t, "GET", ready, nil); res.status != 200 {
		t.Fatalf("ready after the database returned: %d %s", res.status, res.body)
	}
}

// A check that hangs is cut off by the ready timeout and reported as timed out. The timeout leaves the
// database's check room to answer on a busy machine under the race detector (50 ms did not).
func TestReadinessTimesOut(t *testing.T) {
	cfg := testConfig(t, database.SQLite)
	cfg.ReadyTimeout = time.Second
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	hang := readinessOption("hang", func(ctx context.Context) error { <-block; return nil })
	r := start(t, cfg, allModules(t), hang)
	res := do(t, "GET", r.url(ListenerPublic, "/health/ready"), nil)
	checkProblem(t, res, 503, "not_ready")
	if !strings.Contains(string(res.body), `"name":"hang","status":"failing","error":"check timed out after 1s"`) ||
		!strings.Contains(string(res.body), `"name":"database","status":"ok"`) {
		t.Fatalf("body %s", res.body)
	}
}

// /health/ready turns 503, naming the database, while another process holds SQLite's write lock (the
// service could read, but no signed request could record its nonce), and 200 once it lets go.
// (Before issue 30 it answered 200 throughout.)
func TestReadinessNeedsTheWriteLock(t *testing.T) {
	cfg := testConfig(t, database.SQLite)
	r := start(t, cfg, allModules(t))
	ready := r.url(ListenerPublic, "/health/ready")
	if res := do(t, "GET", ready, nil); res.status != 200 {
		t.Fatalf("ready before: %d %s", res.status, res.body)
	}
	// Another process's connection: outside this process's write queue, as sqlite3 or a second svc
	// would be.
	other, err := sql.Open("sqlite", strings.TrimPrefix(cfg.DatabaseURL, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	ctx := context.Background()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	// A write this process committed within the last second still counts as proof (start-up's
	// migrations): the probe asks the database once that has passed.
	res := do(t, "GET", ready, nil)
	for end := time.Now().Add(15 * time.Second); res.status == 200 && time.Now().Before(end); {
		time.Sleep(200 * time.Millisecond)
		res = do(t, "GET", ready, nil)
	}
	p := checkProblem(t, res, 503, "not_ready")
	if !strings.Contains(p["detail"].(string), "database") {
		t.Fatalf("503 does not name the database: %s", res.body)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if res := do(t, "GET", ready, nil); res.status != 200 {
		t.Fatalf("ready once the lock is free: %d %s", res.status, res.body)
	}
}
